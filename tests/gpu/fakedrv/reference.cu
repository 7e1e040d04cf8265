// The fake-driver task's reference, kernel-only (tests/gpu/fakecuda.c runs
// kfake_rowsum on the host).
// kevo:launch kfake_rowsum grid=((rows + 127) / 128) block=(128) args=(x, y, rows, cols)
__global__ void kfake_rowsum(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
