/* Online attribution: random feedback masks on a share of a run's steps, a
 * running least-squares estimate of each player's Shapley value, and the
 * decision to turn off a player that costs more than it adds (see
 * kevo/attrib.h). */
#include "kevo/attrib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/prompt.h"

static const int players_of[KV_ATTR_MAX] = {KV_PB_PERFORMANCE, KV_PB_PROFILE, KV_PB_RULES,
                                            KV_PB_HISTORY, KV_PB_STATIC};

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double unit(uint64_t *s) {
  return (double)(next(s) >> 11) / 9007199254740992.0;
}

void kv_attr_init(struct kv_attr *a, unsigned prompt_mask, const struct kv_attr_opts *o,
                  uint64_t seed) {
  memset(a, 0, sizeof *a);
  a->o = *o;
  if (!(a->o.price > 0))
    a->o.price = 0.05;
  if (a->o.patience < 1)
    a->o.patience = 3;
  for (int i = 0; i < KV_ATTR_MAX; i++)
    if (prompt_mask & (1u << players_of[i]))
      a->block[a->n++] = players_of[i];
  a->rng = seed ^ 0x6174747269627574ull;
  if (!a->rng)
    a->rng = 1;
}

void kv_attr_free(struct kv_attr *a) {
  free(a->mask);
  free(a->y);
  a->mask = NULL;
  a->y = NULL;
  a->nobs = a->cap = 0;
}

const char *kv_attr_player_name(const struct kv_attr *a, int i) {
  return i >= 0 && i < a->n ? kv_prompt_block_name(a->block[i]) : "?";
}

unsigned kv_attr_draw(struct kv_attr *a, int *randomised) {
  unsigned on = 0;
  for (int i = 0; i < a->n; i++)
    if (!a->off[i])
      on |= 1u << i;
  *randomised = 0;
  if (!on || !(a->o.share > 0) || unit(&a->rng) >= a->o.share)
    return on;
  *randomised = 1;
  unsigned m = 0;
  for (int i = 0; i < a->n; i++)
    if ((on & (1u << i)) && unit(&a->rng) < 0.5)
      m |= 1u << i;
  return m;
}

unsigned kv_attr_prompt_mask(const struct kv_attr *a, unsigned base, unsigned players) {
  for (int i = 0; i < a->n; i++) {
    base &= ~(1u << a->block[i]);
    if (players & (1u << i))
      base |= 1u << a->block[i];
  }
  return base;
}

void kv_attr_cost_seen(struct kv_attr *a, int i, size_t bytes) {
  if (i < 0 || i >= a->n)
    return;
  a->tokens[i] += (double)bytes / 3.0;
  a->measures[i]++;
}

/* Least squares of y on [1, x_0 .. x_{n-1}] by the normal equations
 * (Gauss-Jordan with partial pivoting): b, and the diagonal of (X'X)^-1 for
 * the standard errors. 0, or -1 when the design is singular. */
static int fit(const struct kv_attr *a, double *b, double *se) {
  int p = a->n + 1;
  double m[KV_ATTR_MAX + 1][2 * (KV_ATTR_MAX + 1) + 1];
  memset(m, 0, sizeof m);
  for (int k = 0; k < a->nobs; k++) {
    double x[KV_ATTR_MAX + 1];
    x[0] = 1;
    for (int i = 0; i < a->n; i++)
      x[i + 1] = (a->mask[k] >> i) & 1;
    for (int r = 0; r < p; r++) {
      for (int c = 0; c < p; c++)
        m[r][c] += x[r] * x[c];
      m[r][2 * p] += x[r] * a->y[k];
    }
  }
  for (int r = 0; r < p; r++)
    m[r][p + r] = 1; /* [X'X | I | X'y] */
  for (int c = 0; c < p; c++) {
    int piv = c;
    for (int r = c + 1; r < p; r++)
      if (fabs(m[r][c]) > fabs(m[piv][c]))
        piv = r;
    if (fabs(m[piv][c]) < 1e-9)
      return -1;
    if (piv != c)
      for (int k = 0; k <= 2 * p; k++) {
        double t = m[c][k];
        m[c][k] = m[piv][k];
        m[piv][k] = t;
      }
    double d = m[c][c];
    for (int k = 0; k <= 2 * p; k++)
      m[c][k] /= d;
    for (int r = 0; r < p; r++) {
      if (r == c || m[r][c] == 0)
        continue;
      double f = m[r][c];
      for (int k = 0; k <= 2 * p; k++)
        m[r][k] -= f * m[c][k];
    }
  }
  double rss = 0;
  for (int k = 0; k < a->nobs; k++) {
    double yh = m[0][2 * p];
    for (int i = 0; i < a->n; i++)
      yh += ((a->mask[k] >> i) & 1) * m[i + 1][2 * p];
    rss += (a->y[k] - yh) * (a->y[k] - yh);
  }
  double s2 = a->nobs > p ? rss / (a->nobs - p) : 0;
  for (int r = 0; r < p; r++) {
    b[r] = m[r][2 * p];
    se[r] = sqrt(s2 * (m[r][p + r] > 0 ? m[r][p + r] : 0));
  }
  return 0;
}

static int min_obs(const struct kv_attr *a) {
  int m = 2 * (a->n + 1);
  return m > 8 ? m : 8;
}

