/* A bench's section: its score as KernelBench computes it (kv_bench_summarize),
 * the fast_p curve over p, the score per level, and every task in a table the
 * script can sort. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int rep_bench_load(struct kv_store *s, int64_t bench_id, struct rep_bench *b, char *err,
                   size_t errlen) {
  memset(b, 0, sizeof *b);
  if (kv_store_bench_get(s, bench_id, &b->row, err, errlen) != 0)
    return -1;
  if (kv_store_bench_tasks(s, b->row.id, &b->tasks, &b->n, err, errlen) != 0) {
    kv_bench_row_release(&b->row);
    return -1;
  }
  kv_bench_summarize(b->tasks, b->n, &b->sm);
  b->config = json_loads(b->row.config_json ? b->row.config_json : "", 0, NULL);
  return 0;
}

void rep_bench_release(struct rep_bench *b) {
  kv_bench_task_rows_free(b->tasks, b->n);
  kv_bench_row_release(&b->row);
  json_decref(b->config);
  memset(b, 0, sizeof *b);
}

/* fast_p at any p: the share of all tasks correct and faster than p. */
static double fast_at(const struct rep_bench *b, double p) {
  int k = 0;
  for (int i = 0; i < b->n; i++)
    k += b->tasks[i].correct && b->tasks[i].speedup > p;
  return b->n ? (double)k / b->n : 0;
}

static void curve(struct rep_out *o, const struct rep_bench *b) {
  const double W = 560, H = 250, X0 = 48, X1 = 540, Y0 = 16, Y1 = 212;
  double pmax = 2.5;
  for (int i = 0; i < b->n; i++)
    if (b->tasks[i].correct && b->tasks[i].speedup * 1.1 > pmax)
      pmax = b->tasks[i].speedup * 1.1;
  if (pmax > 16)
    pmax = 16;
#define XP(p) (X0 + (p) / pmax * (X1 - X0))
#define YF(f) (Y1 - (f) * (Y1 - Y0))
  rep_printf(o,
             "<figure class=\"chart fastp\"><figcaption>fast<sub>p</sub> over p <span "
             "class=\"muted\">(the share of all %d tasks correct and more than p times as fast "
             "as the reference)</span></figcaption><svg viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
             "aria-label=\"fast_p over p\">",
             b->n, W, H);
  for (int t = 0; t <= 4; t++) {
    double f = t / 4.0;
    rep_printf(o,
               "<path class=\"grid\" d=\"M%.1f %.1fH%.1f\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>",
               X0, YF(f), X1, X0 - 6, YF(f) + 4, f * 100);
  }
  double step = pmax <= 4 ? 0.5 : pmax <= 8 ? 1 : 2;
  for (double p = 0; p <= pmax + 1e-9; p += step)
    rep_printf(o,
               "<path class=\"xt\" d=\"M%.1f %.1fV%.1f\"/><text class=\"tick\" x=\"%.1f\" "
               "y=\"%.1f\" text-anchor=\"middle\">%g</text>",
               XP(p), Y1, Y1 + 4, XP(p), Y1 + 17, p);
  rep_printf(o, "<path class=\"grid one\" d=\"M%.1f %.1fV%.1f\"/>", XP(1.0), Y0, Y1);
  rep_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">p</text>", X1,
             H - 2);
  /* A step function: it drops at each correct task's speedup. */
  double *sp = malloc(sizeof(double) * (size_t)(b->n ? b->n : 1));
  int k = 0;
  for (int i = 0; sp && i < b->n; i++)
    if (b->tasks[i].correct && b->tasks[i].speedup > 0)
      sp[k++] = b->tasks[i].speedup;
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && sp[j] < sp[j - 1]; j--) {
      double t = sp[j];
      sp[j] = sp[j - 1];
      sp[j - 1] = t;
    }
  rep_printf(o, "<path class=\"bsf\" d=\"M%.1f %.1f", XP(0), YF(fast_at(b, 0)));
  for (int i = 0; i < k; i++) {
    double p = sp[i] < pmax ? sp[i] : pmax;
    rep_printf(o, "H%.1fV%.1f", XP(p), YF(fast_at(b, p)));
  }
  rep_printf(o, "H%.1f\"/>", XP(pmax));
  free(sp);
  for (int i = 0; i < KV_BENCH_NP; i++) {
    double p = kv_bench_p[i], f = b->sm.fast_p[i];
    rep_printf(o,
               "<circle class=\"v0 fp\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>fast_%g = "
               "%.2f</title></circle><text class=\"tick\" x=\"%.1f\" y=\"%.1f\">%.0f%%</text>",
               XP(p), YF(f), p, f, XP(p) + 6, YF(f) - 6, f * 100);
  }
  rep_puts(o, "</svg></figure>");
