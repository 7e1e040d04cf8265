// conv1d reference (CUDA ground truth): one thread per output (grid-stride
// loop), y[b][i] = sum_j x[b][i+j] * w[j] accumulated in double.
#include <cuda_runtime.h>

static __global__ void conv1d_ref_kernel(const float *x, const float *w, float *y, int batch,
                                         int n, int kw) {
  int nout = n - kw + 1;
  size_t total = (size_t)batch * (size_t)nout;
  for (size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (size_t)gridDim.x * blockDim.x) {
    size_t b = t / (size_t)nout, i = t % (size_t)nout;
    const float *xi = x + b * (size_t)n + i;
    double s = 0.0;
    for (int j = 0; j < kw; j++)
      s += (double)xi[j] * (double)w[j];
    y[t] = (float)s;
  }
}

extern "C" void conv1d(const float *x, const float *w, float *y, int batch, int n, int kw,
                       cudaStream_t stream) {
  int nout = n - kw + 1;
  if (batch <= 0 || nout <= 0)
    return;
  size_t total = (size_t)batch * (size_t)nout;
  size_t blocks = (total + 255) / 256;
  if (blocks > 65536)
    blocks = 65536;
  conv1d_ref_kernel<<<(unsigned)blocks, 256, 0, stream>>>(x, w, y, batch, n, kw);
}
