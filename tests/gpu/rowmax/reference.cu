// rowmax reference (CUDA ground truth): one block of 256 threads per row,
// strided maxima then a shared-memory tree.
#include <cuda_runtime.h>

#define REF_THREADS 256

static __global__ void rowmax_ref_kernel(const float *x, float *y, int rows, int cols) {
  __shared__ float part[REF_THREADS];
  int r = blockIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += REF_THREADS)
    m = fmaxf(m, xr[c]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[r] = part[0];
}

extern "C" void rowmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowmax_ref_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
