/* A run as the report reads it: its row, facts, nodes (with the page's details
 * when asked: the gate's verdict distilled, the plan, the diff to the parent),
 * LLM calls and rules. Every text that goes into the page is cut at the item
 * cap and charged to the page's budget; past the budget, texts are left out
 * (the page says where each one is). */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REP_CALLS_MAX 200000
#define REP_RULES_MAX 200

/* ---- palettes ------------------------------------------------------------ */

const struct rep_verdict rep_verdicts[] = {
    {"ok", "#2f9e44", "accepted"},
    {"policy_violation", "#7048e8", "calls what a candidate may not"},
    {"compile_error", "#f08c00", "does not compile"},
    {"load_error", "#e8b100", "compiles, does not load"},
    {"crash", "#c2255c", "crashed its worker"},
    {"timeout", "#862e9c", "ran past its deadline"},
    {"unwritten_output", "#ff8787", "left an output unwritten"},
    {"wrong_output", "#e03131", "computes the wrong values"},
    {"input_mutated", "#a61e4d", "changed an input"},
    {"stale_output", "#ffa8a8", "a timed call's output was wrong"},
    {"implausible", "#495057", "faster than the hardware or its clock forged"},
    {"interference", "#868e96", "slowed the reference"},
    {"no_code", "#74c0fc", "the model's reply held no code"},
    {"other", "#adb5bd", "a verdict this kevo does not know"},
};
const int rep_nverdicts = (int)KV_ARRAY_LEN(rep_verdicts);
_Static_assert(KV_ARRAY_LEN(rep_verdicts) <= 32, "rep_run.vcount holds 32 verdicts");

int rep_verdict_index(const char *name) {
  for (int i = 0; name && i < rep_nverdicts - 1; i++)
    if (!strcmp(name, rep_verdicts[i].name))
      return i;
  return rep_nverdicts - 1;
}

const struct rep_step_kind rep_step_kinds[] = {
    {"small", "small step: refine or debug its parent"},
    {"large", "large step: a new kernel from a pool"},
    {"sample", "an independent sample"},
    {"tune", "the starter with other knob values"},
    {"starter", "the starter"},
    {"other", "another action"},
};
const int rep_nstep_kinds = (int)KV_ARRAY_LEN(rep_step_kinds);

/* Which kind of step each action the strategies record is. */
static const struct {
  const char *action;
  int kind;
} action_kinds[] = {
    {"refine", 0},     {"debug", 0},  {"large", 1}, {"sample", 2},
    {"exhaustive", 3}, {"random", 3}, {"climb", 3}, {"starter", 4},
};

int rep_step_kind(const char *action) {
  for (size_t i = 0; action && i < KV_ARRAY_LEN(action_kinds); i++)
    if (!strcmp(action, action_kinds[i].action))
      return action_kinds[i].kind;
  return rep_nstep_kinds - 1;
}

/* ---- small helpers ------------------------------------------------------- */

