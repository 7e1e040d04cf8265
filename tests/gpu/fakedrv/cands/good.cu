// Expected verdict: ok (two launches in order: nothing, then the sums).
// kevo:launch kfake_nothing grid=(1) block=(32) args=(y)
// kevo:launch kfake_rowsum grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void kfake_nothing(float *y) {}
__global__ void kfake_rowsum(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
