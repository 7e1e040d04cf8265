/* A run's section of the page: the header (what ran, where, for how long, at
 * what cost, and the best kernel), the best-so-far curve with every candidate
 * a point, the verdicts, the search tree, the rules learnt and the LLM calls.
 * Charts are SVG written here, so the page reads without JavaScript; the
 * script (report.js) adds the node panel, zoom and the links between views
 * from the section's JSON block. Every string from the store is escaped. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small pieces -------------------------------------------------------- */

static void speedup_str(double s, char *out, size_t cap) {
  if (!(s > 0))
    snprintf(out, cap, "-");
  else if (s >= 100)
    snprintf(out, cap, "%.0f\xC3\x97", s);
  else
    snprintf(out, cap, "%.2f\xC3\x97", s);
}

static void bytes_str(double n, char *out, size_t cap) {
  if (n < 1024)
    snprintf(out, cap, "%.0f B", n);
  else if (n < 1024 * 1024)
    snprintf(out, cap, "%.1f KiB", n / 1024);
  else
    snprintf(out, cap, "%.1f MiB", n / (1024 * 1024));
}

static void count_str(int64_t n, char *out, size_t cap) {
  if (n < 10000)
    snprintf(out, cap, "%lld", (long long)n);
  else if (n < 10000000)
    snprintf(out, cap, "%.1fk", (double)n / 1e3);
  else
    snprintf(out, cap, "%.1fM", (double)n / 1e6);
}

static void usd_str(double v, char *out, size_t cap) {
  snprintf(out, cap, v < 0.01 ? "$%.4f" : v < 100 ? "$%.2f" : "$%.0f", v);
}

/* A node's one-line description (tooltips), escaped. */
static void node_title(struct rep_out *o, const struct rep_node *n) {
  char sp[32];
  speedup_str(n->speedup, sp, sizeof sp);
  rep_printf(o, "<title>step %d \xC2\xB7 ", n->step);
  rep_esc(o, n->action);
  if (n->params && *n->params) {
    rep_puts(o, " ");
    rep_escn(o, n->params, strnlen(n->params, 80));
  }
  rep_puts(o, " \xC2\xB7 ");
  rep_esc(o, n->other ? n->other : rep_verdicts[n->verdict].name);
  rep_printf(o, "%s%s</title>", n->speedup > 0 ? " " : "", n->speedup > 0 ? sp : "");
}

