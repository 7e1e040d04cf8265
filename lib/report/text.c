/* `kevo runs show`: a run's header and its tree as indented lines, for the
 * terminal. Strings from the store lose their control characters (a params
 * string or a verdict cannot move the cursor or set a colour) and long ones
 * are cut. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TEXT_MAX = 64 << 20, INDENT_MAX = 32 };

/* s, at most max bytes, with control characters as '?'. */
static void clean(struct kv_buf *b, const char *s, size_t max) {
  if (!s)
    return;
  size_t n = strnlen(s, max + 1);
  int cut = n > max;
  if (cut)
    n = max;
  char tmp[512];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    tmp[k++] = c < 0x20 || c == 0x7F ? '?' : (char)c;
    if (k == sizeof tmp) {
      kv_buf_append(b, tmp, k);
      k = 0;
    }
  }
  kv_buf_append(b, tmp, k);
  if (cut)
    kv_buf_append(b, "...", 3);
}

static void row(struct kv_buf *b, const char *key, const char *value) {
  kv_buf_appendf(b, "  %-10s ", key);
  clean(b, value && *value ? value : "-", 300);
  kv_buf_append(b, "\n", 1);
}

static void node_line(struct kv_buf *b, const struct rep_run *run, int i) {
  const struct rep_node *n = &run->nodes[i];
  int d = n->depth;
  if (d > INDENT_MAX)
    kv_buf_appendf(b, "%*s(depth %d) ", 2 + 2 * INDENT_MAX, "", d);
  else
    kv_buf_appendf(b, "%*s", 2 + 2 * d, "");
  kv_buf_appendf(b, "%d ", n->step);
  clean(b, n->action, 40);
  if (n->params && *n->params) {
    kv_buf_append(b, " ", 1);
    clean(b, n->params, 120);
  }
  kv_buf_append(b, ": ", 2);
  clean(b, n->other ? n->other : rep_verdicts[n->verdict].name, 64);
  if (n->speedup > 0)
    kv_buf_appendf(b, " %.2fx", n->speedup);
  kv_buf_appendf(b, "%s\n", i == run->best ? "  * best" : "");
}

/* The best's speedup, and against torch.compile where it was timed, each
 * with kv_side_note's words where kevo's time of that side is off do_bench's. */
static void best_speedup(struct kv_store *s, const struct rep_node *bn, char *out, size_t cap) {
  int n = snprintf(out, cap, "%.2fx", bn->speedup);
  struct kv_eval_row ev;
  char err[256];
  if (bn->eval_id <= 0 || kv_store_get_eval(s, bn->eval_id, &ev, err, sizeof err) < 0)
    return;
  json_t *j = json_loads(ev.result_json ? ev.result_json : "", 0, NULL);
  json_t *t = json_object_get(j, "timing");
  char note[160];
  if (n >= 0 && (size_t)n < cap && kv_side_note_json(t, 0, note, sizeof note))
    n += snprintf(out + n, cap - (size_t)n, "%s", note);
  double b = json_number_value(json_object_get(t, "speedup_vs_baseline"));
  if (n >= 0 && (size_t)n < cap && b > 0) {
    kv_side_note_json(t, 1, note, sizeof note);
    snprintf(out + n, cap - (size_t)n, ", %.2fx vs %s%s", b,
             json_string_value(json_object_get(t, "baseline_kind"))
                 ? json_string_value(json_object_get(t, "baseline_kind"))
                 : "the baseline",
             note);
  }
  json_decref(j);
  kv_eval_row_release(&ev);
}

