/* The clean worker's lent buffers (lend.h): the gate's side of KV_MSG_LEND. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/wire.h"
#include "lend.h"

static double lend_deadline(const struct kv_session *s) {
  return (s->o->job_deadline_s > 0 ? s->o->job_deadline_s : 10) + KV_LEND_SETTLE_S;
}

/* The clean kevo-worker that lends: the reference's, or for a reference.py
 * task one of its own (lw: the reference's is Python, and the empty entry's
 * must not be the lender, timing.c's assign_workers). */
static struct kv_worker *lender(struct kv_session *s) {
  return s->torch ? &s->lw : &s->rw;
}

/* One LEND job of the clean worker. KV_CALL_ERROR: it refused (detail). */
static enum kv_call_status lend_call(struct kv_session *s, json_t *req, size_t want, uint8_t **blob,
                                     json_t **rep, char *d, size_t dl) {
  json_t *r = NULL;
  enum kv_call_status st =
      kv_worker_call(lender(s), KV_MSG_LEND, req, lend_deadline(s), &r, blob, want, d, dl);
  json_decref(req);
  if (rep)
    *rep = r;
  else
    json_decref(r);
  return st;
}

static int slot_of(struct kv_session *s, const char *id) {
  for (int i = 0; i < s->lend.n; i++)
    if (!strcmp(s->lend.l[i].id, id))
      return i;
  return -1;
}

/* On by default for a C/CUDA reference (verified on an H200, 2026-11-28:
 * tests/gpu/test_gpu_verdict, test_gpu_kernels). A torch reference lends
 * from a kevo-worker of its own (lw) that has not run on a GPU yet: opt-in
 * there (KEVO_LEND=1) until it has. KEVO_LEND=0 or KEVO_NO_LEND: never. */
int kv_lend_wanted(const struct kv_session *s) {
  const char *on = getenv("KEVO_LEND");
  int want = on ? !strcmp(on, "1") : !s->torch;
  return s->sf->device_in_worker && want && !getenv("KEVO_NO_LEND") &&
         !(s->lend.tried && !s->lend.ipc);
}

int kv_lend(struct kv_session *s, const char *id, const char *set, int index,
            const struct kv_sizeset *drawn, int calls, json_t **handles, char *err, size_t errlen) {
  struct kv_lend *L = &s->lend;
  *handles = NULL;
  if (L->tried && !L->ipc)
    return 0;
  if (!kv_lend_wanted(s)) {
    L->tried = 1;
    snprintf(L->why, sizeof L->why, "%s",
             !s->sf->device_in_worker ? "not a GPU surface"
             : getenv("KEVO_NO_LEND") ? "KEVO_NO_LEND is set"
             : getenv("KEVO_LEND")    ? "KEVO_LEND is not 1"
                                      : "a torch reference lends only with KEVO_LEND=1 until "
                                        "that is verified on a GPU");
    return 0;
  }
  /* A reference.py task: the empty entry's clean kevo-worker lends; the
   * orchestrator starts it before the probe (lend.c calls no session code). */
  if (s->torch && !s->lw_up)
    return kv_error(err, errlen, "kevo: the clean worker that lends is not up (a bug of kevo's)");
  int i = slot_of(s, id);
  if (i < 0 && L->n == KV_LEND_MAX)
    return kv_error(err, errlen, "more than %d leases in one evaluation", KV_LEND_MAX);
  json_t *req = json_pack("{s:s,s:s,s:s,s:i,s:i}", "op", "lend", "lease", id, "set", set, "index",
                          index, "calls", calls),
         *rep = NULL;
  kv_request_sizes(s->t, drawn, req);
  char d[1024];
  enum kv_call_status st = lend_call(s, req, 0, NULL, &rep, d, sizeof d);
  json_t *h = json_object_get(rep, "handles");
  if (st == KV_CALL_ERROR && !L->tried) {
    /* It cannot lend here (a driver without CUDA IPC, or one that refuses
     * it): the old path, said in the verdict. */
    L->tried = 1;
    snprintf(L->why, sizeof L->why, "%.290s", d);
    json_decref(rep);
    return 0;
  }
  if (st != KV_CALL_OK || !json_is_array(h) || (int)json_array_size(h) != calls) {
    json_decref(rep);
    return kv_error(err, errlen, "the reference worker could not lend %d calls' buffers: %s", calls,
                    st != KV_CALL_OK ? d : "a malformed answer");
  }
  L->tried = L->ipc = 1;
  L->offset = (size_t)json_integer_value(json_object_get(rep, "offset"));
  L->alone_ns = (double)json_integer_value(json_object_get(rep, "alone_ns"));
  if (i < 0) {
    i = L->n++;
    snprintf(L->l[i].id, sizeof L->l[i].id, "%s", id);
  }
  json_decref(L->l[i].handles);
  L->l[i].handles = json_incref(h);
  json_decref(rep);
  *handles = L->l[i].handles;
  return 1;
}

