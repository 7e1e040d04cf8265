// Attack, kernel-only: computes the right sums, then scribbles on its input.
// Defence: the parent regenerates the inputs and compares them after the call.
// Expected verdict: input_mutated.
// kevo:launch sum_and_scribble grid=(rows) block=(32) args=(x, y, cols)
__global__ void sum_and_scribble(const float *x, float *y, int cols) {
  const float *xr = x + (size_t)blockIdx.x * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32)
    s += xr[c];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  __syncthreads();
  if (threadIdx.x == 0) {
    y[blockIdx.x] = s;
    ((float *)xr)[0] = 0.0f;
  }
}