void kv_attr_estimate(const struct kv_attr *a, struct kv_attr_estimate *e) {
  memset(e, 0, sizeof *e);
  e->nobs = a->nobs;
  for (int i = 0; i < a->n; i++) {
    e->tokens[i] = a->measures[i] ? a->tokens[i] / a->measures[i] : 0;
    e->cost[i] = a->o.price * e->tokens[i] / 1000.0;
    e->phi[i] = e->se[i] = NAN;
  }
  double b[KV_ATTR_MAX + 1], se[KV_ATTR_MAX + 1];
  if (a->n < 1 || a->nobs < min_obs(a) || fit(a, b, se) < 0)
    return;
  e->ok = 1;
  for (int i = 0; i < a->n; i++) {
    e->phi[i] = b[i + 1];
    e->se[i] = se[i + 1];
  }
}

int kv_attr_observe(struct kv_attr *a, unsigned players, double y, int step, char *note,
                    size_t cap) {
  if (note && cap)
    note[0] = 0;
  if (a->nobs == a->cap) {
    if (a->cap >= KV_ATTR_OBS)
      return -1;
    int nc = a->cap ? 2 * a->cap : 64;
    unsigned *m = realloc(a->mask, (size_t)nc * sizeof *m);
    if (!m)
      return -1;
    a->mask = m;
    double *v = realloc(a->y, (size_t)nc * sizeof *v);
    if (!v)
      return -1;
    a->y = v;
    a->cap = nc;
  }
  a->mask[a->nobs] = players;
  a->y[a->nobs++] = y;
  struct kv_attr_estimate e;
  kv_attr_estimate(a, &e);
  if (!e.ok)
    return -1;
  int worst = -1;
  for (int i = 0; i < a->n; i++) {
    if (a->off[i])
      continue;
    /* A block that adds nothing to prompts costs nothing: never below. */
    if (e.cost[i] > 0 && e.phi[i] < e.cost[i])
      a->below[i]++;
    else
      a->below[i] = 0;
    if (a->below[i] >= a->o.patience &&
        (worst < 0 || e.phi[i] - e.cost[i] < e.phi[worst] - e.cost[worst]))
      worst = i;
  }
  if (worst < 0 || a->replay)
    return -1;
  a->off[worst] = 1;
  if (note && cap)
    snprintf(note, cap,
             "online attribution: %s off from step %d: its Shapley estimate %+.3f (se %.3f, "
             "%d randomised steps) stayed below its cost %.3f (%.0f prompt tokens at %g per "
             "1k) for %d randomised steps",
             kv_attr_player_name(a, worst), step + 1, e.phi[worst], e.se[worst], e.nobs,
             e.cost[worst], e.tokens[worst], a->o.price, a->below[worst]);
  return worst;
}

void kv_attr_params(const struct kv_attr *a, unsigned players, int randomised, const size_t *bytes,
                    char *out, size_t cap) {
  size_t u = 0;
  if (!cap)
    return;
  out[0] = 0;
  for (int i = 0; i < a->n && u < cap; i++) {
    if (randomised) {
      if (a->off[i])
        continue;
      u += (size_t)snprintf(out + u, cap - u, "%s%s:%d:%zu",
                            u ? "," : "attr=", kv_attr_player_name(a, i), (players >> i) & 1,
                            bytes ? (bytes[i] + 2) / 3 : 0);
    } else if (a->off[i])
      u += (size_t)snprintf(out + u, cap - u, "%s%s", u ? "," : "off=", kv_attr_player_name(a, i));
  }
}

int kv_attr_params_read(struct kv_attr *a, const char *params, unsigned *players) {
  const char *p = params ? strstr(params, "attr=") : NULL;
  if (!p || (p != params && p[-1] != ' '))
    return 0;
  p += 5;
  unsigned m = 0;
  while (*p && *p != ' ') {
    size_t n = strcspn(p, ":, ");
    int on = 0;
    long tok = 0;
    int player = -1;
    for (int i = 0; i < a->n; i++)
      if (strlen(kv_attr_player_name(a, i)) == n && !strncmp(p, kv_attr_player_name(a, i), n))
        player = i;
    p += n;
    if (*p == ':') {
      on = atoi(++p);
      p += strcspn(p, ":, ");
      if (*p == ':') {
        tok = strtol(++p, NULL, 10);
        p += strcspn(p, ", ");
      }
    }
    if (player >= 0) {
      if (on)
        m |= 1u << player;
      if (tok >= 0)
        kv_attr_cost_seen(a, player, (size_t)tok * 3);
    }
    if (*p == ',')
      p++;
  }
  *players = m;
  return 1;
}

int kv_attr_apply_note(struct kv_attr *a, const char *params) {
  static const char tag[] = "online attribution: ";
  const char *p = params ? strstr(params, tag) : NULL;
  if (!p)
    return -1;
  p += sizeof tag - 1;
  size_t n = strcspn(p, " ");
  for (int i = 0; i < a->n; i++)
    if (strlen(kv_attr_player_name(a, i)) == n && !strncmp(p, kv_attr_player_name(a, i), n)) {
      a->off[i] = 1;
      a->below[i] = 0;
      return i;
    }
  return -1;
}
