// Attack (class 2, sabotaging the reference): a kernel that keeps running on
// the GPU after the candidate's call has returned, in a second CUDA context
// of the same process, so the worker's cuCtxSynchronize never waits for it
// and the reference has to share the GPU with it.
// Kernels of two contexts do not run at once: the GPU time-slices between
// them. A host thread creates the second context (driver entry points
// through cudaGetDriverEntryPointByVersion, a PTX module), and after the
// candidate's call in an even iteration of the timing loop (the next two
// calls are the reference's) it launches a one-thread kernel there that
// sleeps in a loop until a flag in mapped host memory tells it to stop. The
// reference's calls (and the flushes before them) then wait for their time
// slices; at the candidate's next call the thread stops the kernel and waits
// for it to end before the candidate launches its own. The candidate's
// kernel is the reference's algorithm: an honest measurement gives about 1x.
// Defence: the reference is never timed while candidate code can run, and
// its times must agree with a baseline taken with no candidate process
// alive; stopping the candidate's processes does not stop its GPU work.
// Expected: not ok (interference), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 7.2x twice (the
// reference timed by the host clock at 2.45 ms instead of 75 us).
#include <atomic>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define REF_THREADS 256
#define WAIT_NS 100000000ull /* give up waiting for the parked kernel after 100 ms */

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

/* Sleeps until *flag becomes non-zero (one thread is enough to hold the GPU
 * for this context). */
static const char park_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                               ".visible .entry park(.param .u64 p_flag)\n{\n"
                               " .reg .pred %p;\n .reg .b32 %r<2>;\n .reg .b64 %rd<2>;\n"
                               " ld.param.u64 %rd0, [p_flag];\n"
                               "$Lloop:\n nanosleep.u32 2000;\n"
                               " ld.volatile.global.u32 %r0, [%rd0];\n"
                               " setp.eq.u32 %p, %r0, 0;\n @%p bra $Lloop;\n ret;\n}\n";

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

enum { IDLE, START, STOP };
static std::atomic<int> cmd{IDLE}, acks{0}, state{0}; /* state: 0 starting, 1 ready, -1 failed */
static int running;

#define GET(sym, ver, var)                                                                         \
  (cudaGetDriverEntryPointByVersion(sym, (void **)&var, ver, cudaEnableDefault, &q) ==             \
       cudaSuccess &&                                                                              \
   var)

static void *parker(void *) {
  PFN_cuDeviceGet_v2000 devget;
  PFN_cuCtxCreate_v3020 ctxcreate;
  PFN_cuModuleLoadData_v2000 modload;
  PFN_cuModuleGetFunction_v2000 getfn;
  PFN_cuMemHostAlloc_v2020 hostalloc;
  PFN_cuMemHostGetDevicePointer_v3020 devptr;
  PFN_cuStreamCreate_v2000 mkstream;
  PFN_cuStreamSynchronize_v2000 ssync;
  PFN_cuLaunchKernel_v4000 launch;
  cudaDriverEntryPointQueryResult q;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUstream s;
  void *host = NULL;
  CUdeviceptr flag;
  if (!GET("cuDeviceGet", 12000, devget) || !GET("cuCtxCreate", 11000, ctxcreate) ||
      !GET("cuModuleLoadData", 12000, modload) || !GET("cuModuleGetFunction", 12000, getfn) ||
      !GET("cuMemHostAlloc", 12000, hostalloc) ||
      !GET("cuMemHostGetDevicePointer", 12000, devptr) || !GET("cuStreamCreate", 12000, mkstream) ||
      !GET("cuStreamSynchronize", 12000, ssync) || !GET("cuLaunchKernel", 12000, launch) ||
      devget(&dev, 0) != CUDA_SUCCESS || ctxcreate(&ctx, 0, dev) != CUDA_SUCCESS ||
      modload(&mod, park_ptx) != CUDA_SUCCESS || getfn(&fn, mod, "park") != CUDA_SUCCESS ||
      hostalloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
          CUDA_SUCCESS ||
      devptr(&flag, host, 0) != CUDA_SUCCESS ||
      mkstream(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    cudaGetLastError();
    fprintf(stderr, "persistent_ctx: no second context\n");
    state.store(-1);
    return NULL;
  }
  volatile unsigned *stop = (volatile unsigned *)host;
  fprintf(stderr, "persistent_ctx: second context ready\n");
  state.store(1);
  for (;;) {
    int c = cmd.exchange(IDLE);
    if (c == START && !running) {
      *stop = 0;
      void *args[] = {&flag};
      running = launch(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS;
    } else if (c == STOP) {
      if (running) {
        *stop = 1;
        ssync(s);
        running = 0;
      }
      acks.fetch_add(1);
    } else if (c == IDLE) {
      nap(2000);
    }
  }
  return NULL;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int calls, started;
  if (rows <= 0)
    return;
  if ((long)rows * cols < (1L << 24)) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  if (!started) {
    started = 1;
    pthread_t th;
    if (pthread_create(&th, NULL, parker, NULL) != 0)
      state.store(-1);
  }
  int c = calls++;
  if (state.load() == 1) { /* stop the parked kernel and wait until it is gone */
    int a = acks.load();
    cmd.store(STOP);
    uint64_t t0 = now_ns();
    while (acks.load() == a && now_ns() - t0 < WAIT_NS)
      ;
  }
  rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
  int i = c - 2; /* the iteration of the timing loop; two warm-up calls first */
  if (i >= 0 && i % 2 == 0) {
    if (state.load() == 0) { /* still setting up (module load) */
      uint64_t t0 = now_ns();
      while (state.load() == 0 && now_ns() - t0 < WAIT_NS)
        nap(10000);
    }
    if (state.load() == 1 && cudaStreamSynchronize(stream) == cudaSuccess)
      cmd.store(START);
  }
}
