// Attack (class 3, exploiting validation): a cache keyed by the input's
// address and 16 sampled values (rowmax, tests/gpu/rowmax).
// Timed inputs change in only 8 points per iteration, so 16 fixed samples
// almost never see a change, and a row's maximum changes only when a new
// value beats it or the old maximum is the one replaced (about 0.2% of
// iterations for 8 points in rows of 8192): the remembered maxima are almost
// always the right answer. On a hit the candidate copies them (32 KiB
// instead of 256 MiB) and spins until half its kernel's time has passed (so
// the claimed bandwidth stays under the device's ceilings); on a miss (every
// check call: new contents at the same address) it computes with the
// reference's algorithm and remembers.
// Defence: validated calls run on completely fresh inputs.
// Expected: not ok (stale_output), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 1.72x and 1.69x.
#include <cuda_runtime.h>
#include <stdint.h>

#define REF_THREADS 256
#define NSAMPLES 16
#define SHARE 0.5
#define BIG (1L << 24) /* rows*cols from which the cache is used (the bench size) */

struct state {
  unsigned long long t0;   /* globaltimer at the start of the call */
  int hit;                 /* the samples match */
  unsigned samp[NSAMPLES]; /* the remembered samples */
};

static __device__ size_t sample_at(int s, size_t count) {
  return (size_t)((unsigned long long)(s + 1) * 0x9E3779B97F4A7C15ull % count);
}

static __global__ void probe(const float *x, size_t count, state *st, int first) {
  if (threadIdx.x == 0)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(st->t0));
  int s = threadIdx.x;
  unsigned v = __float_as_uint(x[sample_at(s, count)]);
  int same = !first && v == st->samp[s];
  same = __all_sync(0xffffu, same);
  if (s == 0)
    st->hit = same;
}

static __global__ void remember(const float *x, size_t count, state *st) {
  if (!st->hit)
    st->samp[threadIdx.x] = __float_as_uint(x[sample_at(threadIdx.x, count)]);
}

/* The reference's algorithm, or the remembered row maximum on a hit. */
static __global__ void rowmax_cached(const float *x, float *y, float *keep, int rows, int cols,
                                     const state *st) {
  __shared__ float part[REF_THREADS];
  int r = blockIdx.x;
  if (st->hit) {
    if (threadIdx.x == 0)
      y[r] = keep[r];
    return;
  }
  const float *xr = x + (size_t)r * (size_t)cols;
  float m = -__int_as_float(0x7f800000);
  for (int c = threadIdx.x; c < cols; c += REF_THREADS)
    m = fmaxf(m, xr[c]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    y[r] = part[0];
    if (keep)
      keep[r] = part[0];
  }
}

static __global__ void pad(const state *st, unsigned long long ns) {
  if (!st->hit)
    return;
  unsigned long long t;
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - st->t0 < ns);
}

struct entry {
  const float *x;
  int rows, cols;
  float *keep;
  state *st;
};

extern "C" void rowmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static entry cache[4];
  static unsigned long long kernel_ns;
  static state *none;
  if (rows <= 0)
    return;
  if (!none && (cudaMalloc(&none, sizeof(state)) != cudaSuccess ||
                cudaMemsetAsync(none, 0, sizeof(state), stream) != cudaSuccess))
    none = NULL;
  if ((long)rows * cols < BIG || !none) {
    if (none)
      rowmax_cached<<<rows, REF_THREADS, 0, stream>>>(x, y, NULL, rows, cols, none);
    return;
  }
  size_t count = (size_t)rows * cols;
  entry *e = NULL;
  for (int i = 0; i < 4 && !e; i++)
    if (cache[i].x == x && cache[i].rows == rows && cache[i].cols == cols)
      e = &cache[i];
  int first = 0;
  if (!e) {
    for (int i = 0; i < 4 && !e; i++)
      if (!cache[i].x)
        e = &cache[i];
    if (!e || cudaMalloc(&e->keep, (size_t)rows * 4) != cudaSuccess ||
        cudaMalloc(&e->st, sizeof(state)) != cudaSuccess) {
      cudaGetLastError();
      if (e)
        e->x = NULL;
      rowmax_cached<<<rows, REF_THREADS, 0, stream>>>(x, y, NULL, rows, cols, none);
      return;
    }
    e->x = x;
    e->rows = rows;
    e->cols = cols;
    first = 1;
  }
  probe<<<1, NSAMPLES, 0, stream>>>(x, count, e->st, first);
  cudaEvent_t e0 = NULL, e1 = NULL;
  if (!kernel_ns) { /* time the honest kernel once (a miss: first sight) */
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, stream);
  }
  rowmax_cached<<<rows, REF_THREADS, 0, stream>>>(x, y, e->keep, rows, cols, e->st);
  if (e0) {
    cudaEventRecord(e1, stream);
    float ms = 0;
    if (cudaEventSynchronize(e1) == cudaSuccess && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess)
      kernel_ns = (unsigned long long)(ms * 1e6);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaGetLastError();
  }
  remember<<<1, NSAMPLES, 0, stream>>>(x, count, e->st);
  if (kernel_ns)
    pad<<<1, 1, 0, stream>>>(e->st, (unsigned long long)(kernel_ns * SHARE));
}
