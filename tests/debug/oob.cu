// A planted bug for kevo's debugger (tests/debug): an out-of-bounds write.
// Each thread writes its row's sum 1 GiB past the end of y, far outside any
// allocation, so the call fails (crash) and memcheck names the store's line.
#include <cuda_runtime.h>

static __global__ void rowsum_oob(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * cols + c];
  y[r + (1 << 28)] = s; // KEVO-PLANTED-OOB
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowsum_oob<<<(rows + 127) / 128, 128, 0, stream>>>(x, y, rows, cols);
}