/* One LEND job of the candidate's worker (before its candidate is loaded);
 * req is consumed. */
static enum kv_call_status cw_lend(struct kv_session *s, json_t *req, json_t **rep, char *d,
                                   size_t dl) {
  enum kv_call_status st =
      kv_worker_call(&s->cw, KV_MSG_LEND, req, lend_deadline(s), rep, NULL, 0, d, dl);
  json_decref(req);
  return st;
}

/* Lending off for this evaluation, and why. */
static int probe_failed(struct kv_session *s, const char *what, const char *d) {
  s->lend.ipc = 0;
  snprintf(s->lend.why, sizeof s->lend.why, "%s: %.220s", what, d);
  return 0;
}

int kv_lend_probe(struct kv_session *s, char *err, size_t errlen) {
  json_t *h = NULL, *r = NULL;
  char d[1024];
  int lr = kv_lend(s, "probe", "check", 0, NULL, 1, &h, err, errlen);
  if (lr <= 0)
    return lr;
  enum kv_call_status st = cw_lend(
      s, json_pack("{s:s,s:O,s:I}", "op", "map", "lent", h, "offset", (json_int_t)s->lend.offset),
      &r, d, sizeof d);
  json_decref(r);
  if (st != KV_CALL_OK)
    return probe_failed(s, "the candidate's worker cannot map the clean worker's buffers", d);
  /* The other way too: the candidate's timed calls run in its own buffers,
   * which the clean worker maps to read the validated ones. */
  r = NULL;
  st = cw_lend(s, json_pack("{s:s}", "op", "export"), &r, d, sizeof d);
  const char *hex = json_string_value(json_object_get(r, "handle"));
  if (st == KV_CALL_OK && hex)
    st = lend_call(s, json_pack("{s:s,s:s}", "op", "open", "handle", hex), 0, NULL, NULL, d,
                   sizeof d);
  else if (st == KV_CALL_OK)
    st = KV_CALL_PROTOCOL, snprintf(d, sizeof d, "a malformed answer");
  json_decref(r);
  if (st != KV_CALL_OK)
    return probe_failed(s, "the clean worker cannot map the candidate's worker's buffers", d);
  return 0;
}

#define PEEK_THEIRS "the buffers the candidate's worker named"

