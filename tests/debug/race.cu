// A planted bug for kevo's debugger (tests/debug): a shared-memory race. One
// block per row reduces its partial sums in shared memory with no barrier
// between the steps, so a thread reads a slot another warp may not have
// written yet; racecheck names the two lines.
#include <cuda_runtime.h>

static __global__ void rowsum_race(const float *x, float *y, int rows, int cols) {
  __shared__ float part[256];
  int r = blockIdx.x, t = threadIdx.x;
  float s = 0.0f;
  for (int c = t; c < cols; c += blockDim.x)
    s += x[(size_t)r * cols + c];
  part[t] = s; // KEVO-PLANTED-RACE-WRITE
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (t < step)
      part[t] += part[t + step]; // KEVO-PLANTED-RACE-READ
    // the missing __syncthreads() is the bug
  }
  if (t == 0)
    y[r] = part[0];
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowsum_race<<<rows, 256, 0, stream>>>(x, y, rows, cols);
}
