/* Exact Shapley values, Harsanyi dividends and Shapley interaction indices
 * over every coalition of at most KV_AN_MAX_PLAYERS players, with bootstrap
 * intervals and a permutation test (definitions in kevo/analysis.h). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/analysis.h"
#include "kevo/util.h"

static int popcount(unsigned x) {
  int c = 0;
  for (; x; x &= x - 1)
    c++;
  return c;
}

int kv_harsanyi(int n, const double *v, double *d) {
  if (n < 1 || n > KV_AN_MAX_PLAYERS)
    return -1;
  unsigned ns = 1u << n;
  for (unsigned S = 0; S < ns; S++) {
    double s = 0;
    for (unsigned T = S;; T = (T - 1) & S) {
      s += ((popcount(S) - popcount(T)) & 1 ? -1.0 : 1.0) * v[T];
      if (T == 0)
        break;
    }
    d[S] = s;
  }
  return 0;
}

int kv_interaction_index(int n, const double *v, double *I) {
  double d[KV_AN_MAX_COAL];
  if (kv_harsanyi(n, v, d) < 0)
    return -1;
  unsigned ns = 1u << n;
  for (unsigned S = 0; S < ns; S++) {
    double s = 0;
    for (unsigned T = 0; T < ns; T++)
      if ((T & S) == S)
        s += d[T] / (double)(popcount(T) - popcount(S) + 1);
    I[S] = s;
  }
  return 0;
}

int kv_shapley(int n, const double *v, double *phi) {
  if (n < 1 || n > KV_AN_MAX_PLAYERS)
    return -1;
  /* phi_i = sum over S without i of |S|! (n-|S|-1)! / n! (v(S+i) - v(S)) */
  double fact[KV_AN_MAX_PLAYERS + 1];
  fact[0] = 1;
  for (int i = 1; i <= n; i++)
    fact[i] = fact[i - 1] * i;
  unsigned ns = 1u << n;
  for (int i = 0; i < n; i++) {
    double s = 0;
    for (unsigned S = 0; S < ns; S++)
      if (!(S & (1u << i))) {
        int k = popcount(S);
        s += fact[k] * fact[n - k - 1] / fact[n] * (v[S | (1u << i)] - v[S]);
      }
    phi[i] = s;
  }
  return 0;
}

/* ---- sampled data --------------------------------------------------------- */

static uint64_t rnd(uint64_t *x) {
  return kv_splitmix64(x);
}
static int below(uint64_t *x, int n) {
  return n > 0 ? (int)(rnd(x) % (uint64_t)n) : 0;
}

/* Values from a data cube with ncell cells per node, nodes taken from idx. */
static void values_of(const double *y, int nnodes, int ncell, int k, const int *idx, int nidx,
                      double *v) {
  for (int S = 0; S < ncell; S++) {
    double tot = 0;
    int m = 0;
    for (int a = 0; a < nidx; a++) {
      int node = idx ? idx[a] : a;
      const double *c = y + ((size_t)node * (size_t)ncell + (size_t)S) * (size_t)k;
      double s = 0;
      int q = 0;
      for (int j = 0; j < k; j++)
        if (!isnan(c[j])) {
          s += c[j];
          q++;
        }
      if (q) {
        tot += s / q;
        m++;
      }
    }
    v[S] = m ? tot / m : NAN;
  }
  (void)nnodes;
}

void kv_an_values(const struct kv_an_data *d, double *v) {
  values_of(d->y, d->nnodes, 1 << d->n, d->k, NULL, d->nnodes, v);
}

/* A bootstrap replicate of the cube into out: nodes with replacement, then
 * each cell's present samples with replacement. */
static void resample(const double *y, int nnodes, int ncell, int k, uint64_t *rng, double *out) {
  for (int a = 0; a < nnodes; a++) {
    int node = below(rng, nnodes);
    for (int S = 0; S < ncell; S++) {
      const double *c = y + ((size_t)node * (size_t)ncell + (size_t)S) * (size_t)k;
      double *o = out + ((size_t)a * (size_t)ncell + (size_t)S) * (size_t)k;
      int present[256], q = 0;
      for (int j = 0; j < k && q < 256; j++)
        if (!isnan(c[j]))
          present[q++] = j;
      for (int j = 0; j < k; j++)
        o[j] = q ? c[present[below(rng, q)]] : NAN;
    }
  }
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* 2.5% and 97.5% percentiles of xs[0..n) (sorted in place); NaNs dropped. */
static void pct(double *xs, int n, double *lo, double *hi) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(xs[i]))
      xs[m++] = xs[i];
  if (!m) {
    *lo = *hi = NAN;
    return;
  }
  qsort(xs, (size_t)m, sizeof *xs, cmp_d);
  int a = (int)floor(0.025 * (m - 1)), b = (int)ceil(0.975 * (m - 1));
  *lo = xs[a];
  *hi = xs[b];
}

