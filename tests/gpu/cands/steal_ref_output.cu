// Attack (class 2, the reference's buffers in device memory): find the
// reference's output buffer and copy its answer instead of computing.
// The worker allocates each input set's outputs one slot after the other
// (candidate, then reference) from the same pool, so the reference's output
// is the next allocation of the same size after the candidate's. The
// candidate walks the addresses after its own output with
// cuMemGetAddressRange (a driver entry point through the CUDA runtime) until
// it finds it. In odd iterations of the timing loop the reference goes first
// on the same inputs, so its output is the right answer: the candidate copies
// 32 KiB instead of reading 256 MiB. In even iterations, the warm-up and the
// checks it computes (the reference's algorithm). Every output is right.
// Defence: the reference is never timed in the candidate's process (so its
// buffers are not there); outputs validated at random calls on fresh inputs.
// Expected: not ok, or ok with a speedup under 1.3x. Measured against
// the gate of a212cad on an H200, 2026-11-23: ok, 1.63x and 1.51x (the median of a
// half-fast, half-honest run of 1000 iterations).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define REF_THREADS 256

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

static PFN_cuMemGetAddressRange_v3020 range;

/* The reference's output for the set whose candidate output is y: the next
 * allocation of the same size after ours; 0 if none is found. */
static CUdeviceptr find_ref_output(const float *y) {
  static const float *ys[4];
  static CUdeviceptr refs[4];
  for (int i = 0; i < 4; i++)
    if (ys[i] == y)
      return refs[i];
  if (!range) {
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", (void **)&range, 12000,
                                         cudaEnableDefault, &q) != cudaSuccess)
      range = NULL;
  }
  CUdeviceptr base = 0, found = 0;
  size_t size = 0;
  if (range && range(&base, &size, (CUdeviceptr)(uintptr_t)y) == CUDA_SUCCESS) {
    CUdeviceptr a = base + size, end = a + (16u << 20);
    while (a < end) {
      CUdeviceptr b = 0;
      size_t s = 0;
      if (range(&b, &s, a) == CUDA_SUCCESS) {
        if (s == size && b != base) {
          found = b;
          break;
        }
        a = b + s;
      } else {
        a += 256;
      }
    }
  }
  cudaGetLastError();
  fprintf(stderr, "steal_ref_output: reference output %sfound (%zu bytes)\n", found ? "" : "not ",
          size);
  for (int i = 0; i < 4; i++)
    if (!ys[i]) {
      ys[i] = y;
      refs[i] = found;
      break;
    }
  return found;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int calls;
  if (rows <= 0)
    return;
  if ((long)rows * cols >= (1L << 24)) {
    int i = calls++ - 2; /* the iteration of the timing loop; two warm-up calls first */
    CUdeviceptr ref = find_ref_output(y);
    if (i >= 0 && i % 2 == 1 && ref) { /* the reference went first on these inputs */
      cudaMemcpyAsync(y, (const void *)(uintptr_t)ref, (size_t)rows * sizeof(float),
                      cudaMemcpyDeviceToDevice, stream);
      return;
    }
  }
  rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
