/* An analysis's section (kevo analyze, read back with kv_an_load: no model,
 * no gate): for a Shapley analysis, per outcome the Shapley values as bars
 * with their 95% intervals and permutation p, and the pairwise interaction
 * indices as a heat map (phi_i on the diagonal, I({i,j}) off it), then v(S)
 * of every coalition and the higher-order terms; for the planning x
 * alignment experiment a 2x2 grid per outcome; for plan transfer the three
 * conditions as bars with intervals. Everything is SVG with colours as
 * presentation attributes (the page's policy allows no style attributes).
 * Names of players and models are escaped like everything from the store. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int rep_analysis_load(struct kv_store *s, int64_t id, struct rep_analysis *a, char *err,
                      size_t errlen) {
  memset(a, 0, sizeof *a);
  a->r = calloc(1, sizeof *a->r);
  if (!a->r)
    return kv_error(err, errlen, "report: out of memory");
  if (kv_an_load(s, id, 0, a->r, err, errlen) != 0 ||
      kv_store_analysis_get(s, a->r->analysis_id, &a->row, err, errlen) != 0 ||
      kv_store_run_get(s, a->r->run_id, &a->run, err, errlen) != 0) {
    rep_analysis_release(a);
    return -1;
  }
  return 0;
}

void rep_analysis_release(struct rep_analysis *a) {
  if (a->r)
    kv_an_result_free(a->r);
  free(a->r);
  kv_analysis_row_release(&a->row);
  kv_run_row_release(&a->run);
  memset(a, 0, sizeof *a);
}

/* ---- small pieces -------------------------------------------------------- */

static int is_rate(int m) {
  return m != KV_AN_M_LOGSP;
}

static const char *metric_label(const struct kv_an_result *r, int m, char *buf, size_t cap) {
  switch (m) {
  case KV_AN_M_COMPILE:
    return "compile rate";
  case KV_AN_M_PASS:
    return "pass rate";
  case KV_AN_M_FAST:
    snprintf(buf, cap, "fast rate (> %g\xC3\x97)", r->fast_threshold);
    return buf;
  case KV_AN_M_LOGSP:
    return "mean log speedup";
  }
  snprintf(buf, cap, "plan names %s", kv_an_tag_name(m - KV_AN_M_COUNT));
  return buf;
}

/* Whether an outcome is shown: the timed ones only when timed; a plan tag
 * only when some sample's plan named it. */
static int shown(const struct kv_an_result *r, int m) {
  if ((m == KV_AN_M_FAST || m == KV_AN_M_LOGSP) && !r->timed)
    return 0;
  if (m < KV_AN_M_COUNT)
    return 1;
  size_t cube = (size_t)r->nnodes * (size_t)r->ncond * (size_t)r->k;
  for (size_t i = 0; r->y[m] && i < cube; i++)
    if (r->y[m][i] > 0)
      return 1;
  return 0;
}

static void coalition(const struct kv_an_result *r, unsigned S, char *out, size_t cap) {
  size_t u = 0;
  snprintf(out, cap, "{}");
  for (int i = 0; i < r->n && S; i++)
    if (S & (1u << i))
      u += (size_t)snprintf(out + u, u < cap ? cap - u : 0, "%s%s", u ? " + " : "", r->names[i]);
}

/* A colour for v on a scale of half-width `range`: white at 0, blue above,
 * red below (sequential for rates: 0 white, 1 blue). *dark: white text. */
static void shade(double v, double range, char out[8], int *dark) {
  double t = range > 0 ? fabs(v) / range : 0;
  if (!(t == t))
    t = 0;
  if (t > 1)
    t = 1;
  static const int pos[3] = {9, 105, 218}, neg[3] = {207, 34, 46};
  const int *c = v >= 0 ? pos : neg;
  int rgb[3];
  for (int i = 0; i < 3; i++)
    rgb[i] = (int)lround(255 + (c[i] - 255) * t * 0.9);
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
  *dark = t > 0.55;
}

/* A round half-width for a symmetric axis holding every value. */
static double nice_range(double m) {
  static const double steps[] = {0.05, 0.1, 0.25, 0.5, 1, 2, 2.5, 5};
  if (!(m > 0))
    return 0.1;
  double base = 1;
  while (m > 5 * base)
    base *= 10;
  while (m < 0.05 * base)
    base /= 10;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (steps[i] * base >= m - 1e-12)
      return steps[i] * base;
  return 10 * base;
}

