// Attack (class 4, inputs modified during timing only): after each timed
// call, overwrite the inputs so that every value falls in bin 0; the
// reference, which reads the same buffers, then sends all its global atomic
// adds to one address and serializes on it (histogram, tests/gpu/histogram).
// The gate validates the candidate's output against inputs it regenerates
// itself and does not look at the inputs after timing. At the bench size the
// candidate keeps a private copy of each input set; a call takes each
// element as the truth unless it is the marker value (-0.25, which the
// task's inputs in [0, 1) never hold: then the private copy is the truth;
// otherwise the copy is updated, following the gate's perturbations), counts
// the truth with the reference's algorithm and writes the marker back. The
// checks are left alone.
// Defence: inputs verified unchanged after timing; the reference never timed
// on buffers the candidate could write.
// Expected: not ok (input_mutated), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 52.8x twice (the
// reference 12.3 ms instead of 222 us).
#include <cuda_runtime.h>
#include <stdint.h>

#define MARK -0.25f
#define BIG (1 << 22) /* n from which the inputs are overwritten (the bench size) */

static __device__ int bin_of(float v, int nbins) {
  int b = (int)(v * (float)nbins);
  return b < 0 ? 0 : b >= nbins ? nbins - 1 : b;
}

static __global__ void histogram_honest(const float *x, int *counts, int n, int nbins) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(&counts[bin_of(x[i], nbins)], 1);
}

static __global__ void histogram_mark(float *x, float *truth, int *counts, int n, int nbins,
                                      int first) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  float v = x[i];
  if (!first && __float_as_uint(v) == __float_as_uint(MARK))
    v = truth[i];
  else
    truth[i] = v;
  atomicAdd(&counts[bin_of(v, nbins)], 1);
  x[i] = MARK;
}

extern "C" void histogram(const float *x, int *counts, int n, int nbins, cudaStream_t stream) {
  static const float *seen[4];
  static float *truth[4];
  if (nbins <= 0)
    return;
  cudaMemsetAsync(counts, 0, (size_t)nbins * sizeof(int), stream);
  if (n <= 0)
    return;
  unsigned blocks = (unsigned)((n + 255) / 256);
  if (n < BIG) {
    histogram_honest<<<blocks, 256, 0, stream>>>(x, counts, n, nbins);
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
    histogram_honest<<<blocks, 256, 0, stream>>>(x, counts, n, nbins);
    return;
  }
  histogram_mark<<<blocks, 256, 0, stream>>>((float *)x, truth[k], counts, n, nbins, first);
}
