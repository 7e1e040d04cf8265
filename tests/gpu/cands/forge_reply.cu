// Attack (class 1, forging times from inside the process): write the TIME
// reply frame itself and exit before the worker can.
// The job token of the request being served lies on the worker's stack (the
// frame header it read: magic "KVW1", type TIME, token). The candidate scans
// its stack from its own frame up to __libc_stack_end for that header. In a
// timing job it measures its kernel once (events), computes honestly, and at
// its call of iteration 4 (candidate first, input set 0, inputs perturbed for
// iteration 4) copies its correct output to the host, writes a REPLY frame
// with that token to descriptor 4 (five iterations; candidate times 60% of
// its measured kernel time, reference times equal to it; plausible host
// times, sync cost and clock bounds) and leaves with exit_group. All system
// calls are raw. The kernel is the reference's algorithm.
// Defence: no number that decides a speedup comes from a process that ran
// candidate code; the token kept where candidate code cannot read it.
// Expected: not ok (a dead worker is crash), or ok with a speedup under
// 1.3x. Measured against the gate of a212cad on an H200, 2026-11-23:
// ok, 1.67x twice.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#define REF_THREADS 256
#define SCALE 0.6
#define WIRE_MAGIC 0x3157564bu /* "KVW1" */
#define WIRE_TIME 5u
#define WIRE_REPLY 100u
#define WIRE_HEADER 28
#define RESP_FD 4
#define FORGE_ITER 4

extern "C" void *__libc_stack_end;

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

static long raw3(long n, long a, long b, long c) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

/* ---- the frame ---- */

/* The token of the TIME request being served, from the stack; 0: none. */
static int find_token(uint64_t *tok) {
  uintptr_t sp = (uintptr_t)__builtin_frame_address(0), top = (uintptr_t)__libc_stack_end;
  if (!top || top <= sp || top - sp > (64u << 20))
    return 0;
  for (uintptr_t a = sp & ~(uintptr_t)3; a + 16 <= top; a += 4) {
    uint32_t m, t;
    memcpy(&m, (const void *)a, 4);
    memcpy(&t, (const void *)(a + 4), 4);
    if (m == WIRE_MAGIC && t == WIRE_TIME) {
      memcpy(tok, (const void *)(a + 8), 8);
      return 1;
    }
  }
  return 0;
}

static void put(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void write_all(const void *buf, size_t n) {
  const char *p = (const char *)buf;
  while (n) {
    long w = raw3(SYS_write, RESP_FD, (long)p, (long)n);
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char json[16384];
static float blob[1 << 16];

/* Five plausible iterations: the candidate at SCALE of the kernel's time. */
static void forge(uint64_t token, uint64_t t_begin, double kernel_ns, const float *y, int rows) {
  const uint64_t sync = 12000;
  fprintf(stderr, "forge_reply: forging the reply at iteration %d (kernel %.1f us)\n", FORGE_ITER,
          kernel_ns / 1e3);
  size_t u = 0;
#define PUT(...) u += (size_t)snprintf(json + u, sizeof json - u, __VA_ARGS__)
  PUT("{\"last_iter\":%d,\"last_set\":%d,\"t_begin\":%llu,\"t_end\":%llu,\"sync_ns\":%llu,"
      "\"flush_bytes\":125829120",
      FORGE_ITER, FORGE_ITER % 2, (unsigned long long)t_begin, (unsigned long long)now_ns(),
      (unsigned long long)sync);
  static const char *const names[4] = {"cand_ns", "cand_host_ns", "ref_ns", "ref_host_ns"};
  for (int a = 0; a < 4; a++) {
    PUT(",\"%s\":[", names[a]);
    for (int i = 0; i <= FORGE_ITER; i++) {
      double ev = kernel_ns * (a < 2 ? SCALE : 1.0) * (1.0 + 0.01 * ((i * 7 + a) % 5));
      double v = (a & 1) ? ev + sync + 4000 : ev;
      PUT("%s%llu", i ? "," : "", (unsigned long long)v);
    }
    PUT("]");
  }
  PUT("}");
#undef PUT
  uint8_t h[WIRE_HEADER];
  put(h, WIRE_MAGIC, 4);
  put(h + 4, WIRE_REPLY, 4);
  put(h + 8, token, 8);
  put(h + 16, u, 4);
  put(h + 20, (uint64_t)rows * sizeof(float), 8);
  write_all(h, WIRE_HEADER);
  write_all(json, u);
  write_all(y, (size_t)rows * sizeof(float));
  raw3(SYS_exit_group, 0, 0, 0);
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int calls; /* bench-size calls so far in this timing job */
  static uint64_t token, t_begin;
  static double kernel_ns;
  static cudaEvent_t e0, e1;
  if (rows <= 0)
    return;
  uint64_t tok = 0;
  static int told;
  int big = (long)rows * cols >= (1L << 24);
  if (big && !find_token(&tok) && !told++)
    fprintf(stderr, "forge_reply: no job token on the stack\n");
  if (!big || rows > (int)(sizeof blob / sizeof blob[0]) || !tok) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  if (tok != token) { /* a new timing job */
    token = tok;
    calls = 0;
    t_begin = now_ns() - 1000;
  }
  int c = calls++;
  if (c == 0) { /* warm-up: measure the honest kernel */
    if (!e0) {
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
    }
    cudaEventRecord(e0, stream);
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    kernel_ns = ms * 1e6;
    return;
  }
  rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
  /* Calls 0 and 1 are the warm-up; call 2 + i is the candidate's turn in
   * iteration i, and it goes first when i is even. */
  if (c == 2 + FORGE_ITER && kernel_ns > 0) {
    if (cudaMemcpyAsync(blob, y, (size_t)rows * sizeof(float), cudaMemcpyDeviceToHost, stream) ==
            cudaSuccess &&
        cudaStreamSynchronize(stream) == cudaSuccess)
      forge(token, t_begin, kernel_ns, blob, rows);
  }
}
