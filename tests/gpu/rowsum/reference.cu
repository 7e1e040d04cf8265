// rowsum reference (CUDA ground truth): one block of 256 threads per row.
// Each thread accumulates a strided slice of the row in double, then a
// shared-memory tree reduction (in double) gives the row sum.
#include <cuda_runtime.h>

#define REF_THREADS 256

static __global__ void rowsum_ref_kernel(const float *x, float *y, int rows, int cols) {
  __shared__ double part[REF_THREADS];
  int r = blockIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += REF_THREADS)
    s += (double)xr[c];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[r] = (float)part[0];
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowsum_ref_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