/* "1, 2, 5 x 10^k": about `want` ticks over [lo, hi]. */
static double nice_step(double range, int want) {
  double raw = range / want;
  if (!(raw > 0))
    return 1;
  double mag = pow(10, floor(log10(raw)));
  double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* ---- the header ---------------------------------------------------------- */

void rep_card(struct rep_out *o, const char *cls, const char *key, const char *value,
              const char *sub1, const char *sub2) {
  rep_printf(o, "<div class=\"card%s%s\"><div class=\"k\">", cls ? " " : "", cls ? cls : "");
  rep_esc(o, key);
  rep_puts(o, "</div><div class=\"v\">");
  rep_esc(o, value && *value ? value : "-");
  rep_puts(o, "</div>");
  if (sub1 && *sub1) {
    rep_puts(o, "<div class=\"s\">");
    rep_esc(o, sub1);
    rep_puts(o, "</div>");
  }
  if (sub2 && *sub2) {
    rep_puts(o, "<div class=\"s\">");
    rep_esc(o, sub2);
    rep_puts(o, "</div>");
  }
  rep_puts(o, "</div>");
}

static void header(struct rep_out *o, struct kv_store *s, const struct rep_run *run) {
  const struct kv_run_row *r = &run->row;
  char a[256], b[256], c[256];
  rep_printf(o, "<header class=\"runhead\"><h2><span class=\"muted\">run %lld</span> ",
             (long long)r->id);
  rep_esc(o, r->task_name ? r->task_name : "?");
  rep_puts(o, " <span class=\"badge st-");
  rep_esc(o, r->status);
  rep_puts(o, "\">");
  rep_esc(o, r->status);
  rep_puts(o, "</span></h2></header>\n<div class=\"cards\">");

  /* The best kernel, and where it is. */
  int accepted = run->vcount[0];
  if (run->best >= 0) {
    const struct rep_node *bn = &run->nodes[run->best];
    speedup_str(bn->speedup, a, sizeof a);
    if (!(bn->speedup > 0))
      snprintf(a, sizeof a, "accepted");
    rep_printf(o,
               "<div class=\"card best\"><div class=\"k\">best kernel</div>"
               "<div class=\"v big\"><a href=\"#run-%lld-n%lld\" data-i=\"%d\">",
               (long long)r->id, (long long)bn->id, run->best);
    rep_esc(o, a);
    rep_printf(o,
               "</a></div><div class=\"s\"><span class=\"vb v0\">ok</span> at step %d "
               "(node %lld)%s</div><div class=\"s\"><code>kevo best %lld -o best-run%lld.c</code>"
               "</div></div>",
               bn->step, (long long)bn->id, bn->speedup > 0 ? "" : ", not timed", (long long)r->id,
               (long long)r->id);
  } else {
    rep_card(o, "best", "best kernel", "none accepted",
             run->n ? "no candidate passed the gate" : "", "");
  }
  const char *strategy = r->strategy;
  const char *pm =
      json_string_value(json_object_get(json_object_get(run->config, "llm"), "plan_mode"));
  json_t *llm = json_object_get(run->config, "llm");
  b[0] = 0;
  if (json_is_object(llm))
    snprintf(b, sizeof b, "%s plans \xC2\xB7 %lld in flight", pm ? pm : "implicit",
             (long long)json_integer_value(json_object_get(llm, "concurrency")));
  json_t *seed = json_object_get(run->config, "seed");
  snprintf(c, sizeof c, "seed %lld", (long long)json_integer_value(seed));
  rep_card(o, NULL, "strategy", strategy, b, json_is_integer(seed) ? c : "");

  const char *model = rep_config_str(run, "model", "model");
  const char *mname = rep_config_str(run, "model", "name");
  const char *prov = rep_config_str(run, "model", "provider");
  const char *url = rep_config_str(run, "model", "base_url");
  snprintf(a, sizeof a, "%s%s%s", prov ? prov : "", mname && *mname ? " \xC2\xB7 entry " : "",
           mname && *mname ? mname : "");
  rep_card(o, NULL, "model", model ? model : "none (no LLM)", a, url);

  int asked = (int)json_integer_value(json_object_get(run->config, "steps"));
  snprintf(a, sizeof a, "%d", run->total);
  snprintf(b, sizeof b, "%s%d asked \xC2\xB7 %d accepted", asked ? "of " : "", asked, accepted);
  if (!asked)
    snprintf(b, sizeof b, "%d accepted", accepted);
  c[0] = 0;
  if (run->n < run->total)
    snprintf(c, sizeof c, "the first %d shown", run->n);
  rep_card(o, NULL, "steps", a, b, c);

  const struct kv_run_facts *f = &run->facts;
  char t1[32], t2[32];
  usd_str(f->cost_usd, a, sizeof a);
  count_str(f->tokens_in, t1, sizeof t1);
  count_str(f->tokens_out, t2, sizeof t2);
  snprintf(b, sizeof b, "%lld calls%s \xC2\xB7 %s in / %s out tokens", (long long)f->llm_calls,
           f->llm_failed ? ", some failed" : "", t1, t2);
  if (f->llm_calls)
    rep_card(o, NULL, "LLM spend", a, b, "");
  else
    rep_card(o, NULL, "LLM spend", "none", "no LLM calls", "");

  rep_duration((double)(f->last_unix - f->created_unix), a, sizeof a);
  rep_date(f->created_unix, b, sizeof b);
  snprintf(c, sizeof c, "started %s", b);
  rep_card(o, NULL, "wall time", a, c, "");

  const char *dir = rep_config_str(run, "task_dir", NULL);
  rep_card(o, NULL, "task", r->task_name, dir, "");
  const char *surface = rep_config_str(run, "surface", NULL);
  rep_card(o, NULL, "surface \xC2\xB7 device", surface ? surface : f->surface, f->device, "");
  rep_puts(o, "</div>\n");

  if (run->best >= 0 && run->nodes[run->best].hash) {
    size_t len = 0;
    char *src = kv_store_get_source(s, run->nodes[run->best].hash, &len);
    if (src) {
      bytes_str((double)len, a, sizeof a);
      rep_printf(o,
                 "<details class=\"bestsrc\"><summary>Source of the best kernel (step %d, %s)"
                 "</summary><pre class=\"code\">",
                 run->nodes[run->best].step, a);
      size_t take = len < KV_REPORT_ITEM_CAP ? len : KV_REPORT_ITEM_CAP;
      rep_escn(o, src, take);
      if (take < len)
        rep_printf(o, "\n[cut at %zu of %zu bytes: kevo best %lld -o FILE writes it whole]", take,
                   len, (long long)r->id);
      rep_puts(o, "</pre></details>\n");
      free(src);
    }
  }
}

/* ---- the best-so-far curve -------------------------------------------------- */

static void curve(struct rep_out *o, const struct rep_run *run) {
  const double W = 640, H = 300, X0 = 56, X1 = 624, Y0 = 14, Y1 = 214, SY = 246;
  int smin = 0, smax = 0, timed = 0;
  double lo = 1, hi = 1;
  for (int i = 0; i < run->n; i++) {
    const struct rep_node *n = &run->nodes[i];
    if (i == 0 || n->step < smin)
      smin = n->step;
    if (i == 0 || n->step > smax)
      smax = n->step;
    if (n->verdict == 0 && n->speedup > 0) {
      timed++;
      if (n->speedup < lo)
        lo = n->speedup;
      if (n->speedup > hi)
        hi = n->speedup;
    }
  }
  double lmin = log2(lo) - 0.35, lmax = log2(hi) + 0.35;
  double span = smax > smin ? smax - smin : 1;
#define XS(st) (smax > smin ? X0 + ((st)-smin) / span * (X1 - X0) : (X0 + X1) / 2)
#define YS(v) (Y1 - (log2(v) - lmin) / (lmax - lmin) * (Y1 - Y0))
  rep_printf(o,
             "<figure class=\"chart curve\"><figcaption>Best speedup so far, over steps "
             "<span class=\"muted\">(every candidate a point; 1\xC3\x97 is the reference; log "
             "scale)</span></figcaption>"
             "<svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" aria-label=\"best speedup over steps\">",
             W, H);
  /* y grid: the finest of these sets of values that gives at most 7 lines */
  static const double sets[][10] = {
      {1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8}, {1, 1.5, 2, 3, 5, 7}, {1, 2, 5}, {1, 3}, {1}};
  static const int set_n[] = {10, 6, 3, 2, 1};
  double vlo = exp2(lmin), vhi = exp2(lmax);
  int pick = 4;
  for (int k = 0; k < 5; k++) {
    int cnt = 0;
    for (double dec = pow(10, floor(log10(vlo))); dec <= vhi; dec *= 10)
      for (int j = 0; j < set_n[k]; j++)
        cnt += sets[k][j] * dec >= vlo && sets[k][j] * dec <= vhi;
    if (cnt <= 7) {
      pick = k;
      break;
    }
  }
  for (double dec = pow(10, floor(log10(vlo))); dec <= vhi; dec *= 10)
    for (int j = 0; j < set_n[pick]; j++) {
      double v = sets[pick][j] * dec;
      if (v < vlo || v > vhi)
        continue;
      double y = YS(v);
      rep_printf(o, "<path class=\"grid%s\" d=\"M%.1f %.1fH%.1f\"/>", v == 1 ? " one" : "", X0, y,
                 X1);
      rep_printf(o,
                 "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g\xC3\x97"
                 "</text>",
                 X0 - 6, y + 4, v);
    }
  if (!(vlo <= 1 && vhi >= 1)) /* the reference's line, always */
    rep_printf(o, "<path class=\"grid one\" d=\"M%.1f %.1fH%.1f\"/>", X0, YS(1.0), X1);

  /* the strip of candidates without a speedup */
  rep_printf(o,
             "<path class=\"strip\" d=\"M%.1f %.1fH%.1f\"/><text class=\"tick\" x=\"%.1f\" "
             "y=\"%.1f\">no speedup: rejected, or not timed</text>",
             X0, SY, X1, X0 - 4, SY - 12);
  /* x ticks */
  double xs = nice_step(span, 8);
  if (xs < 1)
    xs = 1;
  for (double t = ceil(smin / xs) * xs; t <= smax + 1e-9; t += xs)
    rep_printf(o,
               "<path class=\"xt\" d=\"M%.1f %.1fV%.1f\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"%.1f\" text-anchor=\"middle\">%.0f</text>",
               XS(t), SY + 14, SY + 18, XS(t), SY + 32, t);
  rep_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">step</text>", X1,
             H - 4);
  /* best so far */
  if (timed) {
    double best = 0;
    int started = 0;
    rep_puts(o, "<path class=\"bsf\" d=\"");
    for (int i = 0; i < run->n; i++) {
      const struct rep_node *n = &run->nodes[i];
      if (n->verdict != 0 || !(n->speedup > best))
        continue;
      best = n->speedup;
      if (!started)
        rep_printf(o, "M%.1f %.1f", XS(n->step), YS(best));
      else
        rep_printf(o, "H%.1fV%.1f", XS(n->step), YS(best));
      started = 1;
    }
    rep_printf(o, "H%.1f\"/>", XS(smax));
  }
  /* the points: rejected first, so the accepted ones are on top */
  double pr = run->n > 2000 ? 2.2 : run->n > 300 ? 3 : 4.2;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < run->n; i++) {
      const struct rep_node *n = &run->nodes[i];
      int has = n->verdict == 0 && n->speedup > 0;
      if (has != pass)
        continue;
      /* without a speedup: a row of the strip per verdict, so colours do not hide each other */
      double y = has ? YS(n->speedup) : SY - 7 + 14.0 * n->verdict / (rep_nverdicts - 1);
      rep_printf(o, "<circle class=\"pt v%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" data-i=\"%d\">",
                 n->verdict, XS(n->step), y, pr, i);
      node_title(o, n);
      rep_puts(o, "</circle>");
    }
  if (run->best >= 0 && run->nodes[run->best].speedup > 0) {
    const struct rep_node *bn = &run->nodes[run->best];
    char sp[32];
    speedup_str(bn->speedup, sp, sizeof sp);
    double x = XS(bn->step), y = YS(bn->speedup);
    int left = x > (X0 + X1) / 2;
    rep_printf(o, "<text class=\"blabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">best %s</text>",
               left ? x - 8 : x + 8, y < Y0 + 14 ? y + 16 : y - 8, left ? "end" : "start", sp);
  }
