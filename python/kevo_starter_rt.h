/* kevo task starter's runtime: float32 tensors on the host, contiguous,
 * row-major, each operator a plain loop. Valid C11 and C++ (nvcc compiles
 * the cuda surface's starter). Generated starters paste it in verbatim. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define KT_MAXD 8
typedef struct {
  float *d;
  int nd;
  long s[KT_MAXD];
} kt;

static void **kt_mem;
static long kt_nmem, kt_cmem;

static inline void kt_fail(const char *what) {
  fprintf(stderr, "kevo starter: %s\n", what);
  abort();
}

static inline void *kt_alloc(size_t bytes) {
  if (kt_nmem == kt_cmem) {
    long c = kt_cmem ? 2 * kt_cmem : 256;
    void **g = (void **)realloc(kt_mem, (size_t)c * sizeof *g);
    if (!g)
      kt_fail("out of memory");
    kt_mem = g;
    kt_cmem = c;
  }
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    kt_fail("out of memory");
  kt_mem[kt_nmem++] = p;
  return p;
}

/* Every tensor of one call is freed when the call ends. */
static inline void kt_free_all(void) {
  for (long i = 0; i < kt_nmem; i++)
    free(kt_mem[i]);
  kt_nmem = 0;
}

static inline long kt_numel(const kt *x) {
  long n = 1;
  for (int i = 0; i < x->nd; i++)
    n *= x->s[i];
  return n;
}

static inline kt kt_new(int nd, const long *s) {
  kt r;
  memset(&r, 0, sizeof r);
  if (nd > KT_MAXD)
    kt_fail("more dimensions than the starter handles");
  r.nd = nd;
  for (int i = 0; i < nd; i++)
    r.s[i] = s[i];
  r.d = (float *)kt_alloc((size_t)kt_numel(&r) * sizeof(float));
  return r;
}

static inline kt kt_like(const kt *x) { return kt_new(x->nd, x->s); }

static inline kt kt_wrap(const float *p, int nd, const long *s) {
  kt r;
  memset(&r, 0, sizeof r);
  r.d = (float *)p;
  r.nd = nd;
  for (int i = 0; i < nd; i++)
    r.s[i] = s[i];
  return r;
}

/* An integer or byte buffer as float32 (masks, labels): a copy. */
#define KT_WRAP_CAST(T)                                                                          \
  static inline kt kt_wrap_##T(const T *p, int nd, const long *s) {                             \
    kt r = kt_new(nd, s);                                                                        \
    long n = kt_numel(&r);                                                                       \
    for (long i = 0; i < n; i++)                                                                 \
      r.d[i] = (float)p[i];                                                                      \
    return r;                                                                                    \
  }
KT_WRAP_CAST(uint8_t)
KT_WRAP_CAST(int32_t)
KT_WRAP_CAST(int64_t)

static inline kt kt_copy(kt x) {
  kt r = kt_like(&x);
  memcpy(r.d, x.d, (size_t)kt_numel(&x) * sizeof(float));
  return r;
}

static inline kt kt_scalar(double v) {
  kt r = kt_new(0, NULL);
  r.d[0] = (float)v;
  return r;
}

static inline int kt_dim(int d, int nd) { return d < 0 ? d + nd : d; }

/* ---- shapes ---- */

static inline kt kt_view(kt x, int nd, const long *s) {
  long n = kt_numel(&x), known = 1;
  int infer = -1;
  kt r = x;
  r.nd = nd;
  for (int i = 0; i < nd; i++) {
    r.s[i] = s[i];
    if (s[i] == -1)
      infer = i;
    else
      known *= s[i];
  }
  if (infer >= 0)
    r.s[infer] = known ? n / known : 0;
  if (kt_numel(&r) != n)
    kt_fail("view: the sizes do not match the element count");
  return r;
}

static inline kt kt_flatten(kt x, int a, int b) {
  if (x.nd == 0)
    return kt_view(x, 1, x.s);
  a = kt_dim(a, x.nd);
  b = kt_dim(b, x.nd);
  long s[KT_MAXD];
  int n = 0;
  for (int i = 0; i < a; i++)
    s[n++] = x.s[i];
  long m = 1;
  for (int i = a; i <= b; i++)
    m *= x.s[i];
  s[n++] = m;
  for (int i = b + 1; i < x.nd; i++)
    s[n++] = x.s[i];
  return kt_view(x, n, s);
}

static inline kt kt_unsqueeze(kt x, int d) {
  d = d < 0 ? d + x.nd + 1 : d;
  long s[KT_MAXD];
  int n = 0;
  for (int i = 0; i <= x.nd; i++)
    s[n++] = i == d ? 1 : x.s[i - (i > d)];
  return kt_view(x, x.nd + 1, s);
}

/* squeeze(d), or every 1 when d is KT_ALL */
#define KT_ALL 1000
static inline kt kt_squeeze(kt x, int d) {
  long s[KT_MAXD];
  int n = 0;
  if (d != KT_ALL)
    d = kt_dim(d, x.nd);
  for (int i = 0; i < x.nd; i++)
    if (!(x.s[i] == 1 && (d == KT_ALL || d == i)))
      s[n++] = x.s[i];
  return kt_view(x, n, s);
}

