// Attack (class 3, exploiting validation): a cache keyed by device address
// that diffs the inputs against private copies and recomputes only what
// changed (matmul, tests/gpu/matmul).
// Between timed calls the inputs change in only a few points (the
// perturbation of this iteration and the undoing of the last one on the same
// set), so for each (a, b) address pair the candidate keeps copies of a and
// b and of its last product. A call compares a and b with the copies
// element by element (reading 16 MiB instead of doing 2 GFLOP), lists the
// rows of a and columns of b that changed, copies the cached product and
// recomputes those rows and columns (a warp per element); when too much
// changed (every check call) it computes everything with the reference's
// algorithm. Every output is right; a floor of 40 us keeps the claimed rate
// under the device's ceilings.
// Defence: validated calls run on completely fresh inputs (and are chosen
// at random after the loop), so a cache cannot match them.
// Expected: not ok (stale_output), or ok with a speedup under 1.3x.
// Measured against the gate of a212cad on an H200, 2026-11-23: ok, 3.34x and 3.45x
// (186 us a call, most of it the uncoalesced fix-up; the reference 645 us).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_DIRTY 64      /* rows plus columns recomputed; more: compute everything */
#define FLOOR_NS 40000ull /* no call of the cached path claims less */
#define BIG (1LL << 28)   /* m*n*k from which the cache is used (the bench size) */

static __global__ void matmul_full(const float *a, const float *b, float *c, float *keep, int m,
                                   int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
    const float *ai = a + (size_t)i * (size_t)k;
    double s = 0.0;
    for (int p = 0; p < k; p++)
      s += (double)ai[p] * (double)b[(size_t)p * (size_t)n + j];
    c[(size_t)i * (size_t)n + j] = (float)s;
    if (keep)
      keep[(size_t)i * (size_t)n + j] = (float)s;
  }
}

static void full(const float *a, const float *b, float *c, float *keep, int m, int n, int k,
                 cudaStream_t s) {
  dim3 block(16, 16);
  int gy = (m + 15) / 16;
  dim3 grid((n + 15) / 16, gy < 65535 ? gy : 65535);
  matmul_full<<<grid, block, 0, s>>>(a, b, c, keep, m, n, k);
}

struct dirt {
  unsigned long long t0; /* globaltimer at the start of the call */
  int nrows, ncols;
  int rows[MAX_DIRTY], cols[MAX_DIRTY];
};

static __global__ void stamp(dirt *d) {
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(d->t0));
  d->nrows = d->ncols = 0;
}

/* Compares cur with its copy (bitwise), updates the copy and lists the row
 * (by_row: index / width) or column (index % width) of every change, once. */
static __global__ void diff(const float *cur, float *copy, size_t count, int width, int by_row,
                            int *flag, dirt *d) {
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < count;
       e += (size_t)gridDim.x * blockDim.x) {
    unsigned v = __float_as_uint(cur[e]);
    if (v == __float_as_uint(copy[e]))
      continue;
    copy[e] = cur[e];
    int line = by_row ? (int)(e / (size_t)width) : (int)(e % (size_t)width);
    if (atomicExch(&flag[line], 1) == 0) {
      int *cnt = by_row ? &d->nrows : &d->ncols;
      int at = atomicAdd(cnt, 1);
      if (at < MAX_DIRTY)
        (by_row ? d->rows : d->cols)[at] = line;
    }
  }
}

/* One warp per element of a changed row or column: the dot product in
 * double, split over the lanes. */
static __global__ void fix(const float *a, const float *b, float *c, float *keep, int m, int n,
                           int k, const dirt *d) {
  long w = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  int nr = d->nrows, nc = d->ncols;
  long total = (long)nr * n + (long)nc * m;
  if (w >= total)
    return;
  int i, j;
  if (w < (long)nr * n) {
    i = d->rows[w / n];
    j = (int)(w % n);
  } else {
    long v = w - (long)nr * n;
    j = d->cols[v / m];
    i = (int)(v % m);
  }
  double s = 0.0;
  for (int p = lane; p < k; p += 32)
    s += (double)a[(size_t)i * k + p] * (double)b[(size_t)p * n + j];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) {
    c[(size_t)i * n + j] = (float)s;
    keep[(size_t)i * n + j] = (float)s;
  }
}

static __global__ void pad(const dirt *d, unsigned long long ns) {
  unsigned long long t;
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  while (t - d->t0 < ns);
}

struct entry {
  const float *a, *b;
  int m, n, k;
  float *ca, *cb, *cc; /* copies of a and b, the last product */
  int *flags;          /* m row flags, then n column flags */
  dirt *d, *hd;        /* on the device, and pinned on the host */
};

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  static entry cache[4];
  if (m <= 0 || n <= 0)
    return;
  if ((long long)m * n * k < BIG || k <= 0) {
    full(a, b, c, NULL, m, n, k, stream);
    return;
  }
  entry *e = NULL;
  for (int i = 0; i < 4 && !e; i++)
    if (cache[i].a == a && cache[i].b == b && cache[i].m == m && cache[i].n == n && cache[i].k == k)
      e = &cache[i];
  size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
  if (!e) { /* first sight: copy the inputs, compute everything, remember */
    for (int i = 0; i < 4 && !e; i++)
      if (!cache[i].a)
        e = &cache[i];
    if (!e || cudaMalloc(&e->ca, na * 4) != cudaSuccess || cudaMalloc(&e->cb, nb * 4) ||
        cudaMalloc(&e->cc, nc * 4) || cudaMalloc(&e->flags, (size_t)(m + n) * 4) ||
        cudaMalloc(&e->d, sizeof(dirt)) || cudaMallocHost(&e->hd, sizeof(dirt))) {
      cudaGetLastError();
      if (e)
        e->a = NULL;
      full(a, b, c, NULL, m, n, k, stream);
      return;
    }
    e->a = a;
    e->b = b;
    e->m = m;
    e->n = n;
    e->k = k;
    cudaMemcpyAsync(e->ca, a, na * 4, cudaMemcpyDeviceToDevice, stream);
    cudaMemcpyAsync(e->cb, b, nb * 4, cudaMemcpyDeviceToDevice, stream);
    full(a, b, c, e->cc, m, n, k, stream);
    return;
  }
  stamp<<<1, 1, 0, stream>>>(e->d);
  cudaMemsetAsync(e->flags, 0, (size_t)(m + n) * 4, stream);
  diff<<<1024, 256, 0, stream>>>(a, e->ca, na, k, 1, e->flags, e->d);
  diff<<<1024, 256, 0, stream>>>(b, e->cb, nb, n, 0, e->flags + m, e->d);
  cudaMemcpyAsync(e->hd, e->d, sizeof(dirt), cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  int nr = e->hd->nrows, ncol = e->hd->ncols;
  static int cached_calls;
  if (++cached_calls % 100 == 1)
    fprintf(stderr, "diff_cache: call %d: %d rows and %d columns changed\n", cached_calls, nr,
            ncol);
  if (nr + ncol > MAX_DIRTY || nr > MAX_DIRTY || ncol > MAX_DIRTY) {
    full(a, b, c, e->cc, m, n, k, stream); /* the copies are up to date already */
    return;
  }
  cudaMemcpyAsync(c, e->cc, nc * 4, cudaMemcpyDeviceToDevice, stream);
  long warps = (long)nr * n + (long)ncol * m;
  if (warps > 0)
    fix<<<(unsigned)((warps * 32 + 255) / 256), 256, 0, stream>>>(a, b, c, e->cc, m, n, k, e->d);
  pad<<<1, 1, 0, stream>>>(e->d, FLOOR_NS);
}