#undef XS
#undef YS
  rep_puts(o, "</svg></figure>\n");
}

/* ---- the verdict histogram ------------------------------------------------- */

static void histogram(struct rep_out *o, const struct rep_run *run) {
  int rows = 0, most = 1;
  for (int v = 0; v < rep_nverdicts; v++)
    if (run->vcount[v]) {
      rows++;
      if (run->vcount[v] > most)
        most = run->vcount[v];
    }
  const double W = 380, RH = 24, LX = 128, BW = 170;
  rep_printf(o,
             "<figure class=\"chart hist\"><figcaption>Verdicts <span class=\"muted\">(%d "
             "candidates)</span></figcaption><svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
             "aria-label=\"verdict histogram\">",
             run->n, W, rows * RH + 8);
  int k = 0;
  for (int v = 0; v < rep_nverdicts; v++) {
    if (!run->vcount[v])
      continue;
    double y = 4 + k * RH, w = BW * run->vcount[v] / most;
    if (w < 2)
      w = 2;
    rep_printf(
        o,
        "<text class=\"hl\" x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s<title>%s</title>"
        "</text><rect class=\"bar v%d\" x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" "
        "rx=\"3\"/><text class=\"hc\" x=\"%.1f\" y=\"%.1f\">%d \xC2\xB7 %.0f%%</text>",
        LX - 8, y + RH / 2 + 4, rep_verdicts[v].name, rep_verdicts[v].meaning, v, LX, y + 3, w,
        RH - 6, LX + w + 6, y + RH / 2 + 4, run->vcount[v],
        100.0 * run->vcount[v] / (run->n ? run->n : 1));
    k++;
  }
  if (!rows)
    rep_puts(o, "<text class=\"hl\" x=\"8\" y=\"20\">no candidates yet</text>");
  rep_puts(o, "</svg></figure>\n");
}