static inline kt kt_permute(kt x, const long *perm) {
  kt r;
  long s[KT_MAXD], st[KT_MAXD], xs[KT_MAXD], idx[KT_MAXD] = {0};
  long acc = 1;
  for (int i = x.nd - 1; i >= 0; i--) {
    xs[i] = acc;
    acc *= x.s[i];
  }
  for (int i = 0; i < x.nd; i++) {
    int p = kt_dim((int)perm[i], x.nd);
    s[i] = x.s[p];
    st[i] = xs[p];
  }
  r = kt_new(x.nd, s);
  long n = kt_numel(&r);
  for (long o = 0; o < n; o++) {
    long off = 0;
    for (int i = 0; i < x.nd; i++)
      off += idx[i] * st[i];
    r.d[o] = x.d[off];
    for (int i = x.nd - 1; i >= 0; i--) {
      if (++idx[i] < s[i])
        break;
      idx[i] = 0;
    }
  }
  return r;
}

static inline kt kt_transpose(kt x, int a, int b) {
  long perm[KT_MAXD];
  a = kt_dim(a, x.nd);
  b = kt_dim(b, x.nd);
  for (int i = 0; i < x.nd; i++)
    perm[i] = i == a ? b : i == b ? a : i;
  return kt_permute(x, perm);
}

static inline kt kt_cat(const kt *xs, int n, int d) {
  d = kt_dim(d, xs[0].nd);
  long s[KT_MAXD];
  for (int i = 0; i < xs[0].nd; i++)
    s[i] = xs[0].s[i];
  s[d] = 0;
  for (int k = 0; k < n; k++)
    s[d] += xs[k].s[d];
  kt r = kt_new(xs[0].nd, s);
  long outer = 1, inner = 1;
  for (int i = 0; i < d; i++)
    outer *= s[i];
  for (int i = d + 1; i < r.nd; i++)
    inner *= s[i];
  long at = 0;
  for (long o = 0; o < outer; o++)
    for (int k = 0; k < n; k++) {
      long m = xs[k].s[d] * inner;
      memcpy(r.d + at, xs[k].d + o * m, (size_t)m * sizeof(float));
      at += m;
    }
  return r;
}

/* x[spec]: per item a kind (0 an index, 1 a slice start:stop:step, 2 None),
 * items covering x's dims in order (an Ellipsis expanded by the generator). */
#define KT_END 0x7fffffffffffL
static inline kt kt_index(kt x, int nspec, const long *kind, const long *a, const long *b,
                   const long *st) {
  long s[KT_MAXD], lo[KT_MAXD], step[KT_MAXD], xs[KT_MAXD], ns[KT_MAXD], idx[KT_MAXD] = {0};
  int nd = 0, d = 0;
  long acc = 1;
  for (int i = x.nd - 1; i >= 0; i--) {
    xs[i] = acc;
    acc *= x.s[i];
  }
  long base = 0;
  for (int i = 0; i < nspec; i++) {
    if (kind[i] == 2) {
      s[nd] = 1;
      ns[nd++] = 0;
      continue;
    }
    long n = x.s[d];
    if (kind[i] == 0) {
      long k = a[i] < 0 ? a[i] + n : a[i];
      if (k < 0 || k >= n)
        kt_fail("index out of range");
      base += k * xs[d++];
      continue;
    }
    long t = st[i] ? st[i] : 1;
    long from = a[i] < 0 ? a[i] + n : a[i], to = b[i] < 0 ? b[i] + n : b[i];
    from = from < 0 ? 0 : from > n ? n : from;
    to = to < 0 ? 0 : to > n ? n : to;
    s[nd] = to > from ? (to - from + t - 1) / t : 0;
    lo[nd] = from;
    step[nd] = t;
    base += from * xs[d];
    ns[nd++] = xs[d] * t;
    d++;
  }
  for (; d < x.nd; d++) {
    s[nd] = x.s[d];
    ns[nd++] = xs[d];
  }
  (void)lo;
  (void)step;
  kt r = kt_new(nd, s);
  long n = kt_numel(&r);
  for (long o = 0; o < n; o++) {
    long off = base;
    for (int i = 0; i < nd; i++)
      off += idx[i] * ns[i];
    r.d[o] = x.d[off];
    for (int i = nd - 1; i >= 0; i--) {
      if (++idx[i] < s[i])
        break;
      idx[i] = 0;
    }
  }
  return r;
}

/* torch.triu (upper 1) / torch.tril (upper 0) of the last two dims, diagonal k */
static inline kt kt_tri(kt x, long k, int upper) {
  kt r = kt_copy(x);
  long R = x.s[x.nd - 2], C = x.s[x.nd - 1], n = kt_numel(&x);
  for (long o = 0; o < n; o++) {
    long i = (o / C) % R, j = o % C;
    if (upper ? j - i < k : j - i > k)
      r.d[o] = 0;
  }
  return r;
}

/* torch.diag: a vector to a square matrix, a matrix to its diagonal (offset 0) */
static inline kt kt_diag(kt x) {
  if (x.nd == 1) {
    long n = x.s[0], s[2] = {n, n};
    kt r = kt_new(2, s);
    memset(r.d, 0, (size_t)(n * n) * sizeof(float));
    for (long i = 0; i < n; i++)
      r.d[i * n + i] = x.d[i];
    return r;
  }
  long n = x.s[0] < x.s[1] ? x.s[0] : x.s[1];
  kt r = kt_new(1, &n);
  for (long i = 0; i < n; i++)
    r.d[i] = x.d[i * x.s[1] + i];
  return r;
}

/* ---- elementwise ---- */

