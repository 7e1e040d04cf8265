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

/* ---- AdaExplore's rules as released (kevo run --tree/--reward adaexplore) -- */

double kva_ada_reward_as(int map, int verdict, double speedup) {
  if (map != KV_REWARD_ADAEXPLORE)
    return kva_ada_reward(verdict, speedup);
  if (verdict < 0 || verdict == KV_V_COMPILE_ERROR || verdict == KV_V_POLICY_VIOLATION)
    return 0.0;
  if (verdict != KV_V_OK)
    return 0.05;
  double s = speedup > 0 ? speedup : 1.0;
  s = s < 0.1 ? 0.1 : s > 10.0 ? 10.0 : s;
  return 0.4 + 1.2 * (s - 0.1) / 9.9;
}

/* The task (idx -1) counts every evaluation below it. */
static int visits_of(const struct kva_ada_node *n, int count, int idx) {
  if (idx >= 0)
    return n[idx].visits;
  int v = 0;
  for (int i = 0; i < count; i++)
    if (n[i].parent < 0)
      v += n[i].visits;
  return v;
}

/* UCB1 of a child with Q its average reward (AdaExplore's reward_alpha 0). */
static double ucb_avg(const struct kva_ada_node *c, int parent_visits, double w) {
  if (c->visits <= 0)
    return INFINITY;
  double q = c->value / c->visits;
  if (parent_visits <= 0)
    return q;
  return q + w * sqrt(log((double)parent_visits) / c->visits);
}

int kva_ada_expand_here(const struct kva_ada_node *n, int count, int at, double c, int *best) {
  int pv = visits_of(n, count, at), kids = 0;
  double best_ucb = -INFINITY, best_q = -INFINITY;
  *best = -1;
  for (int i = 0; i < count; i++) {
    if (n[i].parent != at || i == at)
      continue;
    kids++;
    double u = ucb_avg(&n[i], pv, c);
    double q = n[i].visits > 0 ? n[i].value / n[i].visits : 0;
    if (u > best_ucb) {
      best_ucb = u;
      *best = i;
    }
    if (q > best_q)
      best_q = q;
  }
  if (!kids)
    return 1;
  if (c <= 0)
    return 0;
  double expand = best_q;
  if (pv > 0)
    expand += c * sqrt(log((double)pv) / ((double)kids * kids));
  return expand > best_ucb;
}

int kva_ada_select_adaexplore(const struct kva_ada_node *n, int count, double c) {
  int at = -1;
  for (int depth = 0; depth <= count; depth++) {
    int best;
    if (kva_ada_expand_here(n, count, at, c, &best) || best < 0)
      return at;
    at = best;
  }
  return at;
}

int kva_ada_small_children(const struct kva_ada_node *n, int count, int at) {
  int k = 0;
  for (int i = 0; i < count; i++)
    k += n[i].parent == at && i != at && !n[i].large;
  return k;
}

/* The best correct kernel (reward >= 0.4) reachable from b by small steps,
 * b included; -1 when none. */
static int best_of_component(const struct kva_ada_node *n, int count, int b, int *queue) {
  int head = 0, tail = 0, best = -1;
  queue[tail++] = b;
  while (head < tail) {
    int x = queue[head++];
    if (n[x].has_code && n[x].reward >= 0.4 && (best < 0 || n[x].reward > n[best].reward))
      best = x;
    for (int i = 0; i < count && tail < count; i++)
      if (n[i].parent == x && i != x && !n[i].large)
        queue[tail++] = i;
  }
  return best;
}

int kva_ada_pool_path(const struct kva_ada_node *n, int count, int at, int max, uint64_t *rng,
                      int *out) {
  if (count <= 0 || max <= 0)
    return 0;
  int *queue = calloc((size_t)count, sizeof *queue), *got = calloc((size_t)count, sizeof *got);
  int k = 0;
  for (int x = at, guard = 0; queue && got && x >= 0 && guard < count; x = n[x].parent, guard++)
    if (n[x].large || n[x].parent < 0) {
      int b = best_of_component(n, count, x, queue);
      if (b >= 0)
        got[k++] = b;
    }
  for (int i = 0; i < k && i < max; i++) { /* more than max: a uniform sample of max */
    int j = i + (int)(kva_ada_rand(rng) % (uint64_t)(k - i));
    int t = got[i];
    got[i] = got[j];
    got[j] = t;
  }
  int m = k < max ? k : max;
  for (int i = 0; i < m; i++)
    out[i] = got[i];
  free(queue);
  free(got);
  return m;
}