void rep_duration(double s, char *out, size_t cap) {
  if (!(s >= 0))
    snprintf(out, cap, "-");
  else if (s < 60)
    snprintf(out, cap, "%.0f s", s);
  else if (s < 3600)
    snprintf(out, cap, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
  else
    snprintf(out, cap, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void rep_date(int64_t unix_s, char *out, size_t cap) {
  time_t t = (time_t)unix_s;
  struct tm tm;
  if (unix_s <= 0 || !gmtime_r(&t, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm))
    snprintf(out, cap, "-");
}

const char *rep_config_str(const struct rep_run *run, const char *key, const char *sub) {
  json_t *v = run->config ? json_object_get(run->config, key) : NULL;
  if (v && sub)
    v = json_object_get(v, sub);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

/* ---- id -> index ----------------------------------------------------------- */

struct idmap {
  int64_t *keys;
  int *vals;
  size_t cap; /* a power of two, at least twice the entries */
};

static size_t id_slot(const struct idmap *m, int64_t id) {
  uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (m->cap - 1);
}

static int idmap_put(struct idmap *m, int64_t id, int val, int count) {
  if ((size_t)count * 2 + 2 > m->cap) {
    struct idmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 256;
    g.keys = malloc(g.cap * sizeof *g.keys);
    g.vals = malloc(g.cap * sizeof *g.vals);
    if (!g.keys || !g.vals) {
      free(g.keys);
      free(g.vals);
      return -1;
    }
    for (size_t i = 0; i < g.cap; i++)
      g.keys[i] = 0;
    for (size_t i = 0; i < m->cap; i++)
      if (m->keys[i]) {
        size_t k = id_slot(&g, m->keys[i]);
        while (g.keys[k])
          k = (k + 1) & (g.cap - 1);
        g.keys[k] = m->keys[i];
        g.vals[k] = m->vals[i];
      }
    free(m->keys);
    free(m->vals);
    *m = g;
  }
  size_t k = id_slot(m, id);
  while (m->keys[k] && m->keys[k] != id)
    k = (k + 1) & (m->cap - 1);
  m->keys[k] = id;
  m->vals[k] = val;
  return 0;
}

static int idmap_get(const struct idmap *m, int64_t id) {
  if (!m->cap || id <= 0)
    return -1;
  size_t k = id_slot(m, id);
  while (m->keys[k]) {
    if (m->keys[k] == id)
      return m->vals[k];
    k = (k + 1) & (m->cap - 1);
  }
  return -1;
}

int rep_node_by_id(const struct rep_run *run, int64_t id) {
  for (int i = 0; i < run->n; i++)
    if (run->nodes[i].id == id)
      return i;
  return -1;
}

/* ---- texts for the page -------------------------------------------------------- */

/* What s[0..n) costs in the page: JSON's escapes (\" \\ \n, \u003c for < > &,
 * \uXXXX for control characters and each non-ASCII character), not its bytes. */
static size_t json_cost(const char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char u = (unsigned char)s[i];
    if (u == '<' || u == '>' || u == '&' || u < 0x20 || u == 0x7F)
      c += u == '\n' || u == '\t' || u == '\r' ? 2 : 6;
    else if (u == '"' || u == '\\')
      c += 2;
    else if (u >= 0xF0)
      c += 12; /* a surrogate pair */
    else if (u >= 0xC0)
      c += 6;
    else if (u < 0x80)
      c += 1;
  }
  return c;
}

/* Sets o[key] to s[0..n) made valid UTF-8, cut at `cap` bytes with a note
 * saying where the whole text is (`where`). Past the budget, the text is left
 * out and only its length recorded, as o["key!"]: the script says where it
 * is (a note per text would itself outgrow the page). */
static int put_text(json_t *o, const char *key, const char *s, size_t n, size_t cap,
                    struct rep_budget *b, const char *where) {
  if (!s || !n)
    return 0;
  size_t take = n < cap ? n : cap;
  size_t cost = json_cost(s, take);
  /* a short text (an action, a verdict, most params) is cheaper than saying
   * where it is: KV_REPORT_NODE_BYTES counts those */
  if (cost > b->left && cost > 48) {
    char k2[16];
    snprintf(k2, sizeof k2, "%s!", key);
    b->elided++;
    return json_object_set_new(o, k2, json_integer((json_int_t)n));
  }
  b->left -= cost < b->left ? cost : b->left;
  struct kv_buf t; /* room for every byte to become U+FFFD, and the note */
  kv_buf_init(&t, take * 3 + 1024);
  int rc = kv_utf8_clean(&t, s, take);
  if (rc == 0 && take < n) {
    b->elided++;
    rc = kv_buf_appendf(&t, "\n[cut at %zu of %zu bytes; the whole text is %s]", take, n, where);
  }
  if (rc == 0 && json_object_set_new(o, key, json_stringn_nocheck(t.data ? t.data : "", t.len)))
    rc = -1;
  kv_buf_release(&t);
  return rc;
}

static void set_real(json_t *o, const char *key, double v) {
  if (isfinite(v))
    json_object_set_new(o, key, json_real(v));
}

static void set_str(json_t *o, const char *key, const char *s, size_t cap, struct rep_budget *b) {
  if (s && *s)
    put_text(o, key, s, strlen(s), cap, b, "in the store");
}

/* [median_us, iqr_us, cv, n] of a timing's side. */
static json_t *stats4(json_t *st) {
  if (!json_is_object(st))
    return NULL;
  return json_pack("[f,f,f,I]", json_number_value(json_object_get(st, "median_us")),
                   json_number_value(json_object_get(st, "iqr_us")),
                   json_number_value(json_object_get(st, "cv")),
                   (json_int_t)json_integer_value(json_object_get(st, "n")));
}

/* The gate's verdict (evaluations.result_json), distilled for the panel. */
static void distill_result(json_t *o, const char *result_json, int64_t eval_id,
                           struct rep_budget *b) {
  json_t *r = json_loads(result_json, 0, NULL);
  if (!json_is_object(r)) {
    json_decref(r);
    return;
  }
  char where[96];
  snprintf(where, sizeof where, "in the store (evaluation %lld, result_json)", (long long)eval_id);
  json_t *c = json_object_get(r, "compile");
  if (json_is_object(c)) {
    set_real(o, "cs", json_number_value(json_object_get(c, "seconds")));
    if (json_is_true(json_object_get(c, "cached")))
      json_object_set_new(o, "cc", json_true());
    const char *log = json_string_value(json_object_get(c, "log"));
    if (log && *log)
      put_text(o, "cl", log, strlen(log), b->item_cap / 4, b, where);
    json_t *ks = json_object_get(c, "kernels"), *k;
    size_t i;
    if (json_is_array(ks) && json_array_size(ks)) {
      json_t *out = json_array();
      json_array_foreach(ks, i, k) {
        if (i >= 32)
          break;
        const char *name = json_string_value(json_object_get(k, "name"));
        struct kv_buf nb;
        kv_buf_init(&nb, 256);
        kv_utf8_clean(&nb, name ? name : "?", name ? strnlen(name, 200) : 1);
        json_array_append_new(
            out, json_pack("[s,I,I,I,I,I]", nb.data ? nb.data : "?",
                           (json_int_t)json_integer_value(json_object_get(k, "registers")),
                           (json_int_t)json_integer_value(json_object_get(k, "smem_bytes")),
                           (json_int_t)json_integer_value(json_object_get(k, "stack_bytes")),
                           (json_int_t)json_integer_value(json_object_get(k, "spill_store_bytes")),
                           (json_int_t)json_integer_value(json_object_get(k, "spill_load_bytes"))));
        kv_buf_release(&nb);
      }
      json_object_set_new(o, "k", out);
    }
  }
  json_t *checks = json_object_get(r, "checks"), *ck;
  size_t i;
  if (json_is_array(checks)) {
    int passed = 0, total = 0;
    json_array_foreach(checks, i, ck) {
      total++;
      const char *v = json_string_value(json_object_get(ck, "verdict"));
      if (v && !strcmp(v, "ok")) {
        passed++;
      } else if (!json_object_get(o, "ff")) {
        const char *sz = json_string_value(json_object_get(ck, "sizes"));
        const char *d = json_string_value(json_object_get(ck, "detail"));
        char line[1024];
        snprintf(line, sizeof line, "at %s (seed %lld): %s: %s", sz ? sz : "?",
                 (long long)json_integer_value(json_object_get(ck, "seed")), v ? v : "?",
                 d ? d : "");
        set_str(o, "ff", line, sizeof line, b);
      }
    }
    if (total)
      json_object_set_new(o, "ck", json_pack("[i,i]", passed, total));
  }
  json_t *sec = json_object_get(r, "seconds");
  if (json_is_object(sec))
    json_object_set_new(o, "sec",
                        json_pack("[f,f,f]", json_number_value(json_object_get(sec, "compile")),
                                  json_number_value(json_object_get(sec, "check")),
                                  json_number_value(json_object_get(sec, "timing"))));
  json_t *t = json_object_get(r, "timing");
  if (json_is_object(t)) {
    json_t *tm = json_object();
    set_str(tm, "at", json_string_value(json_object_get(t, "sizes")), 256, b);
    json_t *s4;
    if ((s4 = stats4(json_object_get(t, "candidate"))))
      json_object_set_new(tm, "c", s4);
    if ((s4 = stats4(json_object_get(t, "reference"))))
      json_object_set_new(tm, "ref", s4);
    if ((s4 = stats4(json_object_get(t, "reference_alone"))))
      json_object_set_new(tm, "alone", s4);
    if ((s4 = stats4(json_object_get(t, "baseline"))))
      json_object_set_new(tm, "base", s4);
    set_real(tm, "sp", json_number_value(json_object_get(t, "speedup")));
    if (json_object_get(t, "speedup_vs_baseline"))
      set_real(tm, "sb", json_number_value(json_object_get(t, "speedup_vs_baseline")));
    char note[160]; /* a torch side off do_bench: its speedup is said so */
    if (kv_side_note_json(t, 0, note, sizeof note))
      set_str(tm, "sn", note, sizeof note, b);
    if (kv_side_note_json(t, 1, note, sizeof note))
      set_str(tm, "bn", note, sizeof note, b);
    set_real(tm, "rf", json_number_value(json_object_get(t, "roofline_fraction")));
    set_real(tm, "gbs", json_number_value(json_object_get(t, "gbs")));
    set_real(tm, "gf", json_number_value(json_object_get(t, "gflops")));
    json_t *clk = json_object_get(t, "clock");
    if (json_is_true(json_object_get(clk, "median_raised")))
      json_object_set_new(tm, "raised", json_true());
    json_t *timer = json_object_get(t, "timer");
    if (json_is_object(timer)) {
      char tl[128];
      const char *tc = json_string_value(json_object_get(timer, "candidate"));
      const char *tr = json_string_value(json_object_get(timer, "reference"));
      snprintf(tl, sizeof tl, "candidate %s, reference %s", tc ? tc : "?", tr ? tr : "?");
      set_str(tm, "timer", tl, sizeof tl, b);
    }
    json_object_set_new(o, "tm", tm);
  }
  json_t *sb = json_object_get(r, "sandbox");
  if (json_is_object(sb)) {
    char off[256] = "";
    const char *k;
    json_t *v;
    json_object_foreach(sb, k, v) {
      if (json_is_string(v) && strcmp(json_string_value(v), "active")) {
        size_t l = strlen(off);
        snprintf(off + l, sizeof off - l, "%s%s %s", l ? ", " : "", k, json_string_value(v));
      }
    }
    if (off[0]) /* the panel says "every layer active" when this is absent */
      set_str(o, "sbx", off, sizeof off, b);
  }
  const char *so = json_string_value(json_object_get(r, "stdout"));
  const char *se = json_string_value(json_object_get(r, "stderr"));
  if (so && *so)
    put_text(o, "so", so, strlen(so), 4096, b, where);
  if (se && *se)
    put_text(o, "se", se, strlen(se), 4096, b, where);
  json_decref(r);
}

/* The code of a node: its diff to the parent's source (or to the starter for
 * a tuned root), else its whole source; a reply without code as text. */
static void add_code(struct kv_store *s, json_t *o, const struct kv_node_detail *d,
                     const char *base_hash, const char *base_label, struct rep_budget *b) {
  if (!d->source_hash)
    return;
  char where[160];
  snprintf(where, sizeof where,
           "in the store: SELECT text FROM sources WHERE hash = '%.64s' (or kevo best for the "
           "best kernel)",
           d->source_hash);
  size_t len = 0;
  char *src = kv_store_get_source(s, d->source_hash, &len);
  if (!src)
    return;
  json_object_set_new(o, "sz", json_integer((json_int_t)len));
  if (d->verdict && !strcmp(d->verdict, "no_code")) {
    put_text(o, "rp", src, len, b->item_cap, b, where);
    free(src);
    return;
  }
  size_t blen = 0;
  char *base = base_hash ? kv_store_get_source(s, base_hash, &blen) : NULL;
  int done = 0;
  if (base) {
    struct kv_buf df;
    kv_buf_init(&df, b->item_cap * 4);
    int rc = kv_line_diff(base, blen, src, len, 3, &df);
    if (rc == 0 && !df.truncated) {
      if (strcmp(base_label, "its parent")) /* the panel names the parent itself */
        json_object_set_new(o, "db", json_string(base_label));
      if (df.len)
        put_text(o, "df", df.data, df.len, b->item_cap, b, where);
      else
        json_object_set_new(o, "df", json_string(""));
      done = 1;
    } else if (rc == 1 || df.truncated) {
      char note[160];
      snprintf(note, sizeof note, "too different from %s to diff: the whole source", base_label);
      json_object_set_new(o, "dn", json_string(note));
    }
    kv_buf_release(&df);
    free(base);
  }
  if (!done)
    put_text(o, "src", src, len, b->item_cap, b, where);
  free(src);
}

/* ---- loading ------------------------------------------------------------ */

struct load_ctx {
  struct kv_store *s;
  struct rep_run *run;
  struct rep_budget *budget;
  struct idmap map;
  const char *starter; /* the tuned starter's hash, for roots */
  int oom;
};

static int node_cb(void *arg, const struct kv_node_detail *d) {
  struct load_ctx *c = arg;
  struct rep_run *run = c->run;
  if (run->n >= KV_REPORT_NODES_MAX)
    return 1;
  if (run->n == run->cap) {
    int cap = run->cap ? run->cap * 2 : 64;
    struct rep_node *g = realloc(run->nodes, (size_t)cap * sizeof *g);
    if (!g)
      return c->oom = 1;
    run->nodes = g;
    run->cap = cap;
  }
  struct rep_node *n = &run->nodes[run->n];
  memset(n, 0, sizeof *n);
  n->id = d->id;
  n->eval_id = d->eval_id;
  n->parent_id = d->parent_id;
  n->created_unix = d->created_unix;
  n->step = d->step;
  n->parent = idmap_get(&c->map, d->parent_id);
  n->verdict = rep_verdict_index(d->verdict);
  n->kind = rep_step_kind(d->action);
  n->speedup = d->speedup;
  n->reward = d->reward;
  n->action = dup_or_null(d->action ? d->action : "?");
  n->params = dup_or_null(d->params);
  n->hash = dup_or_null(d->source_hash);
  n->other = n->verdict == rep_nverdicts - 1 ? dup_or_null(d->verdict ? d->verdict : "?") : NULL;
  n->first_child = n->next_sibling = n->last_child = -1;
  if (!n->action || (d->params && !n->params) || (d->source_hash && !n->hash) ||
      (n->verdict == rep_nverdicts - 1 && !n->other)) {
    free(n->action);
    free(n->params);
    free(n->hash);
    free(n->other);
    return c->oom = 1;
  }
  int idx = run->n++;
  if (idmap_put(&c->map, d->id, idx, run->n) != 0)
    return c->oom = 1;
  run->vcount[n->verdict]++;
  if (!c->budget)
    return 0;

  struct rep_budget *b = c->budget;
  /* The best kernel's texts are shown whatever the budget has left (the
   * page's estimate reserves room for them). */
  int best = d->eval_id > 0 && d->eval_id == run->row.best_eval_id;
  size_t saved = b->left, vip = (size_t)1 << 40;
  if (best)
    b->left = vip;
  json_t *o = json_object();
  if (!o)
    return c->oom = 1;
  json_object_set_new(o, "id", json_integer(d->id));
  json_object_set_new(o, "s", json_integer(d->step));
  json_object_set_new(o, "p", json_integer(n->parent));
  json_object_set_new(o, "v", json_string(rep_verdicts[n->verdict].name));
  if (n->verdict == rep_nverdicts - 1 && d->verdict)
    set_str(o, "vo", d->verdict, 64, b);
  set_str(o, "a", d->action, 64, b);
  if (d->eval_id > 0)
    json_object_set_new(o, "e", json_integer(d->eval_id));
  if (d->source_hash)
    json_object_set_new(o, "h", json_stringn(d->source_hash, strnlen(d->source_hash, 64)));
  if (d->speedup >= 0)
    set_real(o, "x", d->speedup);
  if (d->reward >= 0)
    set_real(o, "r", d->reward);
  if (d->created_unix > 0 && run->facts.created_unix > 0)
    json_object_set_new(o, "t", json_integer(d->created_unix - run->facts.created_unix));
  set_str(o, "pa", d->params, 1024, b);
  set_str(o, "pl", d->plan, b->item_cap / 4, b);
  set_str(o, "det", d->detail, 4096, b);
  if (d->result_json)
    distill_result(o, d->result_json, d->eval_id, b);
  const char *base = NULL;
  char label[64];
  if (n->parent >= 0) {
    base = run->nodes[n->parent].hash;
    snprintf(label, sizeof label, "its parent");
  } else if (c->starter) {
    base = c->starter;
    snprintf(label, sizeof label, "the starter");
  }
  add_code(c->s, o, d, base, label, b);
  if (best) {
    size_t used = vip - b->left;
    b->left = saved > used ? saved - used : 0;
  }
  if (json_array_append_new(run->details, o) != 0)
    return c->oom = 1;
  return 0;
}

static int call_cb(void *arg, const struct kv_llm_call_brief *cb) {
  struct load_ctx *c = arg;
  struct rep_run *run = c->run;
  run->calls_total++;
  if (run->ncalls >= REP_CALLS_MAX)
    return 0;
  if (run->ncalls == run->calls_cap) {
    int cap = run->calls_cap ? run->calls_cap * 2 : 64;
    struct rep_call *g = realloc(run->calls, (size_t)cap * sizeof *g);
    if (!g)
      return c->oom = 1;
    run->calls = g;
    run->calls_cap = cap;
  }
  struct rep_call *o = &run->calls[run->ncalls];
  memset(o, 0, sizeof *o);
  o->id = cb->id;
  o->node_id = cb->node_id;
  o->created_unix = cb->created_unix;
  o->tokens_in = cb->input_tokens;
  o->tokens_out = cb->output_tokens;
  o->cost_usd = cb->cost_usd;
  o->latency_s = cb->latency_s;
  o->ok = cb->status && !strcmp(cb->status, "ok");
  o->role = strdup(cb->role ? cb->role : "?");
  if (!o->role)
    return c->oom = 1;
  run->ncalls++;
  return 0;
}

static int rule_cb(void *arg, const struct kv_run_rule *r) {
  struct load_ctx *c = arg;
  struct rep_run *run = c->run;
  run->rules_total++;
  if (run->nrules >= REP_RULES_MAX)
    return 0;
  if (run->nrules == run->rules_cap) {
    int cap = run->rules_cap ? run->rules_cap * 2 : 16;
    struct rep_rule *g = realloc(run->rules, (size_t)cap * sizeof *g);
    if (!g)
      return c->oom = 1;
    run->rules = g;
    run->rules_cap = cap;
  }
  struct rep_rule *o = &run->rules[run->nrules];
  memset(o, 0, sizeof *o);
  o->id = r->id;
  o->created_unix = r->created_unix;
  o->updated_unix = r->updated_unix;
  o->count = r->count;
  o->run_evals = r->run_evals;
  o->text = dup_or_null(r->text ? r->text : "");
  o->origin = dup_or_null(r->origin ? r->origin : "?");
  o->evals = dup_or_null(r->evals ? r->evals : "");
  run->nrules++;
  if (!o->text || !o->origin || !o->evals)
    return c->oom = 1;
  return 0;
}

int rep_run_load(struct kv_store *s, int64_t run_id, struct rep_budget *budget, struct rep_run *run,
                 char *err, size_t errlen) {
  memset(run, 0, sizeof *run);
  run->best = -1;
  if (kv_store_run_get(s, run_id, &run->row, err, errlen) != 0)
    return -1;
  run->total = run->row.nnodes;
  if (kv_store_run_facts(s, run->row.id, &run->facts, err, errlen) != 0)
    return -1;
  run->config = run->row.config_json ? json_loads(run->row.config_json, 0, NULL) : NULL;
  struct load_ctx c = {.s = s, .run = run, .budget = budget};
  int elided_before = budget ? budget->elided : 0;
  c.starter = rep_config_str(run, "starter", NULL);
  if (budget && !(run->details = json_array()))
    return kv_error(err, errlen, "report: out of memory");
  int rc = kv_store_run_node_details(s, run->row.id, budget != NULL, node_cb, &c, err, errlen);
  free(c.map.keys);
  free(c.map.vals);
  if (rc >= 0 && !c.oom)
    rc = kv_store_run_llm_calls(s, run->row.id, call_cb, &c, err, errlen);
  if (rc >= 0 && !c.oom)
    rc = kv_store_run_rules(s, run->row.id, rule_cb, &c, err, errlen);
  if (c.oom)
    return kv_error(err, errlen, "report: out of memory reading run %lld", (long long)run->row.id);
  if (rc < 0)
    return -1;
  /* The best node as kevo best picks it: accepted, fastest, earliest. */
  for (int i = 0; i < run->n; i++) {
    const struct rep_node *n = &run->nodes[i];
    if (n->verdict != 0)
      continue;
    if (run->best < 0 || n->speedup > run->nodes[run->best].speedup)
      run->best = i;
  }
  if (budget)
    run->elided = budget->elided - elided_before;
  return 0;
}

void rep_run_release(struct rep_run *run) {
  for (int i = 0; i < run->n; i++) {
    free(run->nodes[i].action);
    free(run->nodes[i].params);
    free(run->nodes[i].hash);
    free(run->nodes[i].other);
  }
  free(run->nodes);
  for (int i = 0; i < run->ncalls; i++)
    free(run->calls[i].role);
  free(run->calls);
  for (int i = 0; i < run->nrules; i++) {
    free(run->rules[i].text);
    free(run->rules[i].origin);
    free(run->rules[i].evals);
  }
  free(run->rules);
  json_decref(run->details);
  json_decref(run->config);
  kv_run_row_release(&run->row);
  kv_run_facts_release(&run->facts);
  memset(run, 0, sizeof *run);
}