enum {
  KU_RELU, KU_SIGMOID, KU_TANH, KU_EXP, KU_LOG, KU_SQRT, KU_RSQRT, KU_ABS, KU_NEG,
  KU_GELU, KU_GELU_TANH, KU_SILU, KU_MISH, KU_SOFTPLUS, KU_SOFTSIGN, KU_ELU, KU_SELU,
  KU_LEAKY, KU_CLAMP, KU_HARDSIGMOID, KU_HARDSWISH, KU_ERF, KU_SIN, KU_COS, KU_RECIP,
  KU_POW, KU_RPOW, KU_FLOOR, KU_CEIL, KU_ROUND, KU_SIGN, KU_LOG1P, KU_EXPM1, KU_LOG2,
  KU_LOGSIGMOID, KU_TANHSHRINK, KU_SQUARE, KU_HUBER
};

static inline float kt_u1(int op, float x, double a, double b) {
  switch (op) {
  case KU_RELU: return x > 0 ? x : 0;
  case KU_SIGMOID: return (float)(1.0 / (1.0 + exp(-(double)x)));
  case KU_TANH: return tanhf(x);
  case KU_EXP: return expf(x);
  case KU_LOG: return logf(x);
  case KU_LOG2: return log2f(x);
  case KU_SQRT: return sqrtf(x);
  case KU_RSQRT: return 1.0f / sqrtf(x);
  case KU_ABS: return fabsf(x);
  case KU_NEG: return -x;
  case KU_GELU: return (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
  case KU_GELU_TANH:
    return (float)(0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
  case KU_SILU: return (float)(x / (1.0 + exp(-(double)x)));
  case KU_MISH: return (float)(x * tanh(x * a > b ? x : log1p(exp(x))));
  case KU_SOFTPLUS: return (float)(x * a > b ? x : log1p(exp(a * x)) / a);
  case KU_SOFTSIGN: return x / (1 + fabsf(x));
  case KU_ELU: return x > 0 ? x : (float)(a * expm1((double)x));
  case KU_SELU:
    return (float)(1.0507009873554804934193349852946 *
                   (x > 0 ? x : 1.6732632423543772848170429916717 * expm1((double)x)));
  case KU_LEAKY: return x > 0 ? x : (float)(a * x);
  case KU_CLAMP: return x < a ? (float)a : x > b ? (float)b : x;
  case KU_HARDSIGMOID: return x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + 0.5f;
  case KU_HARDSWISH: return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
  case KU_ERF: return erff(x);
  case KU_SIN: return sinf(x);
  case KU_COS: return cosf(x);
  case KU_RECIP: return 1.0f / x;
  case KU_POW: return (float)pow((double)x, a);
  case KU_RPOW: return (float)pow(a, (double)x);
  case KU_FLOOR: return floorf(x);
  case KU_CEIL: return ceilf(x);
  case KU_ROUND: return nearbyintf(x);
  case KU_SIGN: return (float)((x > 0) - (x < 0));
  case KU_LOG1P: return log1pf(x);
  case KU_EXPM1: return expm1f(x);
  case KU_LOGSIGMOID: return (float)(x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)));
  case KU_TANHSHRINK: return x - tanhf(x);
  case KU_SQUARE: return x * x;
  case KU_HUBER: return fabsf(x) < a ? (float)(0.5 * x * x / a) : (float)(fabsf(x) - 0.5 * a);
  }
  return x;
}

static inline kt kt_unary(kt x, int op, double a, double b) {
  kt r = kt_like(&x);
  long n = kt_numel(&x);
  for (long i = 0; i < n; i++)
    r.d[i] = kt_u1(op, x.d[i], a, b);
  return r;
}

enum { KB_ADD, KB_SUB, KB_MUL, KB_DIV, KB_MAX, KB_MIN, KB_POW, KB_GT, KB_LT, KB_GE, KB_LE,
       KB_EQ, KB_NE, KB_FDIV, KB_REM, KB_KLDIV };

static inline float kt_b1(int op, float x, float y) {
  switch (op) {
  case KB_ADD: return x + y;
  case KB_SUB: return x - y;
  case KB_MUL: return x * y;
  case KB_DIV: return x / y;
  case KB_MAX: return x > y || x != x ? x : y;
  case KB_MIN: return x < y || x != x ? x : y;
  case KB_POW: return powf(x, y);
  case KB_GT: return x > y;
  case KB_LT: return x < y;
  case KB_GE: return x >= y;
  case KB_LE: return x <= y;
  case KB_EQ: return x == y;
  case KB_NE: return x != y;
  case KB_FDIV: return floorf(x / y);
  case KB_REM: return x - floorf(x / y) * y;
  case KB_KLDIV: return y > 0 ? (float)(y * (log((double)y) - x)) : 0.0f; /* x log-probs, y probs */
  }
  return x;
}