int kv_an_attribute(const struct kv_an_data *d, int B, int P, uint64_t seed, struct kv_an_attr *out,
                    char *err, size_t errlen) {
  int n = d->n, ns = 1 << n, k = d->k, nn = d->nnodes;
  if (n < 1 || n > KV_AN_MAX_PLAYERS)
    return kv_error(err, errlen, "attribution: %d players; between 1 and %d can be attributed", n,
                    KV_AN_MAX_PLAYERS);
  if (nn < 1 || k < 1 || k > 256)
    return kv_error(err, errlen, "attribution: no data (%d nodes, %d samples per cell)", nn, k);
  if (B < 1)
    B = 1000;
  if (P < 1)
    P = 1000;
  memset(out, 0, sizeof *out);
  kv_an_values(d, out->v);
  for (int S = 0; S < ns; S++)
    if (isnan(out->v[S]))
      return kv_error(err, errlen,
                      "attribution: coalition %d has no sample at any node; resume the analysis "
                      "to complete it",
                      S);
  kv_shapley(n, out->v, out->phi);
  kv_interaction_index(n, out->v, out->I);
  kv_harsanyi(n, out->v, out->d);
  size_t cube = (size_t)nn * (size_t)ns * (size_t)k;
  double *tmp = malloc(cube * sizeof *tmp);
  double *bphi = malloc((size_t)B * (size_t)n * sizeof *bphi);
  double *bI = malloc((size_t)B * (size_t)ns * sizeof *bI);
  double *bd = malloc((size_t)B * (size_t)ns * sizeof *bd);
  double *col = malloc((size_t)(B > P ? B : P) * sizeof *col);
  if (!tmp || !bphi || !bI || !bd || !col) {
    free(tmp), free(bphi), free(bI), free(bd), free(col);
    return kv_error(err, errlen, "attribution: out of memory");
  }
  uint64_t rng = seed ^ 0x616e616c79736973ull;
  for (int b = 0; b < B; b++) {
    double v[KV_AN_MAX_COAL], phi[KV_AN_MAX_PLAYERS], I[KV_AN_MAX_COAL], dd[KV_AN_MAX_COAL];
    resample(d->y, nn, ns, k, &rng, tmp);
    values_of(tmp, nn, ns, k, NULL, nn, v);
    int bad = 0;
    for (int S = 0; S < ns; S++)
      bad |= isnan(v[S]);
    kv_shapley(n, v, phi);
    kv_interaction_index(n, v, I);
    kv_harsanyi(n, v, dd);
    for (int i = 0; i < n; i++)
      bphi[(size_t)b * n + i] = bad ? NAN : phi[i];
    for (int S = 0; S < ns; S++) {
      bI[(size_t)b * ns + S] = bad ? NAN : I[S];
      bd[(size_t)b * ns + S] = bad ? NAN : dd[S];
    }
  }
  for (int i = 0; i < n; i++) {
    for (int b = 0; b < B; b++)
      col[b] = bphi[(size_t)b * n + i];
    pct(col, B, &out->phi_lo[i], &out->phi_hi[i]);
  }
  for (int S = 0; S < ns; S++) {
    for (int b = 0; b < B; b++)
      col[b] = bI[(size_t)b * ns + S];
    pct(col, B, &out->I_lo[S], &out->I_hi[S]);
    for (int b = 0; b < B; b++)
      col[b] = bd[(size_t)b * ns + S];
    pct(col, B, &out->d_lo[S], &out->d_hi[S]);
  }
  /* Permutation test per player. */
  for (int i = 0; i < n; i++) {
    int hits = 0;
    double obs = fabs(out->phi[i]);
    for (int p = 0; p < P; p++) {
      memcpy(tmp, d->y, cube * sizeof *tmp);
      for (int a = 0; a < nn; a++)
        for (int S = 0; S < ns; S++) {
          if (S & (1 << i))
            continue;
          double *c0 = tmp + ((size_t)a * ns + (size_t)S) * (size_t)k;
          double *c1 = tmp + ((size_t)a * ns + (size_t)(S | (1 << i))) * (size_t)k;
          /* pool the 2k slots (missing ones move with their slot), shuffle, deal */
          double pool[512];
          for (int j = 0; j < k; j++) {
            pool[j] = c0[j];
            pool[k + j] = c1[j];
          }
          for (int j = 2 * k - 1; j > 0; j--) {
            int r = below(&rng, j + 1);
            double t = pool[j];
            pool[j] = pool[r];
            pool[r] = t;
          }
          for (int j = 0; j < k; j++) {
            c0[j] = pool[j];
            c1[j] = pool[k + j];
          }
        }
      double v[KV_AN_MAX_COAL], phi[KV_AN_MAX_PLAYERS];
      values_of(tmp, nn, ns, k, NULL, nn, v);
      kv_shapley(n, v, phi);
      /* a tolerance so that equal values computed in another order tie */
      if (!isnan(phi[i]) && fabs(phi[i]) >= obs - 1e-12)
        hits++;
    }
    out->phi_p[i] = (1.0 + hits) / (1.0 + P);
  }
  free(tmp), free(bphi), free(bI), free(bd), free(col);
  return 0;
}

