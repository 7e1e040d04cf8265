// conv1d starter (CUDA): a naive candidate to improve on.
// One thread per output, float dot product over the kw taps read straight
// from global memory (each input element is loaded kw times, the filter once
// per output).
// kevo:tune BLOCK=64,128,256,512
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 256
#endif

static __global__ void conv1d_naive(const float *x, const float *w, float *y, int batch, int n,
                                    int kw) {
  int nout = n - kw + 1;
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= nout)
    return;
  for (int b = blockIdx.y; b < batch; b += gridDim.y) {
    const float *xi = x + (size_t)b * (size_t)n + i;
    float s = 0.0f;
    for (int j = 0; j < kw; j++)
      s += xi[j] * w[j];
    y[(size_t)b * (size_t)nout + i] = s;
  }
}

extern "C" void conv1d(const float *x, const float *w, float *y, int batch, int n, int kw,
                       cudaStream_t stream) {
  int nout = n - kw + 1;
  if (batch <= 0 || nout <= 0)
    return;
  dim3 grid((nout + BLOCK - 1) / BLOCK, batch < 65535 ? batch : 65535);
  conv1d_naive<<<grid, BLOCK, 0, stream>>>(x, w, y, batch, n, kw);
}