/* ---- the tree ---------------------------------------------------------------- */

static void tree(struct rep_out *o, const struct rep_run *run) {
  /* A narrow tree gets a viewBox wider than itself, centred, so that it is
   * drawn at most half again as large as life. */
  double W = run->width > 0 ? run->width : 200, H = run->height > 0 ? run->height : 80;
  const double FIG = 880, VMIN = FIG / 1.5;
  double vw = W < VMIN ? VMIN : W, vx = W < VMIN ? -(VMIN - W) / 2 : 0;
  double px = H * FIG / vw;
  if (px < 160)
    px = 160;
  if (px > 900)
    px = 900;
  rep_printf(o,
             "<div class=\"treewrap\"><figure class=\"chart tree\"><figcaption>Search tree "
             "<span class=\"muted\">(colour: verdict; size: speedup; click a node)</span>"
             "<span class=\"tools\"><button type=\"button\" data-z=\"in\" title=\"zoom in\">+"
             "</button><button type=\"button\" data-z=\"out\" title=\"zoom out\">\xE2\x88\x92"
             "</button><button type=\"button\" data-z=\"fit\" title=\"show it all\">fit</button>"
             "</span></figcaption><svg class=\"treesvg%s\" viewBox=\"%.1f 0 %.1f %.1f\" "
             "width=\"100%%\" height=\"%.0f\" preserveAspectRatio=\"xMidYMin meet\" role=\"img\" "
             "aria-label=\"search tree\">",
             run->labelled ? " labelled" : " compact", vx, vw, H, px);
  /* rails: one per row of roots, a stub from it down to each root */
  rep_puts(o, "<g class=\"edges\">");
  for (int i = 0; i < run->n;) {
    const struct rep_node *a = &run->nodes[i];
    if (a->parent >= 0) {
      i++;
      continue;
    }
    double y = a->y, x0 = a->x, x1 = a->x;
    int j = i + 1;
    for (; j < run->n; j++) {
      const struct rep_node *c = &run->nodes[j];
      if (c->parent >= 0)
        continue;
      if (c->y != y)
        break;
      x1 = c->x;
    }
    double rail = y - run->rail;
    rep_printf(o, "<path class=\"rail\" d=\"M%.1f %.1fH%.1f\"/>", x0 - 6, rail, x1 + 6);
    i = j;
  }
  for (int i = 0; i < run->n; i++) {
    const struct rep_node *n = &run->nodes[i];
    if (n->parent < 0) {
      double rail = n->y - run->rail;
      rep_printf(o, "<path class=\"e e-%s\" data-c=\"%d\" d=\"M%.1f %.1fV%.1f\"/>",
                 rep_step_kinds[n->kind].name, i, n->x, rail, n->y - n->r);
    } else {
      const struct rep_node *p = &run->nodes[n->parent];
      double y0 = p->y + p->r, y1 = n->y - n->r, my = (y0 + y1) / 2;
      rep_printf(
          o,
          "<path class=\"e e-%s\" data-c=\"%d\" d=\"M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f\"/>",
          rep_step_kinds[n->kind].name, i, p->x, y0, p->x, my, n->x, my, n->x, y1);
    }
  }
  rep_puts(o, "</g><g class=\"nodes\">");
  if (run->best >= 0) {
    const struct rep_node *bn = &run->nodes[run->best];
    rep_printf(o, "<circle class=\"ring\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", bn->x, bn->y,
               bn->r + 4);
  }
  for (int i = 0; i < run->n; i++) {
    const struct rep_node *n = &run->nodes[i];
    rep_printf(o, "<circle class=\"n v%d\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" data-i=\"%d\">",
               n->verdict, n->x, n->y, n->r, i);
    node_title(o, n);
    rep_puts(o, "</circle>");
  }
  if (run->labelled)
    for (int i = 0; i < run->n; i++) {
      const struct rep_node *n = &run->nodes[i];
      char sp[32];
      speedup_str(n->speedup, sp, sizeof sp);
      rep_printf(o, "<text class=\"ls\" x=\"%.1f\" y=\"%.1f\">%d</text>", n->x + n->r + 2,
                 n->y - n->r + 2, n->step);
      if (n->verdict == 0 && n->speedup > 0)
        rep_printf(o, "<text class=\"lb\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                   n->x, n->y + n->r + 12, sp);
    }
  rep_puts(o, "</g></svg>");
  /* the legend: what is on the page only */
  rep_puts(o, "<div class=\"legend\">");
  for (int v = 0; v < rep_nverdicts; v++)
    if (run->vcount[v])
      rep_printf(o, "<span title=\"%s\"><i class=\"sw v%d\"></i>%s</span>", rep_verdicts[v].meaning,
                 v, rep_verdicts[v].name);
  int kinds[16] = {0};
  for (int i = 0; i < run->n; i++)
    kinds[run->nodes[i].kind] = 1;
  for (int k = 0; k < rep_nstep_kinds; k++)
    if (kinds[k])
      rep_printf(o,
                 "<span><svg class=\"ek\" viewBox=\"0 0 28 8\" width=\"28\" height=\"8\"><path "
                 "class=\"e e-%s\" d=\"M1 4H27\"/></svg>%s</span>",
                 rep_step_kinds[k].name, rep_step_kinds[k].label);
  rep_puts(o, "<span class=\"muted\">bigger: faster; ringed: the best</span></div></figure>");
  rep_puts(o, "<aside class=\"panel\" aria-live=\"polite\"><p class=\"muted\">Click a node in the "
              "tree or a point on the curve to see its plan, its diff to its parent and the "
              "gate's verdict.</p><noscript><p>The details need JavaScript; the charts do "
              "not.</p></noscript></aside></div>\n");
}

/* ---- rules ----------------------------------------------------------------- */

struct eval_ix {
  int64_t eval;
  int node;
};

static int cmp_eval(const void *a, const void *b) {
  const struct eval_ix *x = a, *y = b;
  return x->eval < y->eval ? -1 : x->eval > y->eval;
}

static void rules(struct rep_out *o, const struct rep_run *run) {
  rep_puts(o, "<h3>Rules learnt</h3>");
  if (!run->nrules) {
    rep_puts(o, "<p class=\"muted\">No validity rule came from this run's evaluations.</p>\n");
    return;
  }
  struct eval_ix *ix = malloc((size_t)(run->n ? run->n : 1) * sizeof *ix);
  int nix = 0;
  for (int i = 0; ix && i < run->n; i++)
    if (run->nodes[i].eval_id > 0)
      ix[nix++] = (struct eval_ix){run->nodes[i].eval_id, i};
  if (ix)
    qsort(ix, (size_t)nix, sizeof *ix, cmp_eval);
  rep_puts(o, "<p class=\"muted\">\"You cannot ...\": failures made into rules (by the compiler's "
              "evidence or a model's reading of it); a rule enters later prompts once seen often "
              "enough. <em>seen</em> counts every run; the steps are this run's.</p>"
              "<table class=\"rules\"><thead><tr><th>#</th><th>rule</th><th>origin</th>"
              "<th class=\"num\">seen</th><th>from this run's steps</th><th>first seen</th>"
              "</tr></thead><tbody>");
  for (int r = 0; r < run->nrules; r++) {
    const struct rep_rule *ru = &run->rules[r];
    char d[64];
    rep_date(ru->created_unix, d, sizeof d);
    rep_printf(o, "<tr><td class=\"num\">%lld</td><td>", (long long)ru->id);
    size_t tl = strnlen(ru->text, 600);
    rep_escn(o, ru->text, tl < 500 ? tl : 500);
    if (tl > 500)
      rep_puts(o, "\xE2\x80\xA6 (kevo rules show for the whole)");
    rep_puts(o, "</td><td>");
    rep_esc(o, ru->origin);
    rep_printf(o, "</td><td class=\"num\">%d</td><td class=\"steps\">", ru->count);
    const char *p = ru->evals;
    int shown = 0;
    while (p && *p) {
      char *end;
      long long e = strtoll(p, &end, 10);
      if (end == p)
        break;
      p = end;
      struct eval_ix key = {e, 0}, *hit = NULL;
      if (ix && nix)
        hit = bsearch(&key, ix, (size_t)nix, sizeof *ix, cmp_eval);
      if (!hit)
        continue;
      if (shown == 24) {
        rep_printf(o, " and %d more", ru->run_evals - shown);
        break;
      }
      const struct rep_node *n = &run->nodes[hit->node];
      rep_printf(o, "%s<a href=\"#run-%lld-n%lld\" data-i=\"%d\">%d</a>", shown ? " " : "",
                 (long long)run->row.id, (long long)n->id, hit->node, n->step);
      shown++;
    }
    rep_printf(o, "</td><td class=\"date\">%s</td></tr>", d);
  }
  rep_puts(o, "</tbody></table>\n");
  if (run->rules_total > run->nrules)
    rep_printf(o,
               "<p class=\"muted\">The first %d of %d rules; kevo rules list --all shows "
               "every one.</p>",
               run->nrules, run->rules_total);
  free(ix);
}

/* ---- LLM calls ---------------------------------------------------------------- */

/* A small line chart of cumulative values over the run's time. */
static void cumulative(struct rep_out *o, const struct rep_run *run, const char *title,
                       int what /* 0 tokens, 1 cost */) {
  const double W = 320, H = 170, X0 = 50, X1 = 310, Y0 = 12, Y1 = 140;
  int64_t t0 = run->facts.created_unix;
  double tmax = 1, vmax = 0, a = 0, bsum = 0;
  for (int i = 0; i < run->ncalls; i++) {
    const struct rep_call *c = &run->calls[i];
    double t = (double)(c->created_unix - t0);
    if (t > tmax)
      tmax = t;
    if (what == 0) {
      a += c->tokens_in > 0 ? (double)c->tokens_in : 0;
      bsum += c->tokens_out > 0 ? (double)c->tokens_out : 0;
    } else {
      a += c->cost_usd > 0 ? c->cost_usd : 0;
    }
  }
  vmax = a > bsum ? a : bsum;
  if (!(vmax > 0))
    vmax = 1;
  double ystep = nice_step(vmax, 4);
  vmax = ceil(vmax / ystep) * ystep;
  rep_printf(o,
             "<figure class=\"chart small\"><figcaption>%s</figcaption><svg viewBox=\"0 0 %.0f "
             "%.0f\" role=\"img\">",
             title, W, H);
  for (double v = 0; v <= vmax + 1e-12; v += ystep) {
    double y = Y1 - v / vmax * (Y1 - Y0);
    char lab[32];
    if (what == 0)
      count_str((int64_t)v, lab, sizeof lab);
    else
      usd_str(v, lab, sizeof lab);
    rep_printf(o,
               "<path class=\"grid\" d=\"M%.1f %.1fH%.1f\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"%.1f\" text-anchor=\"end\">%s</text>",
               X0, y, X1, X0 - 5, y + 4, lab);
  }
  double xs = nice_step(tmax, 4);
  for (double t = 0; t <= tmax + 1e-9; t += xs) {
    char lab[32];
    rep_duration(t, lab, sizeof lab);
    rep_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
               X0 + t / tmax * (X1 - X0), H - 10, lab);
  }
  for (int line = 0; line < (what == 0 ? 2 : 1); line++) {
    double v = 0, lx = X0, ly = Y1;
    rep_printf(o, "<path class=\"cum c%d\" d=\"M%.1f %.1f", line + what * 2, X0, Y1);
    for (int i = 0; i < run->ncalls; i++) {
      const struct rep_call *c = &run->calls[i];
      double d = what == 1 ? c->cost_usd : (double)(line == 0 ? c->tokens_in : c->tokens_out);
      if (d > 0)
        v += d;
      double x = X0 + (double)(c->created_unix - t0) / tmax * (X1 - X0);
      if (x < X0)
        x = X0;
      double y = Y1 - v / vmax * (Y1 - Y0);
      /* a vertex only where the line moves by half a pixel: the path stays
       * a few hundred vertices long whatever the number of calls */
      if (i + 1 < run->ncalls && fabs(x - lx) < 0.5 && fabs(y - ly) < 0.5)
        continue;
      rep_printf(o, "H%.1fV%.1f", x, y);
      lx = x;
      ly = y;
    }
    rep_puts(o, "\"/>");
  }
  /* failed calls: ticks on the time axis, one per pixel at most */
  double last = -1;
  for (int i = 0; i < run->ncalls; i++)
    if (!run->calls[i].ok) {
      double x = X0 + (double)(run->calls[i].created_unix - t0) / tmax * (X1 - X0);
      if (x < X0)
        x = X0;
      if (x - last < 1)
        continue;
      rep_printf(o, "<path class=\"fail\" d=\"M%.1f %.1fV%.1f\"/>", x, Y1 - 6, Y1 + 2);
      last = x;
    }
  if (what == 0)
    rep_printf(o,
               "<path class=\"cum c0\" d=\"M%.1f 14h14\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"18\">in</text><path class=\"cum c1\" d=\"M%.1f 14h14\"/><text class=\"tick\" "
               "x=\"%.1f\" y=\"18\">out</text>",
               X0 + 8, X0 + 26, X0 + 50, X0 + 68);
  rep_puts(o, "</svg></figure>");
}