/* Broadcasting as torch does it (shapes aligned at the right). */
static inline kt kt_binary(kt x, kt y, int op) {
  int nd = x.nd > y.nd ? x.nd : y.nd;
  long s[KT_MAXD], sx[KT_MAXD], sy[KT_MAXD], idx[KT_MAXD] = {0};
  long ax = 1, ay = 1;
  for (int i = nd - 1; i >= 0; i--) {
    int ix = i - (nd - x.nd), iy = i - (nd - y.nd);
    long dx = ix >= 0 ? x.s[ix] : 1, dy = iy >= 0 ? y.s[iy] : 1;
    if (dx != dy && dx != 1 && dy != 1)
      kt_fail("binary: shapes do not broadcast");
    s[i] = dx == 1 ? dy : dx;
    sx[i] = dx == 1 ? 0 : ax;
    sy[i] = dy == 1 ? 0 : ay;
    ax *= dx;
    ay *= dy;
  }
  kt r = kt_new(nd, s);
  long n = kt_numel(&r);
  if (kt_numel(&x) == n && kt_numel(&y) == n) {
    for (long i = 0; i < n; i++)
      r.d[i] = kt_b1(op, x.d[i], y.d[i]);
    return r;
  }
  long last = nd ? s[nd - 1] : 1, lx = nd ? sx[nd - 1] : 0, ly = nd ? sy[nd - 1] : 0;
  for (long o = 0; o < n; o += last) {
    long offx = 0, offy = 0;
    for (int i = 0; i < nd - 1; i++) {
      offx += idx[i] * sx[i];
      offy += idx[i] * sy[i];
    }
    for (long j = 0; j < last; j++)
      r.d[o + j] = kt_b1(op, x.d[offx + j * lx], y.d[offy + j * ly]);
    for (int i = nd - 2; i >= 0; i--) {
      if (++idx[i] < s[i])
        break;
      idx[i] = 0;
    }
  }
  return r;
}

static inline kt kt_binary_s(kt x, double v, int op, int swap) {
  kt r = kt_like(&x);
  long n = kt_numel(&x);
  for (long i = 0; i < n; i++)
    r.d[i] = swap ? kt_b1(op, (float)v, x.d[i]) : kt_b1(op, x.d[i], (float)v);
  return r;
}

static inline kt kt_zeros(int nd, const long *s) {
  kt r = kt_new(nd, s);
  memset(r.d, 0, (size_t)kt_numel(&r) * sizeof(float));
  return r;
}

/* torch.where(c, x, y): the three broadcast to one shape, then selected */
static inline kt kt_where(kt c, kt x, kt y) {
  kt z = kt_binary(kt_binary(kt_zeros(c.nd, c.s), kt_zeros(x.nd, x.s), KB_ADD),
                   kt_zeros(y.nd, y.s), KB_ADD);
  kt cc = kt_binary(c, z, KB_ADD), xx = kt_binary(x, z, KB_ADD), yy = kt_binary(y, z, KB_ADD);
  long n = kt_numel(&z);
  for (long i = 0; i < n; i++)
    z.d[i] = cc.d[i] != 0 ? xx.d[i] : yy.d[i];
  return z;
}

/* ---- matrix products ---- */

/* C[m][n] (+)= sum_k A[m*ra + k*ca] * B[k*rb + n*cb] */
static inline void kt_gemm(const float *A, long ra, long ca, const float *B, long rb, long cb, float *C,
                    long M, long N, long K) {
  /* rows in parallel where the build has OpenMP (the cpu surface's -fopenmp): each row is one
   * thread's, so the sums are the same in any schedule */
#pragma omp parallel for schedule(static) if (M * N * K > (1L << 22))
  for (long m = 0; m < M; m++) {
    float *c = C + m * N;
    for (long n = 0; n < N; n++)
      c[n] = 0;
    for (long k = 0; k < K; k++) {
      float a = A[m * ra + k * ca];
      const float *b = B + k * rb;
      if (cb == 1)
        for (long n = 0; n < N; n++)
          c[n] += a * b[n];
      else
        for (long n = 0; n < N; n++)
          c[n] += a * b[n * cb];
    }
  }
}

/* torch.matmul: 1-d and n-d operands, batch dims broadcast. */
static inline kt kt_matmul(kt a, kt b) {
  int va = a.nd == 1, vb = b.nd == 1;
  if (va)
    a = kt_unsqueeze(a, 0);
  if (vb)
    b = kt_unsqueeze(b, 1);
  long M = a.s[a.nd - 2], K = a.s[a.nd - 1], N = b.s[b.nd - 1];
  if (b.s[b.nd - 2] != K)
    kt_fail("matmul: inner sizes differ");
  int bd = (a.nd > b.nd ? a.nd : b.nd) - 2;
  long s[KT_MAXD], batch = 1;
  for (int i = 0; i < bd; i++) {
    int ia = i - (bd - (a.nd - 2)), ib = i - (bd - (b.nd - 2));
    long da = ia >= 0 ? a.s[ia] : 1, db = ib >= 0 ? b.s[ib] : 1;
    s[i] = da == 1 ? db : da;
    batch *= s[i];
  }
  s[bd] = M;
  s[bd + 1] = N;
  kt r = kt_new(bd + 2, s);
  for (long t = 0; t < batch; t++) {
    long rem = t, oa = 0, ob = 0, ma = M * K, mb = K * N;
    for (int i = bd - 1; i >= 0; i--) {
      long id = rem % s[i];
      rem /= s[i];
      int ia = i - (bd - (a.nd - 2)), ib = i - (bd - (b.nd - 2));
      if (ia >= 0) {
        oa += (a.s[ia] == 1 ? 0 : id) * ma;
        ma *= a.s[ia];
      }
      if (ib >= 0) {
        ob += (b.s[ib] == 1 ? 0 : id) * mb;
        mb *= b.s[ib];
      }
    }
    kt_gemm(a.d + oa, K, 1, b.d + ob, N, 1, r.d + t * M * N, M, N, K);
  }
  if (va)
    r = kt_squeeze(r, -2);
  if (vb)
    r = kt_squeeze(r, -1);
  return r;
}

/* x @ w.T + b (nn.Linear); has_b 0 without bias. w is transposed once so
 * that kt_gemm's inner loop runs over contiguous outputs. */