static void val_str(double v, char *out, size_t cap) {
  if (!(v == v))
    snprintf(out, cap, "-");
  else
    snprintf(out, cap, "%.3f", fabs(v) < 5e-4 ? 0.0 : v);
}

/* Horizontal bars from 0 with 95% intervals: one row per label, the value
 * and interval written on the right (and p, when given). The axis runs from
 * xmin to xmax (0 inside). */
static void bars(struct rep_out *o, const char *cls, int n, const char (*labels)[64],
                 const double *v, const double *lo, const double *hi, const double *p, double xmin,
                 double xmax, const char *what) {
  const double LW = 150, X0 = 160, X1 = 450, RW = p ? 250 : 160, RH = n <= 4 ? 38 : 30, TOP = 8;
  double W = X1 + 10 + RW, H = TOP + n * RH + 24;
#define XV(x) (X0 + ((x)-xmin) / (xmax - xmin) * (X1 - X0))
  rep_printf(o,
             "<svg class=\"anbars %s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
             "aria-label=\"%s\">",
             cls, W, H, what);
  for (int t = 0; t <= 4; t++) {
    double x = xmin + (xmax - xmin) * t / 4;
    rep_printf(o,
               "<path class=\"grid%s\" d=\"M%.1f %.1fV%.1f\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"%.1f\" text-anchor=\"middle\">%g</text>",
               fabs(x) < 1e-12 ? " zero" : "", XV(x), TOP - 4, TOP + n * RH, XV(x),
               TOP + n * RH + 16, fabs(x) < 1e-12 ? 0.0 : x);
  }
  for (int i = 0; i < n; i++) {
    double y = TOP + i * RH, c = y + RH / 2;
    char a[32], b[32], d[32];
    val_str(v[i], a, sizeof a);
    val_str(lo[i], b, sizeof b);
    val_str(hi[i], d, sizeof d);
    rep_printf(o, "<g class=\"anrow\"><title>");
    rep_esc(o, labels[i]);
    rep_printf(o, ": %s, 95%% interval [%s, %s]", a, b, d);
    if (p)
      rep_printf(o, ", permutation p = %.3f", p[i]);
    rep_printf(o, "</title><text class=\"anlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", LW,
               c + 4);
    rep_esc(o, labels[i]);
    rep_puts(o, "</text>");
    double vv = v[i] == v[i] ? v[i] : 0;
    double x0 = XV(0), x1 = XV(vv < xmin ? xmin : vv > xmax ? xmax : vv);
    rep_printf(o,
               "<rect class=\"an-bar %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "rx=\"2\"/>",
               vv >= 0 ? "pos" : "neg", x1 < x0 ? x1 : x0, y + RH / 4,
               fabs(x1 - x0) < 1 ? 1 : fabs(x1 - x0), RH / 2);
    if (lo[i] == lo[i] && hi[i] == hi[i]) {
      double l = XV(lo[i] < xmin ? xmin : lo[i]), h = XV(hi[i] > xmax ? xmax : hi[i]);
      rep_printf(o, "<path class=\"ci\" d=\"M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f\"/>", l,
                 c, h, l, c - 6, c + 6, h, c - 6, c + 6);
    }
    rep_printf(o,
               "<text class=\"anval\" x=\"%.1f\" y=\"%.1f\">%s <tspan class=\"muted\">[%s, "
               "%s]</tspan>",
               X1 + 14, c + 4, a, b, d);
    if (p)
      rep_printf(o, " <tspan class=\"%s\">p %s%.3f</tspan>", p[i] < 0.05 ? "sig" : "muted",
                 p[i] < 0.001 ? "< " : "= ", p[i] < 0.001 ? 0.001 : p[i]);
    rep_puts(o, "</text></g>");
  }
  rep_puts(o, "</svg>");
#undef XV
}

/* ---- a Shapley analysis ---------------------------------------------------- */

