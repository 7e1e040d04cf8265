/* The paired performance test of a forward step: a percentile bootstrap of
 * the geometric-mean speedup over interleaved pairs, and the Wilcoxon
 * signed-rank test of the log ratios. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"
#include "kevo/util.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Exact two-sided p for n <= 20 by the distribution of the sum of doubled
 * (mid)ranks; a normal approximation with tie correction above. */
double kv_wilcoxon_p(const double *d, int n) {
  double a[KV_PAIRS_MAX];
  int sign[KV_PAIRS_MAX], m = 0;
  for (int i = 0; i < n && m < KV_PAIRS_MAX; i++)
    if (d[i] != 0 && isfinite(d[i])) {
      a[m] = fabs(d[i]);
      sign[m++] = d[i] > 0;
    }
  if (m == 0)
    return 1.0;
  /* doubled midranks */
  int r2[KV_PAIRS_MAX];
  double tie_term = 0;
  for (int i = 0; i < m; i++) {
    int less = 0, eq = 0;
    for (int j = 0; j < m; j++) {
      if (a[j] < a[i])
        less++;
      else if (a[j] == a[i])
        eq++;
    }
    r2[i] = 2 * less + eq + 1;       /* 2 * (less + (eq + 1) / 2) */
    tie_term += (double)eq * eq - 1; /* summed once per member: (t^3 - t) / t each */
  }
  long wplus2 = 0, total2 = 0;
  for (int i = 0; i < m; i++) {
    total2 += r2[i];
    if (sign[i])
      wplus2 += r2[i];
  }
  if (m <= 20) {
    /* count[s]: subsets whose doubled rank sum is s */
    double *count = calloc((size_t)total2 + 1, sizeof *count);
    if (!count)
      return 1.0;
    count[0] = 1;
    for (int i = 0; i < m; i++)
      for (long s = total2; s >= r2[i]; s--)
        count[s] += count[s - r2[i]];
    double all = ldexp(1.0, m), lo = 0, hi = 0;
    for (long s = 0; s <= total2; s++) {
      if (s <= wplus2)
        lo += count[s];
      if (s >= wplus2)
        hi += count[s];
    }
    free(count);
    double p = 2 * fmin(lo, hi) / all;
    return p > 1 ? 1 : p;
  }
  double w = wplus2 / 2.0, mean = m * (m + 1) / 4.0;
  double var = m * (m + 1) * (2 * m + 1) / 24.0 - tie_term / 48.0;
  if (var <= 0)
    return 1.0;
  double z = (fabs(w - mean) - 0.5) / sqrt(var);
  if (z < 0)
    z = 0;
  return erfc(z / sqrt(2.0));
}

int kv_paired_min_pairs(void) {
  int n = 1;
  while (ldexp(2.0, -n) >= KV_SKILL_ALPHA)
    n++;
  return n;
}

/* The admission rule (skills.h): enough pairs, significant, and a gain of at
 * least the minimum effect at the interval's lower end; why says which. */
static void admit(struct kv_paired *p) {
  double floor_x = 1.0 + KV_SKILL_MIN_EFFECT;
  int need = kv_paired_min_pairs();
  p->admitted = 0;
  if (p->n < need)
    snprintf(p->why, sizeof p->why,
             "not admitted: %d pairs can never be significant (the exact Wilcoxon p is 2/2^%d = "
             "%.3g at best, not below %.2g); give --pairs %d or more",
             p->n, p->n, ldexp(2.0, -p->n), KV_SKILL_ALPHA, need);
  else if (p->ci_lo < floor_x)
    snprintf(p->why, sizeof p->why,
             "not admitted: the interval's lower end %.3f is below %.2f (a gain of %.0f%% at "
             "least)",
             p->ci_lo, floor_x, 100 * KV_SKILL_MIN_EFFECT);
  else if (!(p->wilcoxon_p < KV_SKILL_ALPHA))
    snprintf(p->why, sizeof p->why, "not admitted: Wilcoxon p = %.3g is not below %.2g",
             p->wilcoxon_p, KV_SKILL_ALPHA);
  else {
    p->admitted = 1;
    snprintf(p->why, sizeof p->why,
             "admitted: the interval's lower end %.3f is at or above %.2f and p = %.3g < %.2g",
             p->ci_lo, floor_x, p->wilcoxon_p, KV_SKILL_ALPHA);
  }
}

int kv_paired_stats(const double *simple_us, const double *rich_us, int n, uint64_t seed,
                    int resamples, struct kv_paired *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (n < 2 || n > KV_PAIRS_MAX)
    return kv_error(err, errlen, "paired test: %d pairs; give 2 to %d", n, KV_PAIRS_MAX);
  if (resamples <= 0)
    resamples = 2000;
  if (resamples > 100000)
    resamples = 100000;
  double lr[KV_PAIRS_MAX], sum = 0;
  for (int i = 0; i < n; i++) {
    if (!(simple_us[i] > 0) || !(rich_us[i] > 0) || !isfinite(simple_us[i]) ||
        !isfinite(rich_us[i]))
      return kv_error(err, errlen, "paired test: pair %d has a time that is not positive", i + 1);
    out->simple_us[i] = simple_us[i];
    out->rich_us[i] = rich_us[i];
    out->ratio[i] = simple_us[i] / rich_us[i];
    lr[i] = log(out->ratio[i]);
    sum += lr[i];
  }
  out->n = n;
  out->resamples = resamples;
  out->speedup = exp(sum / n);
  double *means = malloc((size_t)resamples * sizeof *means);
  if (!means)
    return kv_error(err, errlen, "out of memory");
  uint64_t x = seed ^ 0x6b6c696e65616765ull;
  for (int b = 0; b < resamples; b++) {
    double s = 0;
    for (int i = 0; i < n; i++)
      s += lr[kv_splitmix64(&x) % (uint64_t)n];
    means[b] = s / n;
  }
  qsort(means, (size_t)resamples, sizeof *means, cmp_double);
  int lo = (int)floor(0.025 * (resamples - 1)), hi = (int)ceil(0.975 * (resamples - 1));
  out->ci_lo = exp(means[lo]);
  out->ci_hi = exp(means[hi]);
  free(means);
  out->wilcoxon_p = kv_wilcoxon_p(lr, n);
  admit(out);
  return 0;
}