#undef XP
#undef YF
}

static void levels(struct rep_out *o, const struct rep_bench *b) {
  rep_puts(o, "<figure class=\"chart levels\"><figcaption>Score per level <span "
              "class=\"muted\">(geomean over the correct tasks, as KernelBench)</span>"
              "</figcaption><table class=\"levels\"><thead><tr><th>level</th><th "
              "class=\"num\">tasks</th><th class=\"num\">correct</th>");
  for (int p = 0; p < KV_BENCH_NP; p++)
    rep_printf(o, "<th class=\"num\">fast<sub>%g</sub></th>", kv_bench_p[p]);
  rep_puts(o, "<th class=\"num\">geomean</th></tr></thead><tbody>");
  for (int l = 0; l <= b->sm.nlevels; l++) {
    const struct kv_bench_level *lv = l < b->sm.nlevels ? &b->sm.levels[l] : NULL;
    if (lv && b->sm.nlevels == 1)
      continue;
    char name[16];
    snprintf(name, sizeof name, lv ? (lv->level ? "%d" : "none") : "all", lv ? lv->level : 0);
    rep_printf(o, "<tr%s><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td>",
               lv ? "" : " class=\"total\"", name, lv ? lv->n : b->sm.n,
               lv ? lv->correct : b->sm.correct);
    for (int p = 0; p < KV_BENCH_NP; p++)
      rep_printf(o, "<td class=\"num\">%.2f</td>", lv ? lv->fast_p[p] : b->sm.fast_p[p]);
    double g = lv ? lv->geomean : b->sm.geomean;
    if (g > 0)
      rep_printf(o, "<td class=\"num\">%.2f\xC3\x97</td></tr>", g);
    else
      rep_puts(o, "<td class=\"num\">-</td></tr>");
  }
  rep_puts(o, "</tbody></table></figure>");
}

static void tasks(struct rep_out *o, const struct rep_bench *b) {
  int any_base = 0;
  for (int i = 0; i < b->n; i++)
    any_base |= b->tasks[i].speedup_baseline > 0;
  rep_printf(o,
             "<h3>Tasks <span class=\"muted\">(%d; click a column to sort)</span></h3>"
             "<table class=\"tasks sortable\"><thead><tr><th>#</th><th>task</th><th "
             "class=\"num\">level</th><th>status</th><th>correct</th><th "
             "class=\"num\">speedup</th>%s<th class=\"num\">run</th><th>detail</th></tr>"
             "</thead><tbody>",
             b->n, any_base ? "<th class=\"num\">vs baseline</th>" : "");
  for (int i = 0; i < b->n; i++) {
    const struct kv_bench_task_row *t = &b->tasks[i];
    int done = t->status && !strcmp(t->status, "done");
    rep_printf(o, "<tr class=\"task\"><td class=\"num\" data-v=\"%d\">%d</td><td>", i, i + 1);
    rep_esc(o, t->name);
    rep_printf(o, "</td><td class=\"num\" data-v=\"%d\">", t->level);
    if (t->level)
      rep_printf(o, "%d", t->level);
    else
      rep_puts(o, "-");
    rep_puts(o, "</td><td><span class=\"badge st-");
    rep_esc(o, t->status);
    rep_puts(o, "\">");
    rep_esc(o, t->status);
    rep_printf(o, "</span></td><td data-v=\"%d\">%s</td>", done ? t->correct : -1,
               done ? (t->correct ? "<span class=\"vb v0\">yes</span>" : "no") : "-");
    /* a side off do_bench (kv_side_note, in the row's detail): "!" with the words */
    const char *nr = t->detail ? strstr(t->detail, "vs reference (kevo's") : NULL,
               *nb = t->detail ? strstr(t->detail, "vs baseline (kevo's") : NULL;
    if (t->correct && t->speedup > 0)
      rep_printf(o, "<td class=\"num\" data-v=\"%.6g\">%.2f\xC3\x97%s</td>", t->speedup, t->speedup,
                 nr ? " (not comparable: kevo's eager time is off do_bench's)" : "");
    else
      rep_puts(o, "<td class=\"num\" data-v=\"-1\">-</td>");
    if (any_base) {
      if (t->speedup_baseline > 0)
        rep_printf(o, "<td class=\"num\" data-v=\"%.6g\">%.2f\xC3\x97%s</td>", t->speedup_baseline,
                   t->speedup_baseline,
                   nb ? " (not comparable: kevo's compile time is off do_bench's)" : "");
      else
        rep_puts(o, "<td class=\"num\" data-v=\"-1\">-</td>");
    }
    if (t->run_id > 0)
      rep_printf(
          o, "<td class=\"num\" data-v=\"%lld\"><code title=\"kevo report %lld\">%lld</code></td>",
          (long long)t->run_id, (long long)t->run_id, (long long)t->run_id);
    else
      rep_puts(o, "<td class=\"num\" data-v=\"0\">-</td>");
    rep_puts(o, "<td class=\"detail\">");
    if (t->detail)
      rep_escn(o, t->detail, strnlen(t->detail, 600));
    rep_puts(o, "</td></tr>");
  }
  rep_puts(o, "</tbody></table>");
}