int kv_lend_peek(struct kv_session *s, int index, json_t *row, uint64_t sseed, int inputs,
                 size_t want, uint8_t **blob, char *why, size_t whylen, char *err, size_t errlen) {
  char d[1024];
  json_t *rep = NULL;
  json_t *req = json_pack("{s:s,s:s,s:i,s:O,s:I,s:b,s:f}", "op", "peek", "set", "bench", "index",
                          index, "row", row, "sample", (json_int_t)sseed, "inputs", inputs,
                          "settle_s", KV_LEND_SETTLE_S);
  enum kv_call_status st = lend_call(s, req, want, blob, &rep, d, sizeof d);
  if (st == KV_CALL_ERROR && !strncmp(d, PEEK_THEIRS, strlen(PEEK_THEIRS))) {
    json_decref(rep);
    snprintf(why, whylen, "%s", d);
    return 1;
  }
  if (st != KV_CALL_OK) {
    json_decref(rep);
    return kv_error(err, errlen, "the reference worker could not read the candidate's buffers: %s",
                    d);
  }
  double settle = (double)json_integer_value(json_object_get(rep, "settle_ns"));
  s->lend.settle_max_ns = settle > s->lend.settle_max_ns ? settle : s->lend.settle_max_ns;
  json_decref(rep);
  return 0;
}

int kv_lend_fill(struct kv_session *s, const char *id, int call, uint64_t seed, int poison,
                 uint64_t key, char *err, size_t errlen) {
  char d[1024];
  /* JSON's integers are signed 64-bit: the seed and key travel as such. */
  json_t *req = json_pack("{s:s,s:s,s:i,s:I,s:i,s:I}", "op", "fill", "lease", id, "call", call,
                          "seed", (json_int_t)seed, "poison", poison, "key", (json_int_t)key);
  if (lend_call(s, req, 0, NULL, NULL, d, sizeof d) != KV_CALL_OK)
    return kv_error(err, errlen, "the reference worker could not fill a lent call: %s", d);
  return 0;
}

int kv_lend_read(struct kv_session *s, const char *id, json_t *calls, int inputs, size_t want,
                 uint8_t **blob, json_t **rep, char *err, size_t errlen) {
  char d[1024];
  json_t *req = json_pack("{s:s,s:s,s:o,s:b,s:f}", "op", "read", "lease", id, "calls", calls,
                          "inputs", inputs, "settle_s", KV_LEND_SETTLE_S);
  if (lend_call(s, req, want, blob, rep, d, sizeof d) != KV_CALL_OK) {
    if (rep) {
      json_decref(*rep);
      *rep = NULL;
    }
    return kv_error(err, errlen, "the reference worker could not read lent buffers: %s", d);
  }
  double st = (double)json_integer_value(json_object_get(*rep, "settle_ns"));
  s->lend.settle_max_ns = st > s->lend.settle_max_ns ? st : s->lend.settle_max_ns;
  return 0;
}

int kv_lend_settle(struct kv_session *s, const char *id, double *charge_ns, int *busy, char *err,
                   size_t errlen) {
  json_t *rep = NULL;
  if (kv_lend_read(s, id, json_array(), 0, 0, NULL, &rep, err, errlen) < 0)
    return -1;
  double settle = (double)json_integer_value(json_object_get(rep, "settle_ns"));
  double alone = (double)json_integer_value(json_object_get(rep, "alone_ns"));
  *busy = json_is_true(json_object_get(rep, "busy"));
  *charge_ns = settle > alone ? settle - alone : 0;
  s->lend.charged_ns += *charge_ns;
  json_decref(rep);
  return 0;
}

void kv_lend_return(struct kv_session *s) {
  char d[1024];
  if (s->lend.n > 0 && (s->torch ? s->lw_up : s->rw_up) && lender(s)->alive)
    lend_call(s, json_pack("{s:s,s:s}", "op", "return", "lease", "*"), 0, NULL, NULL, d, sizeof d);
  kv_lend_drop(s);
}

void kv_lend_drop(struct kv_session *s) {
  struct kv_lend *L = &s->lend;
  for (int i = 0; i < L->n; i++)
    json_decref(L->l[i].handles);
  memset(L->l, 0, sizeof L->l);
  L->n = 0;
}

void kv_lend_note(const struct kv_session *s, char *detail, size_t cap) {
  if (!s->lend.fell_back)
    return;
  size_t n = strlen(detail);
  snprintf(detail + n, cap - n,
           " (results read through the candidate's own process: the clean worker lends no "
           "buffers here: %s)",
           s->lend.why);
}