int kv_report_run_text(struct kv_store *s, int64_t run_id, char **text, size_t *len, char *err,
                       size_t errlen) {
  *text = NULL;
  *len = 0;
  struct rep_run run;
  if (rep_run_load(s, run_id, NULL, &run, err, errlen) != 0) {
    rep_run_release(&run);
    return -1;
  }
  rep_layout(&run); /* for the depths and the children lists */
  struct kv_buf b;
  kv_buf_init(&b, TEXT_MAX);
  char x[256], y[256];
  const struct kv_run_row *r = &run.row;
  kv_buf_appendf(&b, "run %lld  ", (long long)r->id);
  clean(&b, r->task_name, 120);
  kv_buf_append(&b, "  ", 2);
  clean(&b, r->strategy, 40);
  kv_buf_append(&b, "  ", 2);
  clean(&b, r->status, 40);
  kv_buf_append(&b, "\n", 1);
  const char *dir = rep_config_str(&run, "task_dir", NULL);
  const char *surface = rep_config_str(&run, "surface", NULL);
  if (!surface)
    surface = run.facts.surface ? run.facts.surface : "?";
  snprintf(x, sizeof x, "%s%s%s", r->task_name ? r->task_name : "?", dir ? "  " : "",
           dir ? dir : "");
  row(&b, "task", x);
  snprintf(x, sizeof x, "%s%s%s", surface, run.facts.device ? "  " : "",
           run.facts.device ? run.facts.device : "");
  row(&b, "surface", x);
  const char *model = rep_config_str(&run, "model", "model");
  const char *prov = rep_config_str(&run, "model", "provider");
  const char *url = rep_config_str(&run, "model", "base_url");
  if (model)
    snprintf(x, sizeof x, "%s  (%s%s%s)", model, prov ? prov : "?", url ? ", " : "",
             url ? url : "");
  else
    snprintf(x, sizeof x, "none (no LLM)");
  row(&b, "model", x);
  int asked = (int)json_integer_value(json_object_get(run.config, "steps"));
  if (asked && run.total < asked && r->stop_reason && !strcmp(r->status, "done"))
    snprintf(x, sizeof x, "%d, %d accepted (%.160s)", run.total, run.vcount[0], r->stop_reason);
  else if (asked)
    snprintf(x, sizeof x, "%d of %d asked, %d accepted", run.total, asked, run.vcount[0]);
  else
    snprintf(x, sizeof x, "%d, %d accepted", run.total, run.vcount[0]);
  row(&b, "steps", x);
  if (r->stop_reason && strcmp(r->status, "done")) {
    snprintf(x, sizeof x, "%.250s", r->stop_reason);
    row(&b, "ended", x);
  }
  snprintf(x, sizeof x, "$%.4f  %lld calls (%lld failed), %lld tokens in, %lld out",
           run.facts.cost_usd, (long long)run.facts.llm_calls, (long long)run.facts.llm_failed,
           (long long)run.facts.tokens_in, (long long)run.facts.tokens_out);
  row(&b, "LLM spend", x);
  rep_duration((double)(run.facts.last_unix - run.facts.created_unix), y, sizeof y);
  snprintf(x, sizeof x, "%s  (started ", y);
  rep_date(run.facts.created_unix, y, sizeof y);
  strncat(x, y, sizeof x - strlen(x) - 2);
  strncat(x, ")", sizeof x - strlen(x) - 1);
  row(&b, "wall time", x);
  if (run.best >= 0) {
    const struct rep_node *bn = &run.nodes[run.best];
    if (bn->speedup > 0)
      best_speedup(s, bn, y, sizeof y);
    else
      snprintf(y, sizeof y, "accepted, not timed,");
    snprintf(x, sizeof x, "%s ok at step %d (node %lld): kevo best %lld -o best-run%lld.c", y,
             bn->step, (long long)bn->id, (long long)r->id, (long long)r->id);
  } else {
    snprintf(x, sizeof x, "none accepted");
  }
  row(&b, "best", x);
  x[0] = 0;
  for (int v = 0; v < rep_nverdicts; v++)
    if (run.vcount[v]) {
      size_t l = strlen(x);
      snprintf(x + l, sizeof x - l, "%s%s %d", l ? ", " : "", rep_verdicts[v].name, run.vcount[v]);
    }
  row(&b, "verdicts", x);
  snprintf(x, sizeof x, "%d learnt from this run's evaluations", run.nrules);
  row(&b, "rules", x);
  if (run.n < run.total)
    kv_buf_appendf(&b, "\nthe first %d of %d nodes:\n", run.n, run.total);
  kv_buf_appendf(&b, "\ntree (step action params: verdict speedup):\n");
  if (!run.n)
    kv_buf_appendf(&b, "  (no nodes yet)\n");
  /* Pre-order, roots and children in step order, without recursion. */
  int *stack = malloc((size_t)(run.n ? run.n : 1) * sizeof *stack);
  int rc = 0;
  if (!stack) {
    rc = kv_error(err, errlen, "report: out of memory");
  } else {
    for (int i = 0; i < run.n; i++) {
      if (run.nodes[i].parent >= 0)
        continue;
      int sp = 0;
      stack[sp++] = i;
      while (sp > 0) {
        int j = stack[--sp];
        node_line(&b, &run, j);
        /* push children last-first so that the first pops first */
        int k0 = sp;
        for (int c = run.nodes[j].first_child; c >= 0; c = run.nodes[c].next_sibling)
          stack[sp++] = c;
        for (int a = k0, z = sp - 1; a < z; a++, z--) {
          int t = stack[a];
          stack[a] = stack[z];
          stack[z] = t;
        }
      }
    }
    free(stack);
  }
  if (rc == 0) {
    *len = b.len;
    *text = kv_buf_detach(&b);
    if (!*text)
      rc = kv_error(err, errlen, "report: out of memory");
  }
  kv_buf_release(&b);
  rep_run_release(&run);
  return rc;
}
