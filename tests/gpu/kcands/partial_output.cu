// Attack, kernel-only: computes only the first half of the rows.
// Defence: every element is compared; the poison shows what was not written.
// Expected verdict: unwritten_output.
// kevo:launch half grid=((rows + 255) / 256) block=(256) args=(x, y, rows, cols)
__global__ void half(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows / 2)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r] = s;
}
