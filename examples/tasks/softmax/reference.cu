// softmax reference (CUDA ground truth): one block of 256 threads per row.
// Pass 1: row maximum (shared-memory tree). Pass 2: sum of exp(x - max) in
// double. Pass 3: y = exp(x - max) / sum, computed in double.
#include <cuda_runtime.h>
#include <math.h>

#define REF_THREADS 256

static __global__ void softmax_ref_kernel(const float *x, float *y, int rows, int cols) {
  __shared__ double part[REF_THREADS];
  int r = blockIdx.x, t = threadIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  float *yr = y + (size_t)r * (size_t)cols;

  double m = -INFINITY;
  for (int c = t; c < cols; c += REF_THREADS)
    m = fmax(m, (double)xr[c]);
  part[t] = m;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (t < w)
      part[t] = fmax(part[t], part[t + w]);
    __syncthreads();
  }
  m = part[0];
  __syncthreads();

  double s = 0.0;
  for (int c = t; c < cols; c += REF_THREADS)
    s += exp((double)xr[c] - m);
  part[t] = s;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (t < w)
      part[t] += part[t + w];
    __syncthreads();
  }
  s = part[0];

  for (int c = t; c < cols; c += REF_THREADS)
    yr[c] = (float)(exp((double)xr[c] - m) / s);
}

extern "C" void softmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
  softmax_ref_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
