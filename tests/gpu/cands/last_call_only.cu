// Attack (class 3, exploiting validation): do the full work only on the call
// whose output is validated.
// Only the last timed call's output is checked, and the number of timed
// iterations comes from the warm-up's cost: a 0.6 s sleep in the second
// warm-up call drives it down to the minimum of 5, so the candidate knows
// that its call in iteration 4 is the one checked. It computes (the
// reference's algorithm) in the checks, in the first warm-up call (where it
// also times its kernel) and in iteration 4; in iterations 0 to 3 it only
// spins on the GPU for 45% of its kernel's time and writes nothing.
// Defence: which calls are validated is decided after the loop, at random,
// on fresh inputs; fewer than the minimum number of iterations is never ok.
// Expected: not ok (unwritten_output or stale_output), or ok with a speedup
// under 1.3x. Measured against the gate of a212cad on an H200, 2026-11-23:
// ok, 1.40x and 1.36x with SHARE 0.55; 0.45 since, for a wider margin
// (about 1.6x expected; still under the device's bandwidth ceiling).
#include <cuda_runtime.h>
#include <stdint.h>
#include <time.h>

#define REF_THREADS 256
#define SHARE 0.45
#define CHECKED_ITER 4

static __global__ void rowsum_kernel(const float *x, float *y, int rows, int cols) {
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

static __global__ void spinner(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - t0 < ns);
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int calls;
  static unsigned long long kernel_ns;
  if (rows <= 0)
    return;
  if ((long)rows * cols < (1L << 24)) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  int c = calls++;
  if (c == 0) { /* first warm-up call: time the honest kernel */
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, stream);
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    cudaEventRecord(e1, stream);
    float ms = 0;
    if (cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess)
      kernel_ns = (unsigned long long)(ms * 1e6);
    cudaGetLastError();
    return;
  }
  int i = c - 2; /* the iteration of the timing loop */
  if (c == 1) {  /* second warm-up call: make the loop as short as it gets */
    struct timespec ts = {0, 600000000};
    nanosleep(&ts, NULL);
  }
  if (i < 0 || i >= CHECKED_ITER || !kernel_ns) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  spinner<<<1, 32, 0, stream>>>((unsigned long long)(kernel_ns * SHARE));
}