/* phi_i on the diagonal, I({i,j}) off it. */
static void heat(struct rep_out *o, const struct kv_an_result *r, int m) {
  const struct kv_an_attr *a = &r->attr[m];
  int n = r->n;
  const double L = 150, TOP = 96, C = n <= 3 ? 64 : n <= 4 ? 56 : 48;
  double W = L + n * C + 10, H = TOP + n * C + 10;
  double mx = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double v = i == j ? a->phi[i] : a->I[(1u << i) | (1u << j)];
      if (fabs(v) > mx)
        mx = fabs(v);
    }
  double range = is_rate(m) ? 1 : nice_range(mx);
  rep_printf(o,
             "<svg class=\"anheat\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"pairwise "
             "interaction indices\">",
             W, H);
  for (int j = 0; j < n; j++) {
    double x = L + j * C + C / 2;
    rep_printf(o, "<text class=\"anlabel\" transform=\"translate(%.1f %.1f) rotate(-40)\">", x + 4,
               TOP - 8);
    rep_esc(o, r->names[j]);
    rep_puts(o, "</text>");
  }
  for (int i = 0; i < n; i++) {
    rep_printf(o, "<text class=\"anlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", L - 8,
               TOP + i * C + C / 2 + 4);
    rep_esc(o, r->names[i]);
    rep_puts(o, "</text>");
    for (int j = 0; j < n; j++) {
      unsigned S = (1u << i) | (1u << j);
      double v = i == j ? a->phi[i] : a->I[S];
      double lo = i == j ? a->phi_lo[i] : a->I_lo[S], hi = i == j ? a->phi_hi[i] : a->I_hi[S];
      char col[8], vs[32], ls[32], hs[32];
      int dark;
      shade(v, range, col, &dark);
      val_str(v, vs, sizeof vs);
      val_str(lo, ls, sizeof ls);
      val_str(hi, hs, sizeof hs);
      double x = L + j * C, y = TOP + i * C;
      rep_printf(o, "<g class=\"an-cell%s\"><title>", i == j ? " diag" : "");
      if (i == j) {
        rep_puts(o, "Shapley value of ");
        rep_esc(o, r->names[i]);
      } else {
        rep_puts(o, "interaction I(");
        rep_esc(o, r->names[i]);
        rep_puts(o, ", ");
        rep_esc(o, r->names[j]);
        rep_puts(o, ")");
      }
      rep_printf(o,
                 " = %s, 95%% interval [%s, %s]</title><rect x=\"%.1f\" y=\"%.1f\" "
                 "width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/><text class=\"cellv%s\" x=\"%.1f\" "
                 "y=\"%.1f\" text-anchor=\"middle\">%s</text></g>",
                 vs, ls, hs, x + 1, y + 1, C - 2, C - 2, col, dark ? " dark" : "", x + C / 2,
                 y + C / 2 + 4, vs);
    }
  }
  rep_puts(o, "</svg>");
}

static void shapley_metric(struct rep_out *o, const struct kv_an_result *r, int m) {
  const struct kv_an_attr *a = &r->attr[m];
  char buf[96], v0[32], vn[32];
  const char *label = metric_label(r, m, buf, sizeof buf);
  int ns = 1 << r->n;
  val_str(a->v[0], v0, sizeof v0);
  val_str(a->v[ns - 1], vn, sizeof vn);
  double mx = 0;
  for (int i = 0; i < r->n; i++) {
    double e[3] = {a->phi[i], a->phi_lo[i], a->phi_hi[i]};
    for (int k = 0; k < 3; k++)
      if (e[k] == e[k] && fabs(e[k]) > mx)
        mx = fabs(e[k]);
  }
  double range = nice_range(mx);
  rep_printf(o, "<div class=\"anmetric\" data-metric=\"%d\"><h3>", m);
  rep_esc(o, label);
  rep_printf(o,
             " <span class=\"muted\">v({}) = %s, v(all) = %s; the Shapley values add up to "
             "the difference</span></h3><div class=\"anpair\"><div><figure class=\"chart\">"
             "<figcaption>Shapley value per player <span class=\"muted\">(bar; whisker: 95%% "
             "bootstrap interval; p: permutation test of \xE2\x80\x9c"
             "changes "
             "nothing\xE2\x80\x9d)</span></figcaption>",
             v0, vn);
  bars(o, "shapley", r->n, (const char(*)[64])r->names, a->phi, a->phi_lo, a->phi_hi, a->phi_p,
       -range, range, "Shapley values");
  rep_puts(o, "</figure>");
  if (r->n >= 2) {
    rep_puts(o, "<details class=\"anmore\"><summary>every interaction index and Harsanyi "
                "dividend</summary><table class=\"antab\"><thead><tr><th>players</th><th "
                "class=\"num\">I(S)</th><th>95% interval</th><th class=\"num\">d(S)</th><th>95% "
                "interval</th></tr></thead><tbody>");
    for (int S = 0; S < ns; S++) {
      if (!(S & (S - 1)))
        continue;
      char cn[512], x[4][32];
      coalition(r, (unsigned)S, cn, sizeof cn);
      val_str(a->I_lo[S], x[0], 32);
      val_str(a->I_hi[S], x[1], 32);
      val_str(a->d_lo[S], x[2], 32);
      val_str(a->d_hi[S], x[3], 32);
      rep_puts(o, "<tr><td>");
      rep_esc(o, cn);
      rep_printf(o,
                 "</td><td class=\"num\">%.3f</td><td class=\"muted\">[%s, %s]</td><td "
                 "class=\"num\">%.3f</td><td class=\"muted\">[%s, %s]</td></tr>",
                 a->I[S], x[0], x[1], a->d[S], x[2], x[3]);
    }
    rep_puts(o, "</tbody></table></details>");
  }
  rep_puts(o, "</div>");
  if (r->n >= 2) {
    rep_puts(o, "<figure class=\"chart\"><figcaption>Interactions <span class=\"muted\">(pairwise "
                "Shapley interaction index I({i,j}); diagonal: phi<sub>i</sub>; blue helps "
                "together, red hurts)</span></figcaption>");
    heat(o, r, m);
    rep_puts(o, "</figure>");
  }
  rep_puts(o, "</div></div>");
}

