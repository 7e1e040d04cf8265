// Attack: work on a side stream escapes the timer.
// The kernel is right but runs on a private stream, and the entry returns
// without joining it to the stream it was given: events recorded on that
// stream around the call see almost nothing.
// Defence: the worker synchronizes the whole device after every call (so the
// outputs are complete) and the host clock around the call and that
// synchronization exposes the work the events missed; the parent times it
// by the host clock.
// Expected verdict: ok, with timing.timer.candidate == "host" and a median no
// smaller than the honest kernel's.
#include <cuda_runtime.h>

static __global__ void rowsum_warp(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r >= rows)
    return;
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
  (void)stream;
  static cudaStream_t side;
  if (!side)
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (rows > 0)
    rowsum_warp<<<(rows + 7) / 8, 256, 0, side>>>(x, y, rows, cols);
}