static inline kt kt_linear(kt x, kt w, kt b, int has_b) {
  long K = x.s[x.nd - 1], N = w.s[0], M = kt_numel(&x) / (K ? K : 1);
  long s[KT_MAXD];
  for (int i = 0; i < x.nd - 1; i++)
    s[i] = x.s[i];
  s[x.nd - 1] = N;
  kt r = kt_new(x.nd, s);
  float *wt = (float *)kt_alloc((size_t)(K * N ? K * N : 1) * sizeof(float));
  for (long n = 0; n < N; n++)
    for (long k = 0; k < K; k++)
      wt[k * N + n] = w.d[n * K + k];
  kt_gemm(x.d, K, 1, wt, N, 1, r.d, M, N, K);
  if (has_b)
    for (long m = 0; m < M; m++)
      for (long n = 0; n < N; n++)
        r.d[m * N + n] += b.d[n];
  return r;
}

/* ---- reductions along one dim: outer x len x inner ---- */

enum { KR_SUM, KR_MEAN, KR_MAX, KR_MIN, KR_PROD, KR_ARGMAX, KR_ARGMIN, KR_VAR, KR_STD,
       KR_LOGSUMEXP, KR_NORM2, KR_ANY, KR_ALL };

static inline void kt_split(const kt *x, int d, long *outer, long *len, long *inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < d; i++)
    *outer *= x->s[i];
  for (int i = d + 1; i < x->nd; i++)
    *inner *= x->s[i];
  *len = x->s[d];
}

static inline kt kt_reduce1(kt x, int d, int keep, int op, double corr) {
  d = kt_dim(d, x.nd);
  long outer, len, inner, s[KT_MAXD];
  kt_split(&x, d, &outer, &len, &inner);
  int n = 0;
  for (int i = 0; i < x.nd; i++)
    if (i != d)
      s[n++] = x.s[i];
    else if (keep)
      s[n++] = 1;
  kt r = kt_new(n, s);
  for (long o = 0; o < outer; o++)
    for (long i = 0; i < inner; i++) {
      const float *p = x.d + o * len * inner + i;
      double acc = op == KR_PROD || op == KR_ALL ? 1 : 0, best = p[0], mu = 0;
      long at = 0;
      for (long k = 0; k < len; k++)
        mu += p[k * inner];
      mu /= len ? len : 1;
      for (long k = 0; k < len; k++) {
        double v = p[k * inner];
        switch (op) {
        case KR_SUM: case KR_MEAN: acc += v; break;
        case KR_PROD: acc *= v; break;
        case KR_MAX: case KR_ARGMAX: if (v > best || v != v) { best = v; at = k; } break;
        case KR_MIN: case KR_ARGMIN: if (v < best || v != v) { best = v; at = k; } break;
        case KR_VAR: case KR_STD: acc += (v - mu) * (v - mu); break;
        case KR_NORM2: acc += v * v; break;
        case KR_ANY: acc = acc || v != 0; break;
        case KR_ALL: acc = acc && v != 0; break;
        case KR_LOGSUMEXP: if (v > best) best = v; break;
        }
      }
      if (op == KR_LOGSUMEXP) {
        for (long k = 0; k < len; k++)
          acc += exp(p[k * inner] - best);
        acc = best + log(acc);
      }
      float *o2 = r.d + o * inner + i;
      switch (op) {
      case KR_MEAN: *o2 = (float)(acc / len); break;
      case KR_MAX: case KR_MIN: *o2 = (float)best; break;
      case KR_ARGMAX: case KR_ARGMIN: *o2 = (float)at; break;
      case KR_VAR: *o2 = (float)(acc / (len - corr)); break;
      case KR_STD: *o2 = (float)sqrt(acc / (len - corr)); break;
      case KR_NORM2: *o2 = (float)sqrt(acc); break;
      default: *o2 = (float)acc;
      }
    }
  return r;
}

/* A reduction over several dims (mask bit i: dim i), or all (mask 0). */
static inline kt kt_reduce(kt x, long mask, int keep, int op, double corr) {
  if (!mask)
    mask = (1L << x.nd) - 1;
  if (x.nd == 0)
    return x;
  if (op == KR_MEAN || op == KR_VAR || op == KR_STD || op == KR_LOGSUMEXP || op == KR_NORM2) {
    /* one pass over the reduced dims brought together at the end */
    long perm[KT_MAXD], s[KT_MAXD], len = 1;
    int n = 0, k = 0;
    for (int i = 0; i < x.nd; i++)
      if (!(mask >> i & 1))
        perm[n++] = i;
    for (int i = 0; i < x.nd; i++)
      if (mask >> i & 1) {
        perm[n++] = i;
        len *= x.s[i];
      }
    kt p = kt_permute(x, perm);
    for (int i = 0; i < x.nd; i++)
      if (!(mask >> i & 1))
        s[k++] = x.s[i];
    s[k] = len;
    kt r = kt_reduce1(kt_view(p, k + 1, s), k, 0, op, corr);
    if (keep) {
      for (int i = 0, j = 0; i < x.nd; i++)
        s[i] = mask >> i & 1 ? 1 : r.s[j++];
      r = kt_view(r, x.nd, s);
    }
    return r;
  }
  int nd = x.nd;
  for (int i = nd - 1; i >= 0; i--)
    if (mask >> i & 1)
      x = kt_reduce1(x, i, keep, op, corr);
  return x;
}

