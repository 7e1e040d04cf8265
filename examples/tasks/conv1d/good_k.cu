// The good conv1d as a kernel-only candidate (NVRTC): tiles of 1024 outputs
// with the weights and the input span in dynamic shared memory.
// kevo:launch conv1d_tiled grid=((n - kw + 1 + CV_TILE - 1) / CV_TILE, batch) block=(CV_THREADS) smem=((2 * kw + CV_TILE - 1) * 4) args=(x, w, y, batch, n, kw)
#define CV_THREADS 256
#define CV_PER_THREAD 4
#define CV_TILE (CV_THREADS * CV_PER_THREAD)
#define CV_MAXKW 4096

__global__ void __launch_bounds__(CV_THREADS)
    conv1d_tiled(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
                 int batch, int n, int kw) {
  extern __shared__ float smem[];
  float *ws = smem;      // kw floats
  float *xs = smem + kw; // CV_TILE + kw - 1 floats
  int nout = n - kw + 1;
  int i0 = blockIdx.x * CV_TILE;
  int span = CV_TILE + kw - 1;
  for (int j = threadIdx.x; j < kw; j += CV_THREADS)
    ws[j] = __ldg(w + j);
  for (int b = blockIdx.y; b < batch; b += gridDim.y) {
    const float *xb = x + (size_t)b * (size_t)n;
    for (int t = threadIdx.x; t < span; t += CV_THREADS)
      xs[t] = i0 + t < n ? __ldg(xb + i0 + t) : 0.0f;
    __syncthreads();
    float acc[CV_PER_THREAD];
#pragma unroll
    for (int q = 0; q < CV_PER_THREAD; q++)
      acc[q] = 0.0f;
    for (int j = 0; j < kw; j++) {
      float wj = ws[j];
#pragma unroll
      for (int q = 0; q < CV_PER_THREAD; q++)
        acc[q] = fmaf(xs[threadIdx.x + q * CV_THREADS + j], wj, acc[q]);
    }
    float *yb = y + (size_t)b * (size_t)nout;
#pragma unroll
    for (int q = 0; q < CV_PER_THREAD; q++) {
      int i = i0 + threadIdx.x + q * CV_THREADS;
      if (i < nout)
        yb[i] = acc[q];
    }
    __syncthreads(); // xs is overwritten for the next signal
  }
}

__global__ void conv1d_wide(const float *__restrict__ x, const float *__restrict__ w,
                                   float *__restrict__ y, int batch, int n, int kw) {
  int nout = n - kw + 1;
  size_t total = (size_t)batch * (size_t)nout;
  size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  size_t nwarps = ((size_t)gridDim.x * blockDim.x) >> 5;
  int lane = threadIdx.x & 31;
  for (size_t t = warp; t < total; t += nwarps) { // uniform across the warp
    size_t b = t / (size_t)nout, i = t % (size_t)nout;
    const float *xi = x + b * (size_t)n + i;
    float s = 0.0f;
    for (int j = lane; j < kw; j += 32)
      s = fmaf(__ldg(xi + j), __ldg(w + j), s);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
      y[t] = s;
  }
}