static void llm(struct rep_out *o, const struct rep_run *run) {
  rep_puts(o, "<h3>LLM calls</h3>");
  if (!run->ncalls) {
    if (run->row.strategy && !strcmp(run->row.strategy, "tune"))
      rep_puts(o, "<p class=\"muted\">None: the tune strategy needs no model.</p>\n");
    else
      rep_puts(o, "<p class=\"muted\">No LLM call was recorded for this run.</p>\n");
    return;
  }
  /* by role */
  struct {
    const char *role;
    int calls, failed;
    double in, out, cost, lat;
  } roles[16];
  int nr = 0;
  for (int i = 0; i < run->ncalls; i++) {
    const struct rep_call *c = &run->calls[i];
    int k = 0;
    while (k < nr && strcmp(roles[k].role, c->role))
      k++;
    if (k == nr) {
      if (nr == (int)KV_ARRAY_LEN(roles))
        k = nr - 1; /* more roles than kevo has: counted with the last */
      else {
        memset(&roles[nr], 0, sizeof roles[nr]);
        roles[nr++].role = c->role;
      }
    }
    roles[k].calls++;
    roles[k].failed += !c->ok;
    roles[k].in += c->tokens_in > 0 ? (double)c->tokens_in : 0;
    roles[k].out += c->tokens_out > 0 ? (double)c->tokens_out : 0;
    roles[k].cost += c->cost_usd > 0 ? c->cost_usd : 0;
    roles[k].lat += c->latency_s > 0 ? c->latency_s : 0;
  }
  rep_puts(o, "<div class=\"llm\"><table class=\"roles\"><thead><tr><th>role</th><th class=\"num\">"
              "calls</th><th class=\"num\">failed</th><th class=\"num\">tokens in</th>"
              "<th class=\"num\">tokens out</th><th class=\"num\">cost</th><th class=\"num\">"
              "mean latency</th></tr></thead><tbody>");
  for (int k = 0; k < nr; k++) {
    char a[32], b[32], c[32];
    count_str((int64_t)roles[k].in, a, sizeof a);
    count_str((int64_t)roles[k].out, b, sizeof b);
    usd_str(roles[k].cost, c, sizeof c);
    rep_puts(o, "<tr><td>");
    rep_esc(o, roles[k].role);
    rep_printf(o,
               "</td><td class=\"num\">%d</td><td class=\"num%s\">%d</td><td class=\"num\">%s</td>"
               "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%.2f s</td>"
               "</tr>",
               roles[k].calls, roles[k].failed ? " bad" : "", roles[k].failed, a, b, c,
               roles[k].lat / roles[k].calls);
  }
  rep_puts(o, "</tbody></table>");
  if (run->calls_total > run->ncalls)
    rep_printf(o, "<p class=\"muted\">The first %d of %d calls.</p>", run->ncalls,
               run->calls_total);
  rep_puts(o, "<div class=\"smalls\">");
  cumulative(o, run, "Tokens so far, over the run's time", 0);
  cumulative(o, run,
             run->facts.cost_usd > 0 ? "Spend so far (red ticks: failed calls)"
                                     : "Spend so far: none priced (the model has no prices set)",
             1);
  rep_puts(o, "</div></div>\n");
}

/* ---- the section ------------------------------------------------------------ */

void rep_run_section(struct rep_out *o, struct kv_store *s, struct rep_run *run) {
  long long id = (long long)run->row.id;
  rep_printf(o, "<section class=\"run\" id=\"run-%lld\" data-run=\"%lld\">\n", id, id);
  header(o, s, run);
  rep_puts(o, "<div class=\"row2\">");
  curve(o, run);
  histogram(o, run);
  rep_puts(o, "</div>\n");
  tree(o, run);
  rules(o, run);
  llm(o, run);
  if (run->elided)
    rep_printf(o,
               "<p class=\"note\">%d texts of this run were cut or left out to keep the page "
               "small; each says where its whole text is in the store.</p>",
               run->elided);
  rep_printf(o,
             "<script type=\"application/json\" class=\"kv-data\">{\"run\":%lld,\"best\":%d,"
             "\"nodes\":",
             id, run->best);
  if (run->details)
    rep_json(o, run->details);
  else
    rep_puts(o, "[]");
  rep_puts(o, "}</script>\n</section>\n");
}