static inline kt kt_softmax(kt x, int d, int logs) {
  if (x.nd == 0)
    return kt_scalar(logs ? 0 : 1);
  d = kt_dim(d, x.nd);
  long outer, len, inner;
  kt_split(&x, d, &outer, &len, &inner);
  kt r = kt_like(&x);
  for (long o = 0; o < outer; o++)
    for (long i = 0; i < inner; i++) {
      const float *p = x.d + o * len * inner + i;
      float *q = r.d + o * len * inner + i;
      float m = -INFINITY;
      double sum = 0;
      for (long k = 0; k < len; k++)
        m = p[k * inner] > m ? p[k * inner] : m;
      for (long k = 0; k < len; k++)
        sum += exp((double)p[k * inner] - m);
      for (long k = 0; k < len; k++)
        q[k * inner] = logs ? (float)(p[k * inner] - m - log(sum))
                            : (float)(exp((double)p[k * inner] - m) / sum);
    }
  return r;
}

static inline kt kt_cum(kt x, int d, int prod) {
  d = kt_dim(d, x.nd);
  long outer, len, inner;
  kt_split(&x, d, &outer, &len, &inner);
  kt r = kt_like(&x);
  for (long o = 0; o < outer; o++)
    for (long i = 0; i < inner; i++) {
      double acc = prod;
      for (long k = 0; k < len; k++) {
        long at = o * len * inner + k * inner + i;
        acc = prod ? acc * x.d[at] : acc + x.d[at];
        r.d[at] = (float)acc;
      }
    }
  return r;
}

static inline kt kt_flip(kt x, int d) {
  d = kt_dim(d, x.nd);
  long outer, len, inner;
  kt_split(&x, d, &outer, &len, &inner);
  kt r = kt_like(&x);
  for (long o = 0; o < outer; o++)
    for (long k = 0; k < len; k++)
      memcpy(r.d + (o * len + k) * inner, x.d + (o * len + len - 1 - k) * inner,
             (size_t)inner * sizeof(float));
  return r;
}

/* F.cross_entropy of logits x (N, C) and class indices t (N, as float):
 * the mean of logsumexp(x[n]) - x[n][t[n]]. */
static inline kt kt_cross_entropy(kt x, kt t) {
  long N = x.s[0], C = x.nd > 1 ? x.s[1] : 1;
  double acc = 0;
  for (long n = 0; n < N; n++) {
    const float *row = x.d + n * C;
    float m = -INFINITY;
    double sum = 0;
    for (long c = 0; c < C; c++)
      m = row[c] > m ? row[c] : m;
    for (long c = 0; c < C; c++)
      sum += exp((double)row[c] - m);
    long k = (long)t.d[n];
    if (k < 0 || k >= C)
      kt_fail("cross_entropy: a target outside the classes");
    acc += m + log(sum) - row[k];
  }
  return kt_scalar(acc / (N ? N : 1));
}

/* ---- normalization ---- */

/* Per channel (dim 1) of x: batch norm with the batch's statistics
 * (training) or the running ones. */
static inline kt kt_batch_norm(kt x, kt rm, kt rv, kt w, kt b, int has_rm, int has_w, int training,
                        double eps) {
  long C = x.nd > 1 ? x.s[1] : 1, N = x.s[0], inner = 1;
  for (int i = 2; i < x.nd; i++)
    inner *= x.s[i];
  kt r = kt_like(&x);
  for (long c = 0; c < C; c++) {
    double mu, var;
    if (training || !has_rm) {
      double s = 0, q = 0;
      for (long n = 0; n < N; n++)
        for (long i = 0; i < inner; i++)
          s += x.d[(n * C + c) * inner + i];
      mu = s / (N * inner);
      for (long n = 0; n < N; n++)
        for (long i = 0; i < inner; i++) {
          double v = x.d[(n * C + c) * inner + i] - mu;
          q += v * v;
        }
      var = q / (N * inner);
    } else {
      mu = rm.d[c];
      var = rv.d[c];
    }
    double sc = 1 / sqrt(var + eps), g = has_w ? w.d[c] : 1, be = has_w ? b.d[c] : 0;
    for (long n = 0; n < N; n++)
      for (long i = 0; i < inner; i++) {
        long at = (n * C + c) * inner + i;
        r.d[at] = (float)((x.d[at] - mu) * sc * g + be);
      }
  }
  return r;
}

/* Normalizes groups of `len` consecutive elements; the affine params are
 * indexed by (element / wdiv) % wmod. */
static inline kt kt_group_stats_norm(kt x, long len, kt w, kt b, int has_w, int has_b, long wdiv,
                              long wmod, double eps) {
  kt r = kt_like(&x);
  long n = kt_numel(&x);
  for (long g = 0; g < n; g += len) {
    double s = 0, q = 0;
    for (long k = 0; k < len; k++)
      s += x.d[g + k];
    double mu = s / len;
    for (long k = 0; k < len; k++)
      q += (x.d[g + k] - mu) * (x.d[g + k] - mu);
    double sc = 1 / sqrt(q / len + eps);
    for (long k = 0; k < len; k++) {
      long c = ((g + k) / wdiv) % wmod;
      r.d[g + k] = (float)((x.d[g + k] - mu) * sc * (has_w ? w.d[c] : 1) + (has_b ? b.d[c] : 0));
    }
  }
  return r;
}

static inline kt kt_layer_norm(kt x, int nnorm, kt w, kt b, int has_w, int has_b, double eps) {
  long len = 1;
  for (int i = x.nd - nnorm; i < x.nd; i++)
    len *= x.s[i];
  return kt_group_stats_norm(x, len, w, b, has_w, has_b, 1, len, eps);
}

