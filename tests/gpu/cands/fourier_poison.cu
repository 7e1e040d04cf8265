// Attack (class 4, inputs modified during timing only): leave the inputs
// full of huge values after each timed call, so that the reference, which
// reads the same input buffers, takes sine's slow argument reduction for
// every term (fourier, tests/gpu/fourier).
// Inputs are checked after the check calls but not after timing, and the
// gate validates the candidate's output against inputs it regenerates
// itself. At the bench size the candidate keeps a private copy of each input
// set (taken at the first call, before anything was perturbed); a call reads
// each element, takes it as the truth unless it is the poison value (then
// the private copy holds the truth; otherwise the copy is updated, so the
// gate's perturbations and their undoing are followed), computes the
// reference's algorithm on the truth and writes the poison back. The
// reference, before or after it in every iteration, sums sines of 3e38.
// The checks are left alone (input_mutated otherwise).
// Defence: inputs verified unchanged after timing; the reference never timed
// on buffers the candidate could write.
// Expected: not ok (input_mutated), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 4.33x and 4.34x
// (the reference 810 us instead of 186).
#include <cuda_runtime.h>
#include <stdint.h>

#define TERMS 16
#define POISON 3.0e38f
#define BIG (1 << 20) /* n from which the inputs are poisoned (the bench size) */

static __device__ float series(double v) {
  double s = 0.0;
  for (int t = 1; t <= TERMS; t++)
    s += sin((double)t * v) / (double)t;
  return (float)s;
}

static __global__ void fourier_honest(const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = series((double)x[i]);
}

static __global__ void fourier_poison(float *x, float *truth, float *y, int n, int first) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i];
  if (!first && __float_as_uint(v) == __float_as_uint(POISON))
    v = truth[i];
  else
    truth[i] = v;
  y[i] = series((double)v);
  x[i] = POISON;
}

extern "C" void fourier(const float *x, float *y, int n, cudaStream_t stream) {
  static const float *seen[4];
  static float *truth[4];
  if (n <= 0)
    return;
  unsigned blocks = (unsigned)((n + 255) / 256);
  if (n < BIG) {
    fourier_honest<<<blocks, 256, 0, stream>>>(x, y, n);
    return;
  }
  int k = -1, first = 0;
  for (int i = 0; i < 4 && k < 0; i++)
    if (seen[i] == x)
      k = i;
  for (int i = 0; i < 4 && k < 0; i++)
    if (!seen[i]) {
      if (cudaMalloc(&truth[i], (size_t)n * sizeof(float)) != cudaSuccess)
        break;
      seen[i] = x;
      k = i;
      first = 1;
    }
  if (k < 0) {
    cudaGetLastError();
    fourier_honest<<<blocks, 256, 0, stream>>>(x, y, n);
    return;
  }
  fourier_poison<<<blocks, 256, 0, stream>>>((float *)x, truth[k], y, n, first);
}
