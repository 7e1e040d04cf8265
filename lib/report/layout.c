/* The search tree's layout: a wrapped forest. Each root (a node with no
 * parent: the first kernels, large steps, samples, tuned variants) carries
 * its subtree laid out tidy: leaves on consecutive slots, a parent centred
 * over its first and last child, one row per depth. Subtrees follow each
 * other left to right in step order and wrap into rows, like words into
 * lines, so that a run of thousands of short chains keeps a shape a screen
 * can show. No recursion: parents come before their children in step order,
 * so forward and backward passes over the array do it. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

/* Pixel geometry: small runs get room for a label under each node. */
struct geom {
  double dx, dy, rail, r_rej, r_min, r_k, margin;
};
static const struct geom LABELLED = {44, 66, 26, 5, 6, 1.5, 24};
static const struct geom COMPACT = {12, 30, 16, 3, 3.5, 0.75, 12};
enum { LABEL_MAX_NODES = 150 };

static double radius(const struct geom *g, const struct rep_node *n) {
  if (n->verdict != 0)
    return g->r_rej;
  if (!(n->speedup > 0)) /* accepted, not timed */
    return g->r_min + 2 * g->r_k;
  double s = n->speedup < 0.25 ? 0.25 : n->speedup > 16 ? 16 : n->speedup;
  return g->r_min + g->r_k * log2(s / 0.25);
}

/* Places the roots in rows of at most row_w (a wider subtree alone in its
 * row): their slots and tops when slot is given. Returns the height. */
static double pack(struct rep_node *v, int n, const int *leaves, const int *height,
                   const struct geom *g, double row_w, double *slot) {
  double cursor = 0, row_top = g->margin, row_h = 0;
  for (int i = 0; i < n; i++) {
    if (v[i].parent >= 0)
      continue;
    double w = leaves[i] * g->dx;
    if (cursor > 0 && cursor + w > row_w) {
      row_top += row_h;
      cursor = 0;
      row_h = 0;
    }
    if (slot) {
      slot[i] = cursor / g->dx;
      v[i].y = row_top + g->rail; /* depth 0 of this row */
    }
    cursor += w;
    double h = (height[i] + 1) * g->dy + g->rail;
    if (h > row_h)
      row_h = h;
  }
  return row_top + row_h;
}

void rep_layout(struct rep_run *run) {
  int n = run->n;
  run->labelled = n <= LABEL_MAX_NODES;
  const struct geom *g = run->labelled ? &LABELLED : &COMPACT;
  run->rail = g->rail - 4;
  run->width = run->height = 0;
  if (n == 0)
    return;
  int *leaves = calloc((size_t)n, sizeof *leaves);
  int *height = calloc((size_t)n, sizeof *height);
  double *slot = calloc((size_t)n, sizeof *slot);
  if (!leaves || !height || !slot) {
    free(leaves);
    free(height);
    free(slot);
    return; /* the tree is drawn at the origin: ugly, never wrong */
  }
  struct rep_node *v = run->nodes;
  for (int i = 0; i < n; i++) {
    v[i].first_child = v[i].next_sibling = v[i].last_child = -1;
    int p = v[i].parent;
    v[i].depth = p >= 0 ? v[p].depth + 1 : 0;
    if (p >= 0) {
      if (v[p].last_child >= 0)
        v[v[p].last_child].next_sibling = i;
      else
        v[p].first_child = i;
      v[p].last_child = i;
    }
  }
  /* Leaves and heights bottom-up: children come after their parents. */
  for (int i = n - 1; i >= 0; i--) {
    if (leaves[i] == 0)
      leaves[i] = 1;
    int p = v[i].parent;
    if (p >= 0) {
      leaves[p] += leaves[i];
      if (height[i] + 1 > height[p])
        height[p] = height[i] + 1;
    }
  }
  /* A small tree: rows as wide as the figure, so that it is drawn life size
   * and its labels read. A large one: rows as wide as makes the whole about
   * as wide as the figure (1.4 times its height), never narrower than a
   * screen: the height the greedy packing gives falls as the width grows, so
   * a bisection finds it. */
  double lo = 0, hi = 0;
  for (int i = 0; i < n; i++)
    if (v[i].parent < 0) {
      double w = leaves[i] * g->dx;
      hi += w;
      if (w > lo)
        lo = w;
    }
  if (lo < (run->labelled ? 880 : 1100))
    lo = run->labelled ? 880 : 1100;
  if (hi < lo || run->labelled)
    hi = lo;
  double row_w = hi;
  for (int it = 0; it < 40 && hi - lo > g->dx; it++) {
    double mid = (lo + hi) / 2;
    if (mid / pack(v, n, leaves, height, g, mid, NULL) > 1.4)
      hi = mid;
    else
      lo = mid;
    row_w = hi;
  }
  double width = 0, total_h = pack(v, n, leaves, height, g, row_w, slot);
  for (int i = 0; i < n; i++)
    if (v[i].parent < 0 && (slot[i] + leaves[i]) * g->dx > width)
      width = (slot[i] + leaves[i]) * g->dx;
  for (int i = 0; i < n; i++) {
    double s = slot[i];
    for (int c = v[i].first_child; c >= 0; c = v[c].next_sibling) {
      slot[c] = s;
      v[c].y = v[i].y + g->dy;
      s += leaves[c];
    }
  }
  /* x: a leaf on its slot, a parent over its first and last child. */
  for (int i = n - 1; i >= 0; i--) {
    if (v[i].first_child < 0)
      v[i].x = g->margin + (slot[i] + 0.5) * g->dx;
    else
      v[i].x = (v[v[i].first_child].x + v[v[i].last_child].x) / 2;
    v[i].r = radius(g, &v[i]);
  }
  run->width = width + 2 * g->margin;
  run->height = total_h + g->margin;
  free(leaves);
  free(height);
  free(slot);
}