static inline kt kt_group_norm(kt x, long G, kt w, kt b, int has_w, double eps) {
  long C = x.s[1], inner = 1;
  for (int i = 2; i < x.nd; i++)
    inner *= x.s[i];
  return kt_group_stats_norm(x, C / G * inner, w, b, has_w, has_w, inner, C, eps);
}

/* ---- convolution and pooling: (N, C, D, H, W) with D, H of 1 where absent ---- */

typedef struct {
  long k[3], st[3], pad[3], dil[3], opad[3];
} kt_win;

static inline void kt_as5(const kt *x, long *s5, int sp) {
  s5[0] = x->s[0];
  s5[1] = x->s[1];
  for (int i = 0; i < 3; i++)
    s5[2 + i] = i < 3 - sp ? 1 : x->s[2 + i - (3 - sp)];
}

static inline kt kt_from5(const long *s5, int sp) {
  long s[5];
  s[0] = s5[0];
  s[1] = s5[1];
  for (int i = 0; i < sp; i++)
    s[2 + i] = s5[5 - sp + i];
  return kt_new(2 + sp, s);
}

/* w: (Cout, Cin/groups, k...) ; sp spatial dims (1-3); window params given
 * for the sp dims, last aligned. Per image and group the input's windows
 * are laid out as columns (im2col) and multiplied by the weights (kt_gemm,
 * whose inner loop runs over contiguous output positions). */
static inline kt kt_conv(kt x, kt w, kt b, int has_b, int sp, kt_win p, long groups) {
  long xs[5], ws[5], os[5];
  kt_as5(&x, xs, sp);
  kt_as5(&w, ws, sp);
  long Cout = ws[0], Cg = ws[1], Og = Cout / groups;
  os[0] = xs[0];
  os[1] = Cout;
  for (int i = 0; i < 3; i++)
    os[2 + i] = (xs[2 + i] + 2 * p.pad[i] - p.dil[i] * (ws[2 + i] - 1) - 1) / p.st[i] + 1;
  kt r = kt_from5(os, sp);
  long P = os[2] * os[3] * os[4], KK = ws[2] * ws[3] * ws[4], K = Cg * KK;
  float *col = (float *)kt_alloc((size_t)(K * P ? K * P : 1) * sizeof(float));
  for (long n = 0; n < os[0]; n++)
    for (long g = 0; g < groups; g++) {
      for (long ci = 0; ci < Cg; ci++)
        for (long kd = 0; kd < ws[2]; kd++)
          for (long kh = 0; kh < ws[3]; kh++)
            for (long kw = 0; kw < ws[4]; kw++) {
              float *c = col + ((ci * ws[2] + kd) * ws[3] + kh) * ws[4] * P + kw * P;
              const float *xc = x.d + (n * xs[1] + g * Cg + ci) * xs[2] * xs[3] * xs[4];
              long at = 0;
              for (long od = 0; od < os[2]; od++) {
                long id = od * p.st[0] - p.pad[0] + kd * p.dil[0];
                for (long oh = 0; oh < os[3]; oh++) {
                  long ih = oh * p.st[1] - p.pad[1] + kh * p.dil[1];
                  int row = id >= 0 && id < xs[2] && ih >= 0 && ih < xs[3];
                  const float *xr = xc + (id * xs[3] + ih) * xs[4];
                  for (long ow = 0; ow < os[4]; ow++, at++) {
                    long iw = ow * p.st[2] - p.pad[2] + kw * p.dil[2];
                    c[at] = row && iw >= 0 && iw < xs[4] ? xr[iw] : 0.0f;
                  }
                }
              }
            }
      float *o = r.d + (n * Cout + g * Og) * P;
      kt_gemm(w.d + g * Og * K, K, 1, col, P, 1, o, Og, P, K);
      for (long co = 0; co < Og; co++)
        for (long i = 0; i < P; i++)
          o[co * P + i] += has_b ? b.d[g * Og + co] : 0.0f;
    }
  return r;
}

