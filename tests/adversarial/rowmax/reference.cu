// Reference for the timing-attack suite's rowmax task (CUDA ground truth): one
// thread per row, elements compared in order, exactly like reference.c.
#include <cuda_runtime.h>

static __global__ void rowmax_ref_kernel(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *row = x + (long)r * cols;
  float m = row[0];
  for (int c = 1; c < cols; c++)
    if (row[c] > m)
      m = row[c];
  y[r] = m;
}

extern "C" void rowmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowmax_ref_kernel<<<(rows + 127) / 128, 128, 0, stream>>>(x, y, rows, cols);
}
