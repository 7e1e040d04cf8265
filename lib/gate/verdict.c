/* The verdict's words and marks, and small pieces every stage of the gate
 * shares (kevo/gate.h, internal.h): the lowest file of lib/gate, calling
 * nothing of the others. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
static const char *verdict_names[KV_V_COUNT] = {
    "policy_violation", "compile_error",    "load_error",   "crash",
    "timeout",          "unwritten_output", "wrong_output", "input_mutated",
    "stale_output",     "implausible",      "interference", "ok"};

const char *kv_verdict_name(enum kv_verdict v) {
  return (unsigned)v < KV_V_COUNT ? verdict_names[v] : "unknown";
}

int kv_verdict_from_name(const char *name) {
  for (int i = 0; i < KV_V_COUNT; i++)
    if (name && !strcmp(name, verdict_names[i]))
      return i;
  return -1;
}

void kv_gate_opts_default(struct kv_gate_opts *o) {
  memset(o, 0, sizeof(*o));
  o->surface = "cpu";
  o->seed = 0;
  o->nseeds = 2;
  o->timing = 1;
  o->job_deadline_s = 10;
  o->compile_deadline_s = 60;
  o->time_budget_s = 1.0;
  o->sandbox = 1;
  o->lock_wait_s = KV_DEVLOCK_WAIT_S;
  o->timing_ci = KV_TIMING_CI_DEFAULT;
}

void kv_request_sizes(const struct kv_task *t, const struct kv_sizeset *drawn, json_t *req) {
  if (!drawn)
    return;
  json_t *a = json_array();
  for (int p = 0; p < t->nparams; p++)
    json_array_append_new(a, json_integer(drawn->values[p]));
  json_object_set_new(req, "sizes", a);
}

void kv_tail_of(const struct kv_buf *b, char *out, size_t cap) {
  out[0] = 0;
  if (!b->data || !b->len)
    return;
  size_t n = b->len < 200 ? b->len : 200;
  snprintf(out, cap, "; its last output: %.*s", (int)n, b->data + b->len - n);
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
}

void kv_set_verdict(struct kv_gate_result *r, enum kv_verdict v, const char *fmt, ...) {
  r->verdict = v;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
}

void kv_gate_mark_at(struct kv_gate_result *r, const char *what, double at) {
  if (r->nmarks >= KV_MARKS_MAX)
    return;
  struct kv_mark *m = &r->marks[r->nmarks++];
  snprintf(m->what, sizeof m->what, "%s", what);
  m->at_s = at - r->start_s;
}

void kv_gate_mark(struct kv_gate_result *r, const char *what) {
  kv_gate_mark_at(r, what, kv_now_s());
}