/* w: (Cin, Cout/groups, k...) */
static inline kt kt_conv_t(kt x, kt w, kt b, int has_b, int sp, kt_win p, long groups) {
  long xs[5], ws[5], os[5];
  kt_as5(&x, xs, sp);
  kt_as5(&w, ws, sp);
  long Cin = xs[1], Cig = Cin / groups, Og = ws[1], Cout = Og * groups;
  os[0] = xs[0];
  os[1] = Cout;
  for (int i = 0; i < 3; i++)
    os[2 + i] = (xs[2 + i] - 1) * p.st[i] - 2 * p.pad[i] + p.dil[i] * (ws[2 + i] - 1) +
                p.opad[i] + 1;
  kt r = kt_from5(os, sp);
  long per = os[2] * os[3] * os[4];
  for (long n = 0; n < os[0]; n++)
    for (long co = 0; co < Cout; co++)
      for (long i = 0; i < per; i++)
        r.d[(n * Cout + co) * per + i] = has_b ? b.d[co] : 0;
  for (long n = 0; n < xs[0]; n++)
    for (long ci = 0; ci < Cin; ci++) {
      long g = ci / Cig;
      for (long id = 0; id < xs[2]; id++)
        for (long ih = 0; ih < xs[3]; ih++)
          for (long iw = 0; iw < xs[4]; iw++) {
            float v = x.d[(((n * Cin + ci) * xs[2] + id) * xs[3] + ih) * xs[4] + iw];
            for (long oc = 0; oc < Og; oc++)
              for (long kd = 0; kd < ws[2]; kd++) {
                long od = id * p.st[0] - p.pad[0] + kd * p.dil[0];
                if (od < 0 || od >= os[2])
                  continue;
                for (long kh = 0; kh < ws[3]; kh++) {
                  long oh = ih * p.st[1] - p.pad[1] + kh * p.dil[1];
                  if (oh < 0 || oh >= os[3])
                    continue;
                  for (long kw = 0; kw < ws[4]; kw++) {
                    long ow = iw * p.st[2] - p.pad[2] + kw * p.dil[2];
                    if (ow < 0 || ow >= os[4])
                      continue;
                    long co = g * Og + oc;
                    r.d[(((n * Cout + co) * os[2] + od) * os[3] + oh) * os[4] + ow] +=
                        v * w.d[(((ci * Og + oc) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw];
                  }
                }
              }
          }
    }
  return r;
}

static inline long kt_pool_out(long in, long k, long st, long pad, long dil, int ceil_mode) {
  long num = in + 2 * pad - dil * (k - 1) - 1;
  long o = (ceil_mode ? (num + st - 1) / st : num / st) + 1;
  if (ceil_mode && (o - 1) * st >= in + pad)
    o--;
  return o;
}

/* avg: 0 max, 1 avg counting padding, 2 avg without it */
static inline kt kt_pool(kt x, int sp, kt_win p, int avg, int ceil_mode, long divisor) {
  long xs[5], os[5];
  kt_as5(&x, xs, sp);
  os[0] = xs[0];
  os[1] = xs[1];
  for (int i = 0; i < 3; i++)
    os[2 + i] = kt_pool_out(xs[2 + i], p.k[i], p.st[i], p.pad[i], p.dil[i], ceil_mode);
  kt r = kt_from5(os, sp);
  for (long nc = 0; nc < os[0] * os[1]; nc++)
    for (long od = 0; od < os[2]; od++)
      for (long oh = 0; oh < os[3]; oh++)
        for (long ow = 0; ow < os[4]; ow++) {
          double acc = avg ? 0 : -INFINITY;
          long cnt = 0, cntpad = 0;
          long o3[3] = {od, oh, ow};
          long lo[3], hi[3];
          for (int i = 0; i < 3; i++) {
            lo[i] = o3[i] * p.st[i] - p.pad[i];
            hi[i] = lo[i] + (p.k[i] - 1) * p.dil[i] + 1;
            long e = xs[2 + i] + p.pad[i];
            cntpad = i ? cntpad * ((hi[i] < e ? hi[i] : e) - lo[i]) : (hi[i] < e ? hi[i] : e) - lo[i];
          }
          for (long kd = 0; kd < p.k[0]; kd++)
            for (long kh = 0; kh < p.k[1]; kh++)
              for (long kw = 0; kw < p.k[2]; kw++) {
                long id = lo[0] + kd * p.dil[0], ih = lo[1] + kh * p.dil[1],
                     iw = lo[2] + kw * p.dil[2];
                if (id < 0 || ih < 0 || iw < 0 || id >= xs[2] || ih >= xs[3] || iw >= xs[4])
                  continue;
                float v = x.d[((nc * xs[2] + id) * xs[3] + ih) * xs[4] + iw];
                if (avg)
                  acc += v;
                else if (v > acc || v != v)
                  acc = v;
                cnt++;
              }
          double div = divisor ? divisor : avg == 1 ? cntpad : cnt;
          r.d[((nc * os[2] + od) * os[3] + oh) * os[4] + ow] = (float)(avg ? acc / div : acc);
        }
  return r;
}

static inline kt kt_adaptive_pool(kt x, int sp, const long *outsz, int avg) {
  long xs[5], os[5];
  kt_as5(&x, xs, sp);
  os[0] = xs[0];
  os[1] = xs[1];
  for (int i = 0; i < 3; i++)
    os[2 + i] = i < 3 - sp ? 1 : (outsz[i - (3 - sp)] > 0 ? outsz[i - (3 - sp)] : xs[2 + i]);
  kt r = kt_from5(os, sp);
  for (long nc = 0; nc < os[0] * os[1]; nc++)
    for (long od = 0; od < os[2]; od++)
      for (long oh = 0; oh < os[3]; oh++)
        for (long ow = 0; ow < os[4]; ow++) {
          long o3[3] = {od, oh, ow}, lo[3], hi[3];
          for (int i = 0; i < 3; i++) {
            lo[i] = o3[i] * xs[2 + i] / os[2 + i];
            hi[i] = ((o3[i] + 1) * xs[2 + i] + os[2 + i] - 1) / os[2 + i];
          }
          double acc = avg ? 0 : -INFINITY;
          long cnt = 0;
          for (long id = lo[0]; id < hi[0]; id++)
            for (long ih = lo[1]; ih < hi[1]; ih++)
              for (long iw = lo[2]; iw < hi[2]; iw++) {
                float v = x.d[((nc * xs[2] + id) * xs[3] + ih) * xs[4] + iw];
                acc = avg ? acc + v : (v > acc ? v : acc);
                cnt++;
              }
          r.d[((nc * os[2] + od) * os[3] + oh) * os[4] + ow] = (float)(avg ? acc / cnt : acc);
        }
  return r;
}

/* ---- the call's end ---- */

static inline void kt_store(kt x, float *out, long n) {
  if (kt_numel(&x) != n)
    kt_fail("the output has another element count than the task's");
  memcpy(out, x.d, (size_t)n * sizeof(float));
}
