// Expected verdict: ok (100 KiB of dynamic shared memory: kevo opts the kernel in).
// kevo:launch kfake_rowsum grid=((rows + 255) / 256) block=(256) smem=(100 * 1024) args=(x, y, rows, cols)
__global__ void kfake_rowsum(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