/* v(S) of every coalition for every outcome shown. */
static void values_table(struct rep_out *o, const struct kv_an_result *r) {
  char buf[96];
  rep_puts(o, "<h3>v(S) of every coalition <span class=\"muted\">(the mean over nodes of each "
              "node's mean over its samples)</span></h3><table class=\"antab values\"><thead><tr>"
              "<th>coalition</th>");
  for (int m = 0; m < KV_AN_NMETRICS; m++)
    if (shown(r, m)) {
      rep_puts(o, "<th class=\"num\">");
      rep_esc(o, metric_label(r, m, buf, sizeof buf));
      rep_puts(o, "</th>");
    }
  rep_puts(o, "</tr></thead><tbody>");
  for (int S = 0; S < (1 << r->n); S++) {
    char cn[512];
    coalition(r, (unsigned)S, cn, sizeof cn);
    rep_puts(o, "<tr><td>");
    rep_esc(o, cn);
    rep_puts(o, "</td>");
    for (int m = 0; m < KV_AN_NMETRICS; m++)
      if (shown(r, m))
        rep_printf(o, "<td class=\"num\">%.3f</td>", r->attr[m].v[S]);
    rep_puts(o, "</tr>");
  }
  rep_puts(o, "</tbody></table>");
}

/* ---- the experiments: cells ------------------------------------------------- */

