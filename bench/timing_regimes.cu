// Why kevo's per-call times sit 2-3 us above triton's do_bench on fast
// kernels (BENCHMARKS.md, 2026-11-27: +2.0-3.2 us on every row but rowsum):
// one kernel timed by CUDA events under five regimes, side by side in one
// run, to tell the two candidate causes apart.
//   A  do_bench: the same buffers every call; an L2 flush (memset of 2x L2)
//      enqueued right before the start event, so the GPU is busy when the
//      event and the launch are queued (the launch's host latency is hidden)
//   B  the same buffers, flush, then a synchronization: the start event is
//      recorded on an idle GPU (the launch latency falls inside the events)
//   C  kevo today (worker/cuda.c cuda_time): every call on its own fresh
//      buffers, one flush per phase, a device-wide synchronization after
//      each call, so the start event is recorded on an idle GPU
//   D  C with a lead: a one-thread kernel spinning LEAD_US on %globaltimer
//      before the start event, so the launch is queued behind it
//   E  A on fresh buffers (each call its own, flush before each)
// A-B is the launch gap; B-C (and A-E) the fresh buffers (TLB, first
// touch); C-D what a lead would recover.
//
// Build: nvcc -O3 -arch=sm_90 -o timing_regimes bench/timing_regimes.cu
// Run:   ./timing_regimes [MiB per buffer (64)] [calls per regime (64)] [lead us (20)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

// A memory-bound kernel: y = 2x + 1 over n floats (a read and a write).
__global__ void scale(const float *__restrict__ x, float *__restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = 2.0f * x[i] + 1.0f;
}

// Spins ns nanoseconds by the global timer (and at most 2^31 iterations).
__global__ void lead(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (unsigned i = 0; i < (1u << 31); i++) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= ns)
      break;
  }
}

static double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
  int m = argc > 2 ? atoi(argv[2]) : 64;
  double lead_us = argc > 3 ? atof(argv[3]) : 20;
  size_t n = mib * (1 << 20) / sizeof(float);
  int dev = 0, l2 = 0, sms = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, dev));
  size_t flush_bytes = 2 * (size_t)l2;
  void *flush;
  CK(cudaMalloc(&flush, flush_bytes));
  std::vector<float *> xs(m), ys(m);
  for (int c = 0; c < m; c++) {
    CK(cudaMalloc(&xs[c], n * sizeof(float)));
    CK(cudaMalloc(&ys[c], n * sizeof(float)));
    CK(cudaMemset(xs[c], 0, n * sizeof(float)));
    CK(cudaMemset(ys[c], 0, n * sizeof(float)));
  }
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  int grid = sms * 8, block = 256;
  printf("%s, L2 %d MiB, %zu MiB in + %zu MiB out per call, %d calls per regime, lead %.0f us\n",
         p.name, l2 >> 20, mib, mib, m, lead_us);
  for (int c = 0; c < 8; c++) // warm up
    scale<<<grid, block, 0, s>>>(xs[0], ys[0], n);
  CK(cudaStreamSynchronize(s));
  const char *names[] = {"A do_bench: same buffers, flush then events, busy GPU",
                         "B same buffers, flush, sync, events on an idle GPU",
                         "C kevo: fresh buffers, one flush per phase, idle GPU",
                         "D C with a lead kernel before the start event",
                         "E A on fresh buffers"};
  double med[5];
  for (int round = 0; round < 2; round++) { // the second round is reported
    for (int r = 0; r < 5; r++) {
      std::vector<float> t(m);
      if (r == 2 || r == 3) {
        CK(cudaMemsetAsync(flush, round + r, flush_bytes, s));
        CK(cudaDeviceSynchronize());
      }
      for (int c = 0; c < m; c++) {
        int b = (r == 0 || r == 1) ? 0 : c;
        if (r == 0 || r == 1 || r == 4)
          CK(cudaMemsetAsync(flush, c, flush_bytes, s));
        if (r == 1)
          CK(cudaStreamSynchronize(s));
        if (r == 3)
          lead<<<1, 1, 0, s>>>((unsigned long long)(lead_us * 1000));
        CK(cudaEventRecord(e0, s));
        scale<<<grid, block, 0, s>>>(xs[b], ys[b], n);
        CK(cudaEventRecord(e1, s));
        CK(cudaDeviceSynchronize());
        CK(cudaEventElapsedTime(&t[c], e0, e1));
        t[c] *= 1000; // us
      }
      med[r] = median(t);
    }
  }
  for (int r = 0; r < 5; r++)
    printf("%-56s %8.2f us  (%+.2f us, %.3fx of A)\n", names[r], med[r], med[r] - med[0],
           med[r] / med[0]);
  printf("launch gap (B-A) %.2f us; fresh buffers (C-B) %.2f us, (E-A) %.2f us; lead recovers "
         "(C-D) %.2f us\n",
         med[1] - med[0], med[2] - med[1], med[4] - med[0], med[2] - med[3]);
  return 0;
}
