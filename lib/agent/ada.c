/* The arithmetic of the tree search (ada): rewards, UCB selection, large
 * steps' pools. Pure functions of the tree, shared by the LLM strategies
 * (search.c), the step that records a node's reward (step.c) and the tests. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kevo/util.h"
#include "internal.h"

double kva_ada_reward(int verdict, double speedup) {
  if (verdict < 0 || verdict == KV_V_COMPILE_ERROR || verdict == KV_V_POLICY_VIOLATION)
    return 0.0;
  if (verdict != KV_V_OK)
    return 0.05;
  double s = speedup > 0 ? speedup : 1.0;
  if (s < 0.25)
    s = 0.25;
  if (s > 4.0)
    s = 4.0;
  return 0.4 + 1.2 * (log2(s) + 2.0) / 4.0;
}

double kva_ada_ucb(double value, int visits, int parent_visits, double c) {
  if (visits <= 0)
    return INFINITY;
  double lp = parent_visits > 1 ? log((double)parent_visits) : 0.0;
  return value / visits + c * sqrt(lp / visits);
}

void kva_ada_backprop(struct kva_ada_node *n, int idx) {
  double r = n[idx].reward;
  for (int i = idx, guard = 0; i >= 0 && guard < 1 << 20; i = n[i].parent, guard++) {
    n[i].visits++;
    n[i].value += r;
  }
}

uint64_t kva_ada_rand(uint64_t *x) {
  return kv_splitmix64(x);
}

double kva_ada_uniform(uint64_t *x) {
  return kv_unit01(x);
}

int kva_ada_select(const struct kva_ada_node *n, int count, double c) {
  int at = -1, parent_visits = 0;
  for (int i = 0; i < count; i++)
    if (n[i].parent < 0 && n[i].has_code)
      parent_visits += n[i].visits;
  for (int depth = 0; depth < count + 1; depth++) {
    int best = -1, nkids = 0;
    double best_score = -INFINITY;
    for (int i = 0; i < count; i++) {
      if (n[i].parent != at || !n[i].has_code)
        continue;
      nkids++;
      double sc = kva_ada_ucb(n[i].value, n[i].visits, parent_visits, c);
      if (sc > best_score) {
        best_score = sc;
        best = i;
      }
    }
    if (best < 0)
      return at;
    if (at >= 0) {
      double stay = n[at].reward + c * sqrt((n[at].visits > 1 ? log((double)n[at].visits) : 0.0) /
                                            (double)(1 + nkids));
      if (stay >= best_score)
        return at;
    }
    at = best;
    parent_visits = n[at].visits;
  }
  return at;
}

/* Index drawn with probability proportional to w[i] (all >= 0). */
static int draw(const double *w, int n, uint64_t *rng) {
  double tot = 0;
  for (int i = 0; i < n; i++)
    tot += w[i];
  if (tot <= 0)
    return -1;
  double u = kva_ada_uniform(rng) * tot;
  for (int i = 0; i < n; i++) {
    if (u < w[i])
      return i;
    u -= w[i];
  }
  for (int i = n - 1; i >= 0; i--)
    if (w[i] > 0)
      return i;
  return -1;
}

int kva_ada_pool(const struct kva_ada_node *n, int count, int max, uint64_t *rng, int *out) {
  if (count <= 0 || max <= 0)
    return 0;
  double *w = calloc((size_t)count, sizeof *w);
  double *cw = calloc((size_t)count, sizeof *cw);
  int k = 0;
  if (!w || !cw)
    goto out;
  /* Chains weighted by their best reward (+0.01: failed chains stay possible). */
  for (int i = 0; i < count; i++)
    if (n[i].has_code) {
      int ch = n[i].chain;
      if (ch >= 0 && ch < count && n[i].reward + 0.01 > cw[ch])
        cw[ch] = n[i].reward + 0.01;
    }
  while (k < max) {
    int ch = draw(cw, count, rng);
    if (ch < 0)
      break;
    cw[ch] = 0;
    for (int i = 0; i < count; i++)
      w[i] = n[i].has_code && n[i].chain == ch ? n[i].reward + 0.01 : 0;
    int pick = draw(w, count, rng);
    if (pick >= 0)
      out[k++] = pick;
  }
out:
  free(w);
  free(cw);
  return k;
}