/* Cells c: bit 0 plan, bit 1 aligned (lib/analysis/analyze.c's cond_of). */
static void grid2x2(struct rep_out *o, const struct kv_an_result *r, int m) {
  char buf[96];
  const double L = 96, TOP = 30, CW = 150, CH = 66;
  double W = L + 2 * CW + 10, H = TOP + 2 * CH + 8;
  double mx = 0;
  for (int c = 0; c < 4; c++)
    if (fabs(r->cell[m][c]) > mx)
      mx = fabs(r->cell[m][c]);
  double range = is_rate(m) ? 1 : nice_range(mx);
  rep_puts(o, "<figure class=\"chart an2x2\"><figcaption>");
  rep_esc(o, metric_label(r, m, buf, sizeof buf));
  rep_printf(o,
             "</figcaption><svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"planning "
             "x alignment\">",
             W, H);
  static const char *const cols[2] = {"no plan", "plan"}, *const rows[2] = {"aligned",
                                                                            "misaligned"};
  for (int j = 0; j < 2; j++)
    rep_printf(o, "<text class=\"anlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
               L + j * CW + CW / 2, TOP - 10, cols[j]);
  for (int i = 0; i < 2; i++) {
    rep_printf(o, "<text class=\"anlabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
               L - 8, TOP + i * CH + CH / 2 + 4, rows[i]);
    for (int j = 0; j < 2; j++) {
      int c = j | (i == 0 ? 2 : 0);
      char col[8], vs[32], ls[32], hs[32];
      int dark;
      shade(r->cell[m][c], range, col, &dark);
      val_str(r->cell[m][c], vs, sizeof vs);
      val_str(r->cell_lo[m][c], ls, sizeof ls);
      val_str(r->cell_hi[m][c], hs, sizeof hs);
      double x = L + j * CW, y = TOP + i * CH;
      rep_printf(o,
                 "<g class=\"an-cell\"><title>%s, %s: %s, 95%% interval [%s, %s]</title><rect "
                 "x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/><text "
                 "class=\"cellv big%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
                 "<text class=\"cellci%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">[%s, "
                 "%s]</text></g>",
                 cols[j], rows[i], vs, ls, hs, x + 1, y + 1, CW - 2, CH - 2, col,
                 dark ? " dark" : "", x + CW / 2, y + CH / 2 - 1, vs, dark ? " dark" : "",
                 x + CW / 2, y + CH / 2 + 16, ls, hs);
    }
  }
  rep_puts(o, "</svg>");
  double da = r->cell[m][3] - r->cell[m][2], dm = r->cell[m][1] - r->cell[m][0];
  rep_printf(o,
             "<p class=\"anfoot\">the plan step adds <b>%+.3f</b> with aligned feedback, "
             "<b>%+.3f</b> with misaligned</p></figure>",
             da, dm);
}

static void transfer_metric(struct rep_out *o, const struct kv_an_result *r, int m) {
  char buf[96];
  double mn = 0, mx = 0;
  for (int c = 0; c < r->ncond && c < 4; c++) {
    double e[3] = {r->cell[m][c], r->cell_lo[m][c], r->cell_hi[m][c]};
    for (int k = 0; k < 3; k++) {
      if (e[k] < mn)
        mn = e[k];
      if (e[k] > mx)
        mx = e[k];
    }
  }
  double lo = 0, hi = 1;
  if (!is_rate(m)) {
    double h = nice_range(fabs(mn) > fabs(mx) ? fabs(mn) : fabs(mx));
    lo = mn < 0 ? -h : 0;
    hi = mx > 0 ? h : 0;
    if (lo == hi)
      hi = h;
  }
  rep_puts(o, "<figure class=\"chart\"><figcaption>");
  rep_esc(o, metric_label(r, m, buf, sizeof buf));
  rep_puts(o, "</figcaption>");
  bars(o, "cells", r->ncond < 4 ? r->ncond : 4, (const char(*)[64])r->names, r->cell[m],
       r->cell_lo[m], r->cell_hi[m], NULL, lo, hi, "conditions");
  rep_puts(o, "</figure>");
}

/* ---- the section -------------------------------------------------------------- */

void rep_analysis_section(struct rep_out *o, const struct rep_analysis *an) {
  const struct kv_an_result *r = an->r;
  const char *exp = r->experiment;
  int sh = !strcmp(exp, "shapley"), pl = !strcmp(exp, "planning");
  char a[512], b[512], c[256];
  rep_printf(o,
             "<section class=\"analysis\" id=\"analysis-%lld\"><header class=\"runhead\"><h2>"
             "<span class=\"muted\">analysis %lld</span> ",
             (long long)r->analysis_id, (long long)r->analysis_id);
  rep_puts(o, sh ? "which feedback helps" : pl ? "planning \xC3\x97 alignment" : "plan transfer");
  rep_puts(o, " <span class=\"muted\">of run ");
  rep_printf(o, "%lld (", (long long)r->run_id);
  rep_esc(o, an->run.task_name ? an->run.task_name : "?");
  rep_puts(o, ")</span> <span class=\"badge st-");
  rep_esc(o, r->complete ? "done" : "running");
  rep_printf(o, "\">%s</span></h2></header>\n<div class=\"cards\">",
             r->complete ? "done" : "incomplete");
  size_t u = 0;
  for (int i = 0; i < r->nnodes && u < sizeof a - 16; i++)
    u +=
        (size_t)snprintf(a + u, sizeof a - u, "%s%lld", i ? ", " : "", (long long)r->node_steps[i]);
  snprintf(b, sizeof b, "%d", r->nnodes);
  rep_card(o, NULL, "frozen nodes", b, r->nnodes ? "steps" : "", a);
  snprintf(b, sizeof b, "%d", r->k);
  snprintf(c, sizeof c, "%d %s \xC3\x97 %d nodes = %lld samples", r->ncond,
           sh ? "coalitions" : "conditions", r->nnodes, (long long)r->ncond * r->nnodes * r->k);
  rep_card(o, NULL, "samples per condition", b, c, "");
  if (sh) {
    snprintf(b, sizeof b, "%d", r->n);
    size_t w = 0;
    a[0] = 0;
    for (int i = 0; i < r->n && w < sizeof a - 70; i++)
      w += (size_t)snprintf(a + w, sizeof a - w, "%s%s", i ? ", " : "", r->names[i]);
    rep_card(o, NULL, "players", b, a, "");
  }
  rep_card(o, NULL, !strcmp(exp, "transfer") ? "plans from" : "model", r->model,
           an->run.strategy ? an->run.strategy : "", "");
  if (!strcmp(exp, "transfer"))
    rep_card(o, NULL, "coder given the plans", r->target, "", "");
  snprintf(b, sizeof b, "%s", r->timed ? "timed" : "correctness only");
  snprintf(c, sizeof c, "fast: speedup > %g\xC3\x97", r->fast_threshold);
  rep_date(an->row.created_unix, a, sizeof a);
  rep_card(o, NULL, "gate", b, r->timed ? c : "no speedups: --no-timing", a);
  rep_puts(o, "</div>\n");
  if (!r->complete) {
    rep_printf(o,
               "<p class=\"note\">This analysis is not finished: run <code>kevo analyze "
               "%lld</code> with the same options to continue it; values appear once every "
               "sample is recorded.</p></section>\n",
               (long long)r->run_id);
    return;
  }
  if (sh) {
    for (int m = 0; m < KV_AN_M_COUNT; m++)
      if (shown(r, m))
        shapley_metric(o, r, m);
    values_table(o, r);
    int tags = 0;
    for (int m = KV_AN_M_COUNT; m < KV_AN_NMETRICS; m++)
      tags += shown(r, m);
    if (tags) {
      rep_puts(o, "<details class=\"anmore\"><summary>what the plans name: Shapley values per "
                  "optimization</summary>");
      for (int m = KV_AN_M_COUNT; m < KV_AN_NMETRICS; m++)
        if (shown(r, m))
          shapley_metric(o, r, m);
      rep_puts(o, "</details>");
    }
    rep_puts(o, "<p class=\"muted\">phi<sub>i</sub> = \xCE\xA3<sub>S \xE2\x8A\x86 N\\{i}</sub> "
                "|S|! (n\xE2\x88\x92|S|\xE2\x88\x92"
                "1)! / n! (v(S\xE2\x88\xAAi) \xE2\x88\x92 "
                "v(S)); I(S) is Grabisch's Shapley interaction index (I({i}) = "
                "phi<sub>i</sub>), d(S) the Harsanyi dividend. Intervals: 1000 bootstrap "
                "resamples of nodes, then of each cell's samples.</p>");
  } else {
    rep_printf(o, "<div class=\"ancells %s\">", pl ? "planning" : "transfer");
    for (int m = 0; m < KV_AN_NMETRICS; m++)
      if (m < KV_AN_M_COUNT && shown(r, m)) {
        if (pl)
          grid2x2(o, r, m);
        else
          transfer_metric(o, r, m);
      }
    rep_puts(o, "</div>");
    rep_puts(o, pl ? "<p class=\"muted\">Aligned: the coder sees the judgement of the kernel it "
                     "refines; misaligned: that of another node of the run (the nearest in "
                     "steps with another verdict). Plan: a planner call first, its plan given "
                     "to the coder. Intervals: 1000 bootstrap resamples.</p>"
                   : "<p class=\"muted\">The same nodes and gate: the target model writing "
                     "code with no plan, with a plan of its own, and with the plan the run "
                     "recorded. Intervals: 1000 bootstrap resamples.</p>");
  }
  rep_puts(o, "</section>\n");
}

void rep_analysis_count(const struct rep_analysis *an, int *bars, int *cells) {
  const struct kv_an_result *r = an->r;
  if (!r->complete)
    return;
  for (int m = 0; m < KV_AN_NMETRICS; m++) {
    if (!shown(r, m))
      continue;
    if (!strcmp(r->experiment, "shapley")) {
      *bars += r->n;
      *cells += r->n >= 2 ? r->n * r->n : 0;
    } else if (m < KV_AN_M_COUNT && !strcmp(r->experiment, "planning")) {
      *cells += 4;
    } else if (m < KV_AN_M_COUNT) {
      *bars += r->ncond < 4 ? r->ncond : 4;
    }
  }
}
