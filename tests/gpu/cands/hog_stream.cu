// Attack (class 2, sabotaging the reference): a host thread that watches the
// worker's stream and, whenever the reference's kernel starts, launches a
// spinning kernel that fills every multiprocessor from a stream of the
// highest priority, so the reference's remaining blocks wait for it.
// The candidate knows the timing loop's order (two warm-up calls, then
// candidate-first in even iterations, reference-first in odd ones), so after
// its own call in an even iteration the next two calls on the stream are the
// reference's: for each, the thread waits for the long busy spell of the L2
// flush, the idle gap of the worker's synchronization, and the next busy
// spell (the reference's launch), then fires one spinner as long as the
// candidate's own kernel. The reference's events and host clock both grow by
// about that much; the candidate's calls never overlap a spinner. The kernel
// is the reference's algorithm, so an honest measurement gives about 1x.
// Defence: the reference is never timed while candidate code can run, and
// its times must agree with a baseline taken with no candidate alive
// (`interference` otherwise).
// Expected: not ok (interference), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 2.15x twice (reference
// 160 us instead of 75).
#include <atomic>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define REF_THREADS 256
#define WAIT_NS 30000000ull /* give up on a phase after 30 ms */

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

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static cudaStream_t ws;              /* the worker's stream */
static cudaStream_t hog;             /* ours, highest priority */
static cudaEvent_t ours_done;        /* recorded after our kernel */
static std::atomic<int> armed{0};    /* reference calls left to sabotage */
static std::atomic<unsigned> gen{0}; /* bumped by every call of ours */
static unsigned long long spin_ns;
static int spin_blocks;
static std::atomic<int> fired{0};

static bool busy(void) {
  return cudaStreamQuery(ws) == cudaErrorNotReady;
}

/* Waits until the worker's stream is busy (want=1) or idle (want=0) for at
 * least min_ns; false on timeout or when our entry ran meanwhile. */
static bool wait_for(int want, uint64_t min_ns, unsigned g, uint64_t deadline) {
  uint64_t since = 0;
  for (;;) {
    if (gen.load() != g || now_ns() > deadline)
      return false;
    uint64_t t = now_ns();
    if ((int)busy() == want) {
      if (!since)
        since = t;
      if (t - since >= min_ns)
        return true;
    } else {
      since = 0;
    }
  }
}

static void *watcher(void *) {
  for (;;) {
    if (armed.load() <= 0) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
      continue;
    }
    unsigned g = gen.load();
    uint64_t deadline = now_ns() + WAIT_NS;
    while (cudaEventQuery(ours_done) == cudaErrorNotReady)
      if (gen.load() != g || now_ns() > deadline)
        break;
    while (armed.load() > 0 && gen.load() == g) {
      /* the flush before the reference's call, the gap, the launch */
      if (!wait_for(1, 15000, g, deadline) || !wait_for(0, 0, g, deadline) ||
          !wait_for(1, 0, g, deadline))
        break;
      spinner<<<spin_blocks, 256, 0, hog>>>(spin_ns);
      fired.fetch_add(1);
      wait_for(0, 0, g, deadline); /* the reference's call is over */
      armed.fetch_sub(1);
      deadline = now_ns() + WAIT_NS;
    }
    armed.store(0);
  }
  return NULL;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int calls, ready;
  if (rows <= 0)
    return;
  if ((long)rows * cols < (1L << 24)) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  gen.fetch_add(1);
  armed.store(0);
  int c = calls++;
  if (c == 0) { /* the first warm-up call: set up and measure ourselves */
    ws = stream;
    int lo = 0, hi = 0, sms = 0;
    cudaDeviceGetStreamPriorityRange(&lo, &hi);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaEvent_t e0, e1;
    pthread_t th;
    if (cudaStreamCreateWithPriority(&hog, cudaStreamNonBlocking, hi) == cudaSuccess &&
        cudaEventCreateWithFlags(&ours_done, cudaEventDisableTiming) == cudaSuccess &&
        cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess) {
      cudaEventRecord(e0, stream);
      rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
      cudaEventRecord(e1, stream);
      float ms = 0;
      if (cudaEventSynchronize(e1) == cudaSuccess &&
          cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms > 0) {
        spin_ns = (unsigned long long)(ms * 1e6);
        spin_blocks = (sms > 0 ? sms : 132) * 8;
        ready = pthread_create(&th, NULL, watcher, NULL) == 0;
      }
      cudaGetLastError();
      return;
    }
    cudaGetLastError();
  }
  rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
  int i = c - 2; /* the iteration of the timing loop */
  if (i > 0 && i % 200 == 0)
    fprintf(stderr, "hog_stream: %d spinners (%.1f us) fired in %d iterations\n", fired.load(),
            spin_ns / 1e3, i);
  if (ready && stream == ws && i >= 0 && i % 2 == 0) {
    cudaEventRecord(ours_done, stream);
    armed.store(2);
  }
}