void kv_an_cell_ci(const double *y, int nnodes, int ncell, int k, int cell, int B, uint64_t seed,
                   double *mean, double *lo, double *hi) {
  double v[KV_AN_MAX_COAL];
  int nc = ncell < KV_AN_MAX_COAL ? ncell : KV_AN_MAX_COAL;
  values_of(y, nnodes, nc, k, NULL, nnodes, v);
  *mean = v[cell];
  if (B < 1)
    B = 1000;
  size_t cube = (size_t)nnodes * (size_t)nc * (size_t)k;
  double *tmp = malloc(cube * sizeof *tmp), *col = malloc((size_t)B * sizeof *col);
  if (!tmp || !col || k > 256) {
    *lo = *hi = NAN;
    free(tmp), free(col);
    return;
  }
  uint64_t rng = seed ^ 0x63656c6c73ull ^ (uint64_t)cell;
  for (int b = 0; b < B; b++) {
    resample(y, nnodes, nc, k, &rng, tmp);
    double w[KV_AN_MAX_COAL];
    values_of(tmp, nnodes, nc, k, NULL, nnodes, w);
    col[b] = w[cell];
  }
  pct(col, B, lo, hi);
  free(tmp), free(col);
}

/* ---- plan vocabulary ------------------------------------------------------ */

static const struct {
  const char *name;
  const char *words; /* any of these, lowercased, '|'-separated */
} tags[KV_AN_NTAGS] = {
    {"vectorize", "vector|simd|float4|avx|sse"},
    {"unroll", "unroll"},
    {"tiling", "tile|tiling|blocking|cache block"},
    {"shared_memory", "shared memory|__shared__|smem"},
    {"parallelize", "parallel|openmp|omp |threads"},
    {"accumulators", "accumulat|lanes|partial sum"},
    {"memory_access", "coalesc|contiguous|prefetch|cache"},
    {"fusion", "fuse|fusion"},
    {"warp", "warp|shuffle|shfl"},
};

const char *kv_an_tag_name(int t) {
  return t >= 0 && t < KV_AN_NTAGS ? tags[t].name : "?";
}

unsigned kv_an_plan_tags(const char *plan) {
  if (!plan)
    return 0;
  size_t n = strnlen(plan, 64000);
  char *low = malloc(n + 1);
  if (!low)
    return 0;
  for (size_t i = 0; i < n; i++)
    low[i] = (char)tolower((unsigned char)plan[i]);
  low[n] = 0;
  unsigned m = 0;
  for (int t = 0; t < KV_AN_NTAGS; t++)
    for (const char *w = tags[t].words; *w;) {
      size_t len = strcspn(w, "|");
      char word[64];
      snprintf(word, sizeof word, "%.*s", (int)len, w);
      if (strstr(low, word))
        m |= 1u << t;
      w += len;
      if (*w == '|')
        w++;
    }
  free(low);
  return m;
}

const char *kv_an_metric_name(int m, char *buf, size_t cap) {
  static const char *const names[KV_AN_M_COUNT] = {"compile_rate", "pass_rate", "fast_rate",
                                                   "mean_log_speedup"};
  if (m >= 0 && m < KV_AN_M_COUNT)
    snprintf(buf, cap, "%s", names[m]);
  else
    snprintf(buf, cap, "plan:%s", kv_an_tag_name(m - KV_AN_M_COUNT));
  return buf;
}
