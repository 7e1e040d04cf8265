// Kernel-only: correct sums, and printf from every thread (device printf is
// allowed, as in a host-entry candidate's kernels; its output is captured
// and capped at 64 KiB like any other).
// Expected verdict: ok.
// kevo:launch loud grid=(rows) block=(32) args=(x, y, cols)
__global__ void loud(const float *x, float *y, int cols) {
  const float *xr = x + (size_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32)
    s += xr[c];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  printf("row %d lane %d\n", blockIdx.x, threadIdx.x);
  if (threadIdx.x == 0)
    y[blockIdx.x] = s;
}