void rep_bench_section(struct rep_out *o, const struct rep_bench *b) {
  const struct kv_bench_row *r = &b->row;
  const struct kv_bench_summary *sm = &b->sm;
  char a[256], c[256], d[256];
  const char *base = strrchr(r->suite_dir ? r->suite_dir : "", '/');
  rep_printf(o,
             "<section class=\"bench\" id=\"bench-%lld\"><header class=\"runhead\"><h2><span "
             "class=\"muted\">bench %lld</span> ",
             (long long)r->id, (long long)r->id);
  rep_esc(o, base && base[1] ? base + 1 : r->suite_dir);
  rep_puts(o, " <span class=\"badge st-");
  rep_esc(o, r->status);
  rep_puts(o, "\">");
  rep_esc(o, r->status);
  rep_puts(o, "</span></h2></header>\n<div class=\"cards\">");
  snprintf(a, sizeof a, "%.0f%%", sm->fast_p[0] * 100);
  snprintf(c, sizeof c, "%d of %d tasks", sm->correct, sm->n);
  rep_card(o, "best", "correct (fast_0)", a, c, "");
  if (sm->geomean > 0)
    snprintf(a, sizeof a, "%.2f\xC3\x97", sm->geomean);
  else
    snprintf(a, sizeof a, "-");
  rep_card(o, NULL, "geomean speedup", a, "over the correct tasks", "");
  snprintf(a, sizeof a, "%.0f%%", sm->fast_p[1] * 100);
  snprintf(c, sizeof c, "fast_1.5 %.0f%% \xC2\xB7 fast_2 %.0f%%", sm->fast_p[2] * 100,
           sm->fast_p[3] * 100);
  rep_card(o, NULL, "faster than the reference (fast_1)", a, c, "");
  snprintf(a, sizeof a, "%d", sm->n);
  snprintf(c, sizeof c, "%d done \xC2\xB7 %d failed \xC2\xB7 %d skipped", sm->done, sm->failed,
           sm->skipped);
  snprintf(d, sizeof d, "%d not yet run", sm->pending);
  rep_card(o, NULL, "tasks", a, c, sm->pending ? d : "");
  const char *strategy = json_string_value(json_object_get(b->config, "strategy"));
  json_t *steps = json_object_get(b->config, "steps");
  snprintf(c, sizeof c, "%lld steps per task", (long long)json_integer_value(steps));
  rep_card(o, NULL, "strategy", strategy ? strategy : "?", json_is_integer(steps) ? c : "",
           json_string_value(json_object_get(b->config, "surface")));
  rep_date(r->created_unix, d, sizeof d);
  rep_card(o, NULL, "suite", base && base[1] ? base + 1 : r->suite_dir, r->suite_dir, d);
  rep_puts(o, "</div>\n<div class=\"benchcharts\">");
  curve(o, b);
  levels(o, b);
  rep_puts(o, "</div>\n");
  tasks(o, b);
  rep_puts(o, "<p class=\"muted\">fast<sub>p</sub> counts every task of the bench (failed, "
              "skipped and unrun ones as incorrect); the geometric mean is over the correct "
              "tasks only, as KernelBench computes them. A task's speedup is its run's best "
              "accepted kernel against the task's reference (eager PyTorch for an imported "
              "module). <code>kevo report RUN</code> draws a task's run.</p></section>\n");
}
