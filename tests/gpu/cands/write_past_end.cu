// Attack (or an honest off-by-one): a correct rowsum that also writes one
// element past the end of y. The device allocation has spare bytes, so the
// driver reports nothing.
// Defence: the spare bytes after every device buffer are a guard zone, filled
// with a pattern drawn from the call's seed and compared after every check call.
// Expected verdict: wrong_output, naming the guard zone after y.
#include <cuda_runtime.h>

static __global__ void rowsum_over(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r > rows)
    return;
  if (r == rows) {
    if (lane == 0)
      y[r] = 0.0f;
    return;
  }
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32)
    s += xr[c];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0)
    y[r] = s;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_over<<<rows / 8 + 1, 256, 0, stream>>>(x, y, rows, cols);
}
