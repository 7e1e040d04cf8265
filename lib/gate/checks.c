/* The gate's correctness checks (kv_gate_eval's second stage): every check
 * size x seeds, two calls each at the same addresses, the second with new
 * contents; the reference in its own worker; guard zones, replays across
 * calls and across jobs judged here. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/runtime.h"
#include "kevo/wire.h"

/* A guard zone the worker found changed after call `call` of a CHECK job
 * (its reply's "guard": call, param, before, byte): the verdict, with detail,
 * else KV_V_OK. Around an input (role in) the candidate wrote through a
 * pointer it may only read, which is what input_mutated means; around an
 * output (out, inout) it wrote past what it was asked to compute, which is a
 * wrong output whatever its elements hold. */
static enum kv_verdict guard_verdict(const struct kv_task *t, const int64_t *nelem, json_t *rep,
                                     int call, char *detail, size_t cap) {
  size_t i;
  json_t *g;
  json_array_foreach(json_object_get(rep, "guard"), i, g) {
    int p = (int)json_integer_value(json_object_get(g, "param"));
    if (json_integer_value(json_object_get(g, "call")) != call || p < 0 || p >= t->nparams)
      continue;
    kv_guard_detail(t, p, nelem[p], json_is_true(json_object_get(g, "before")),
                    (long)json_integer_value(json_object_get(g, "byte")), detail, cap);
    return t->params[p].role == KV_ROLE_IN ? KV_V_INPUT_MUTATED : KV_V_WRONG_OUTPUT;
  }
  return KV_V_OK;
}

/* A cpu candidate's CHECK job on the check memory (KV_WIRE_CHECK_FD): for
 * each call, kevo fills inputs, poisoned outputs and guard zones (keyed by a
 * secret the worker never sees) while the worker is stopped, lets it make the
 * one call, stops it again as soon as it answers, and reads outputs, inputs
 * and guard zones there itself. What the worker says beyond "returned" is
 * ignored: a relay on its descriptors can forge a reply, not memory. Every
 * call at the same addresses (offset 0), as kv_run_check's. *blob and *rep
 * as kv_run_check's (rep: the guard zones kevo found changed). */
static enum kv_call_status check_shm(struct kv_worker *w, const struct kv_task *t, int index,
                                     const struct kv_sizeset *drawn, const int64_t *nelem,
                                     size_t chk_len, const uint64_t *seeds, const int *poisons,
                                     uint64_t key, double deadline, uint8_t **blob, json_t **rep,
                                     char *d, size_t dl) {
  size_t off[KV_MAX_PARAMS], per_call, cb = kv_call_bytes(t, nelem, 1);
  void *bufs[KV_MAX_PARAMS];
  kv_check_layout(t, nelem, off, &per_call);
  uint8_t *base = kv_worker_chk(w, chk_len, d, dl);
  *blob = malloc(2 * cb + 1);
  *rep = json_pack("{s:[]}", "guard");
  if (!base || !*blob || !*rep)
    return KV_CALL_ERROR; /* d says why, or out of memory */
  kv_shm_call_bufs(t, base, per_call, off, 0, bufs);
  for (int c = 0; c < 2; c++) {
    if (kv_worker_pause(w) < 0) {
      snprintf(d, dl, "the worker could not be stopped to fill its buffers (%s)", w->death);
      return KV_CALL_DIED;
    }
    kv_fill_inputs_mt(t, nelem, bufs, seeds[c], kv_fill_threads());
    for (int p = 0; p < t->nparams; p++)
      if (t->params[p].role == KV_ROLE_OUT)
        kv_poison_fill(t->params[p].dtype, bufs[p], (size_t)nelem[p], poisons[c]);
    kv_guard_fill_call(t, nelem, bufs, seeds[c] ^ key, 1);
    json_t *req =
        json_pack("{s:i,s:s,s:i,s:[{s:I,s:i}],s:b,s:b,s:I}", "slot", 0, "set", "check", "index",
                  index, "calls", "seed", (json_int_t)seeds[c], "poison", poisons[c],
                  "return_inputs", 0, "shm", 1, "shm_bytes", (json_int_t)chk_len);
    kv_request_sizes(t, drawn, req);
    json_t *r = NULL;
    enum kv_call_status st = kv_worker_call(w, KV_MSG_CHECK, req, deadline, &r, NULL, 0, d, dl);
    json_decref(req);
    json_decref(r);
    if (st != KV_CALL_OK)
      return st;
    /* Stopped before anything is read: no thread of its can change them. */
    if (kv_worker_pause(w) < 0) {
      snprintf(d, dl, "the worker could not be stopped to read its buffers (%s)", w->death);
      return KV_CALL_DIED;
    }
    kv_pack_call(t, nelem, bufs, 1, *blob + (size_t)c * cb);
    int gp, gb;
    long gk;
    if (kv_guard_find(t, nelem, bufs, seeds[c] ^ key, 1, &gp, &gb, &gk))
      json_array_append_new(json_object_get(*rep, "guard"),
                            json_pack("{s:i,s:i,s:b,s:I}", "call", c, "param", gp, "before", gb,
                                      "byte", (json_int_t)gk));
  }
  kv_worker_resume(w);
  return KV_CALL_OK;
}

/* A cuda candidate's CHECK job on buffers the clean worker lends (lend.h):
 * for each call, while the candidate's process is stopped, the clean worker
 * fills inputs, poisoned outputs and guard zones (keyed by a secret the
 * candidate never sees) in lease `id`; the candidate's worker runs the one
 * call into them and answers; kevo stops it and the clean worker, once the
 * GPU runs nothing of another process, copies outputs, inputs and guard
 * zones back. Its reply says only that the call returned. *blob and *rep as
 * kv_run_check's; *kevo_failed when the clean worker failed. */
static enum kv_call_status check_lent(struct kv_session *s, json_t *row, const char *id, int index,
                                      const struct kv_sizeset *drawn, const int64_t *nelem,
                                      const uint64_t *seeds, const int *poisons, uint64_t key,
                                      double deadline, uint8_t **blob, json_t **rep,
                                      int *kevo_failed, char *d, size_t dl) {
  const struct kv_task *t = s->t;
  struct kv_worker *w = &s->cw;
  size_t cb = kv_call_bytes(t, nelem, 1);
  *blob = malloc(2 * cb + 1);
  *rep = json_pack("{s:[]}", "guard");
  if (!*blob || !*rep)
    return snprintf(d, dl, "out of memory"), *kevo_failed = 1, KV_CALL_ERROR;
  for (int c = 0; c < 2; c++) {
    if (kv_worker_pause(w) < 0) {
      snprintf(d, dl, "the worker could not be stopped to fill its buffers (%s)", w->death);
      return KV_CALL_DIED;
    }
    if (kv_lend_fill(s, id, 0, seeds[c], poisons[c], key, d, dl) < 0)
      return *kevo_failed = 1, KV_CALL_ERROR;
    json_t *req = json_pack("{s:i,s:s,s:i,s:[{s:I,s:i}],s:b,s:O,s:I}", "slot", 0, "set", "check",
                            "index", index, "calls", "seed", (json_int_t)seeds[c], "poison",
                            poisons[c], "return_inputs", 0, "lent", row, "offset",
                            (json_int_t)s->lend.offset),
           *r = NULL;
    kv_request_sizes(t, drawn, req);
    enum kv_call_status st = kv_worker_call(w, KV_MSG_CHECK, req, deadline, &r, NULL, 0, d, dl);
    json_decref(req);
    json_decref(r);
    if (st != KV_CALL_OK)
      return st;
    /* Stopped before anything is read: nothing of its process runs now. */
    if (kv_worker_pause(w) < 0) {
      snprintf(d, dl, "the worker could not be stopped to read its buffers (%s)", w->death);
      return KV_CALL_DIED;
    }
    uint8_t *got = NULL;
    json_t *rr = NULL;
    if (kv_lend_read(s, id,
                     json_pack("[{s:i,s:I}]", "call", 0, "guard", (json_int_t)(seeds[c] ^ key)), 1,
                     cb, &got, &rr, d, dl) < 0)
      return *kevo_failed = 1, KV_CALL_ERROR;
    memcpy(*blob + (size_t)c * cb, got, cb);
    free(got);
    /* (A GPU still busy at the settle's limit is read anyway: checks are
     * not timed, and another evaluation's checks may share the GPU.) */
    json_t *g = json_array_get(json_object_get(rr, "guard"), 0);
    if (g) {
      json_object_set_new(g, "call", json_integer(c));
      json_array_append(json_object_get(*rep, "guard"), g);
    }
    json_decref(rr);
  }
  kv_worker_resume(w);
  return KV_CALL_OK;
}

/* The check memory a session's cpu candidate needs: one call of its largest
 * check size set. */
static size_t check_mem(const struct kv_task *t, const struct kv_sizeset *drawn) {
  size_t len = 64;
  for (int i = 0; i <= t->ncheck; i++) {
    int64_t nelem[KV_MAX_PARAMS];
    size_t off[KV_MAX_PARAMS], per_call;
    char e[256];
    const struct kv_sizeset *ss = i < t->ncheck ? &t->check[i] : drawn;
    if (!ss || kv_layout(t, ss, nelem, e, sizeof e) < 0)
      continue;
    kv_check_layout(t, nelem, off, &per_call);
    len = per_call > len ? per_call : len;
  }
  return len;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a < 0 ? -a : a;
}

/* Every listed set (check and bench) of t in turn, -1 past the last. */
static const struct kv_sizeset *listed(const struct kv_task *t, int i) {
  return i < t->ncheck ? &t->check[i] : i < t->ncheck + t->nbench ? &t->bench[i - t->ncheck] : NULL;
}

/* An earlier size param q whose ratio to p is the same in every listed set
 * (M == N in each of them, or dim == 4 * heads): p is then derived from q's
 * drawn value, so that a relation the problem poses holds. -1 if none. */
static int tied_to(const struct kv_task *t, int p) {
  for (int q = 0; q < p; q++) {
    if (t->params[q].role != KV_ROLE_SIZE)
      continue;
    int64_t p0 = t->check[0].values[p], q0 = t->check[0].values[q];
    int tied = q0 != 0;
    for (int i = 1; tied && listed(t, i); i++)
      tied = listed(t, i)->values[p] * q0 == listed(t, i)->values[q] * p0;
    if (tied)
      return q;
  }
  return -1;
}

/* One size value drawn for param p: where the listed check sets agree, their
 * value; tied to an earlier size (tied_to), that one's drawn value in the
 * same ratio (0 when not whole); else uniform within the check sets' range,
 * a multiple of what every listed value (check and bench) is a multiple of. */
static int64_t draw_size(const struct kv_task *t, const struct kv_sizeset *out, int p,
                         uint64_t *rng) {
  int q = tied_to(t, p);
  if (q >= 0) {
    int64_t num = out->values[q] * t->check[0].values[p], den = t->check[0].values[q];
    return num % den == 0 ? num / den : 0;
  }
  int64_t lo = t->check[0].values[p], hi = lo, g = 0;
  for (int i = 0; listed(t, i); i++) {
    int64_t v = listed(t, i)->values[p];
    if (i < t->ncheck) {
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    g = gcd64(g, v);
  }
  if (lo == hi || g <= 0)
    return lo;
  *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
  int64_t v = lo + (int64_t)((*rng >> 17) % (uint64_t)(hi - lo + 1));
  v -= v % g;
  return v < lo ? v + g : v;
}

/* A check size set drawn for this evaluation from seed (issue 28 item 5: a
 * kernel exact only at the listed sizes must not pass): 1 with *out, no
 * larger than the largest listed set, else 0 (nothing left to draw: every
 * listed set agrees, or eight draws were all too large or invalid). */
static int draw_set(const struct kv_task *t, uint64_t seed, struct kv_sizeset *out) {
  size_t most = 0;
  int64_t nelem[KV_MAX_PARAMS];
  char e[256];
  for (int i = 0; i < t->ncheck; i++)
    if (kv_layout(t, &t->check[i], nelem, e, sizeof e) == 0 && kv_call_bytes(t, nelem, 1) > most)
      most = kv_call_bytes(t, nelem, 1);
  uint64_t rng = seed ^ 0x9e3779b97f4a7c15ULL;
  for (int tries = 0; t->ncheck >= 2 && tries < 8; tries++) {
    *out = t->check[0];
    for (int p = 0; p < t->nparams; p++)
      if (t->params[p].role == KV_ROLE_SIZE)
        out->values[p] = draw_size(t, out, p, &rng);
    int differs = 1; /* from every listed set, and no size 0 where it was not */
    for (int p = 0; p < t->nparams; p++)
      differs &= out->values[p] != 0 || t->check[0].values[p] == 0;
    for (int i = 0; i < t->ncheck; i++)
      differs &= memcmp(out->values, t->check[i].values, sizeof out->values) != 0;
    if (differs && kv_layout(t, out, nelem, e, sizeof e) == 0 && kv_call_bytes(t, nelem, 1) <= most)
      return 1;
  }
  return 0;
}

/* The reference's job of a check, run on a thread of its own while the
 * candidate's runs (two workers, two processes: the wall time of a check is
 * the slower job's, not the sum). */
struct ref_job {
  struct kv_worker *w;
  int index;
  const uint64_t *seeds;
  const int *poisons;
  size_t want;
  double deadline;
  const struct kv_task *t;
  const struct kv_sizeset *drawn; /* NULL: the listed set index */
  uint8_t *exp;
  enum kv_call_status st;
  char d[1024];
  pthread_t th;
  int started;
};

static void *ref_main(void *arg) {
  struct ref_job *j = arg;
  j->st = kv_run_check_at(j->w, 0, "check", j->index, j->t, j->drawn, j->seeds, j->poisons, 2, 0,
                          j->want, j->deadline, &j->exp, NULL, j->d, sizeof j->d);
  return NULL;
}

/* kv_gate_checks' state across its check sizes. */
struct checks {
  struct kv_session *s;
  const char *refsrc, *cand_so;
  struct kv_gate_result *r;
  enum kv_verdict *worst;
  const struct kv_sizeset *drawn; /* the set drawn from the seed, or NULL */
  size_t chk_len;                 /* cpu: the check memory */
  uint64_t base, key;             /* the seeds' base; the guard zones' secret */
  int nseeds;
  uint8_t *prev_got, *prev_exp; /* the last call of the previous job */
  char *err;
  size_t errlen;
};

/* One check size (check_set): listed, or drawn (dr). */
struct cset {
  int i, index; /* of the set among those checked; of a listed set (drawn: 0) */
  const struct kv_sizeset *ss, *dr;
  int64_t nelem[KV_MAX_PARAMS];
  size_t ob, cb; /* a call's outputs; its outputs and inputs */
};

/* One job of a check (a pair of calls): the candidate's and the
 * reference's, run side by side (run_pair). */
struct pair {
  uint64_t seeds[2];
  int poisons[2];
  struct ref_job rj; /* the reference's (its outputs rj.exp) */
  enum kv_call_status st;
  json_t *crep;
  uint8_t *got;
  int cw_failed, kevo_failed;
  char d[1024];
};

/* The pair's two jobs: the reference's on a thread of its own (cuda's lent
 * buffers: in turn, one worker), the candidate's in its worker (replaced
 * when dead), on the check memory (cpu), lent buffers, or its own. -1 when
 * kevo failed to lend the buffers (nothing started). */
static int run_pair(struct checks *cx, const struct cset *cs, struct pair *p) {
  struct kv_session *s = cx->s;
  const struct kv_task *t = s->t;
  const struct kv_gate_opts *o = s->o;
  /* cuda: the buffers the clean worker lends for this size set (its
   * jobs and the reference's then take turns: one worker). */
  json_t *row = NULL;
  char lid[16];
  snprintf(lid, sizeof lid, "c%d", cs->i);
  if (s->sf->device_in_worker) {
    json_t *h = NULL;
    int lr = kv_lend(s, lid, "check", cs->index, cs->dr, 1, &h, cx->err, cx->errlen);
    if (lr < 0)
      return -1;
    row = lr > 0 ? json_array_get(h, 0) : NULL;
    s->lend.fell_back |= lr == 0;
  }
  p->rj = (struct ref_job){.w = &s->rw,
                           .index = cs->index,
                           .t = t,
                           .drawn = cs->dr,
                           .seeds = p->seeds,
                           .poisons = p->poisons,
                           .want = 2 * cs->ob,
                           .deadline = o->job_deadline_s};
  struct ref_job *rj = &p->rj;
  rj->started = !row && pthread_create(&rj->th, NULL, ref_main, rj) == 0;
  if (!rj->started)
    ref_main(rj);
  p->st = KV_CALL_OK;
  if (!s->cw_up || !s->cw.alive) {
    /* Replace a dead worker. */
    if (s->cw_up)
      kv_worker_stop(&s->cw);
    s->cw_up = 0;
    if (kv_session_start_worker(s, &s->cw, &s->cw_up, cx->cand_so, p->d, sizeof p->d, cx->err,
                                cx->errlen) != 0)
      p->st = KV_CALL_ERROR;
  }
  p->cw_failed = p->st != KV_CALL_OK;
  if (!p->cw_failed && row)
    p->st = check_lent(s, row, lid, cs->index, cs->dr, cs->nelem, p->seeds, p->poisons, cx->key,
                       o->job_deadline_s, &p->got, &p->crep, &p->kevo_failed, p->d, sizeof p->d);
  else if (!p->cw_failed && !s->sf->device_in_worker)
    p->st = check_shm(&s->cw, t, cs->index, cs->dr, cs->nelem, cx->chk_len, p->seeds, p->poisons,
                      cx->key, o->job_deadline_s, &p->got, &p->crep, p->d, sizeof p->d);
  else if (!p->cw_failed)
    p->st = kv_run_check_at(&s->cw, 0, "check", cs->index, t, cs->dr, p->seeds, p->poisons, 2, 1,
                            2 * cs->cb, o->job_deadline_s, &p->got, &p->crep, p->d, sizeof p->d);
  if (rj->started)
    pthread_join(rj->th, NULL);
  return 0;
}

/* A pair whose two calls both returned, judged into ck: a changed guard
 * zone first, then a replay of the previous job's answer, the first call,
 * the second (a replay of the first?). Returns 1 when the first call was
 * right. */
static int judge_pair(struct checks *cx, const struct cset *cs, struct kv_check *ck,
                      const struct pair *p, const char *sizes) {
  const struct kv_task *t = cx->s->t;
  const uint8_t *exp = p->rj.exp, *got = p->got;
  size_t ob = cs->ob, cb = cs->cb;
  struct kv_cmp c1, c2;
  kv_judge_call(t, cs->ss, exp, got, got + ob, NULL, cs->nelem, p->seeds[0], 0, NULL, &c1);
  kv_judge_call(t, cs->ss, exp + ob, got + cb, got + cb + ob, NULL, cs->nelem, p->seeds[1], 1, NULL,
                &c2);
  ck->max_abs_err = fmax(c1.max_abs, c2.max_abs);
  ck->max_rel_err = fmax(c1.max_rel, c2.max_rel);
  int first_ok = c1.verdict == KV_V_OK;
  /* A write outside a buffer (its guard zones changed) is judged first:
   * it says more than the elements it shifted or left wrong. */
  char gd[512];
  enum kv_verdict g1 = guard_verdict(t, cs->nelem, p->crep, 0, gd, sizeof gd);
  enum kv_verdict g2 = g1 != KV_V_OK ? g1 : guard_verdict(t, cs->nelem, p->crep, 1, gd, sizeof gd);
  /* A wrong first call that repeats a right answer of the previous job
   * (to other inputs): cached across jobs by an address the allocator
   * handed out again. */
  int replay_prev = c1.verdict != KV_V_OK && cx->prev_got && ob > 0 &&
                    memcmp(got, cx->prev_got, ob) == 0 && memcmp(exp, cx->prev_exp, ob) != 0;
  if (g1 != KV_V_OK || g2 != KV_V_OK) {
    first_ok = 0;
    ck->verdict = g1 != KV_V_OK ? g1 : g2;
    snprintf(ck->detail, sizeof ck->detail, "at %s%s: %s", sizes,
             g1 != KV_V_OK ? "" : ", second call", gd);
  } else if (replay_prev) {
    ck->verdict = KV_V_STALE_OUTPUT;
    snprintf(ck->detail, sizeof ck->detail,
             "at %s: returned the previous call's results for new inputs (cached across "
             "calls?); %s",
             sizes, c1.detail);
  } else if (c1.verdict != KV_V_OK) {
    ck->verdict = c1.verdict;
    snprintf(ck->detail, sizeof ck->detail, "at %s: %s", sizes, c1.detail);
  } else if (c2.verdict != KV_V_OK) {
    /* The first call was right: is the second a replay of it? */
    int replay = memcmp(got, got + cb, ob) == 0 && memcmp(exp, exp + ob, ob) != 0;
    ck->verdict = replay ? KV_V_STALE_OUTPUT : c2.verdict;
    snprintf(ck->detail, sizeof ck->detail,
             "at %s, second call at the same addresses with "
             "new contents: %s%s",
             sizes,
             replay ? "returned the first call's results "
                      "(cached by address?); "
                    : "",
             c2.detail);
  } else {
    ck->verdict = KV_V_OK;
    snprintf(ck->detail, sizeof ck->detail, "max |diff| %.3g", ck->max_abs_err);
  }
  return first_ok;
}

/* Remember the job's last right answer (for the next job's replay test):
 * keep 2, the second call's; 1, the first's. */
static void keep_answer(struct checks *cx, const struct cset *cs, const struct pair *p, int keep) {
  size_t ob = cs->ob, cb = cs->cb;
  free(cx->prev_got);
  free(cx->prev_exp);
  cx->prev_got = malloc(ob);
  cx->prev_exp = malloc(ob);
  if (cx->prev_got && cx->prev_exp) {
    memcpy(cx->prev_got, keep == 2 ? p->got + cb : p->got, ob);
    memcpy(cx->prev_exp, keep == 2 ? p->rj.exp + ob : p->rj.exp, ob);
  } else {
    free(cx->prev_got);
    free(cx->prev_exp);
    cx->prev_got = cx->prev_exp = NULL;
  }
}

/* The pair's buffers freed. */
static void pair_free(struct pair *p) {
  free(p->rj.exp);
  free(p->got);
  json_decref(p->crep);
}

/* Where a pair could not be judged: 1 when the drawn set is dropped (the
 * reference cannot run there), -1 when kevo or the reference failed, else
 * 0. Frees the pair but where it returns 0. */
static int pair_failed(struct checks *cx, const struct cset *cs, const struct kv_check *ck,
                       struct pair *p) {
  struct kv_gate_result *r = cx->r;
  struct kv_session *s = cx->s;
  if (p->kevo_failed) {
    kv_error(cx->err, cx->errlen, "%s", p->d);
    pair_free(p);
    return -1;
  }
  if (cs->dr && !p->cw_failed && p->rj.st != KV_CALL_OK) {
    /* The reference itself cannot run at the drawn sizes (a size its
     * code fixes): the drawn set is dropped, and the timeline says so. */
    r->nchecks--;
    kv_gate_mark(r, "drawn check size dropped: the reference failed there");
    pair_free(p);
    if (!s->cw.alive || p->st == KV_CALL_TIMEOUT)
      kv_set_verdict(r, *cx->worst, "%s", r->detail);
    return 1;
  }
  if (p->cw_failed || p->rj.st != KV_CALL_OK) {
    if (!p->cw_failed)
      kv_error(cx->err, cx->errlen, "%s: the reference failed at %s: %s; run 'kevo task check %s'",
               cx->refsrc, ck->sizes, p->rj.d, s->t->dir);
    pair_free(p);
    return -1;
  }
  return 0;
}

/* One job of check size cs, seed j, into the next of r->checks: 0, 1 to
 * take no more jobs at this size (the drawn set dropped), -1 when kevo
 * failed. */
static int check_pair(struct checks *cx, const struct cset *cs, int j) {
  const struct kv_task *t = cx->s->t;
  struct kv_gate_result *r = cx->r;
  struct kv_check *ck = &r->checks[r->nchecks++];
  kv_sizeset_format(t, cs->ss, ck->sizes, sizeof ck->sizes);
  if (cs->dr) /* told apart from the listed ones wherever sizes are shown */
    snprintf(ck->sizes + strlen(ck->sizes), sizeof ck->sizes - strlen(ck->sizes), " (drawn)");
  struct pair p = {.seeds = {cx->base + (uint64_t)cs->i * 1000 + (uint64_t)j * 2,
                             cx->base + (uint64_t)cs->i * 1000 + (uint64_t)j * 2 + 1},
                   .poisons = {0, 1}};
  ck->seed = p.seeds[0];
  if (run_pair(cx, cs, &p) < 0)
    return -1;
  int stop = pair_failed(cx, cs, ck, &p);
  if (stop)
    return stop;
  char tail[300], sizes[256];
  int first_ok = 0;
  snprintf(sizes, sizeof sizes, "%s", ck->sizes);
  if (p.st == KV_CALL_TIMEOUT) {
    ck->verdict = KV_V_TIMEOUT;
    snprintf(ck->detail, sizeof ck->detail, "at %s: %s", sizes, p.d);
  } else if (p.st != KV_CALL_OK) {
    kv_tail_of(&cx->s->cw.err, tail, sizeof tail);
    ck->verdict = KV_V_CRASH;
    snprintf(ck->detail, sizeof ck->detail, "at %s: %s%s", sizes, p.d, tail);
  } else {
    first_ok = judge_pair(cx, cs, ck, &p, sizes);
  }
  int keep = p.st == KV_CALL_OK && cs->ob > 0 ? (ck->verdict == KV_V_OK ? 2 : first_ok) : 0;
  if (keep)
    keep_answer(cx, cs, &p, keep);
  pair_free(&p);
  if (ck->verdict < *cx->worst) {
    *cx->worst = ck->verdict;
    kv_set_verdict(r, *cx->worst, "%s", ck->detail);
  }
  return 0;
}

/* Check set i (the listed ones, then the drawn one): a job per seed (the
 * drawn set: one). -1 when kevo failed. */
static int check_set(struct checks *cx, int i) {
  const struct kv_task *t = cx->s->t;
  struct cset cs = {.i = i};
  cs.ss = i < t->ncheck ? &t->check[i] : cx->drawn;
  cs.dr = i < t->ncheck ? NULL : cx->drawn;
  cs.index = i < t->ncheck ? i : 0;
  if (kv_layout(t, cs.ss, cs.nelem, cx->err, cx->errlen) < 0)
    return -1;
  cs.ob = kv_call_bytes(t, cs.nelem, 0);
  cs.cb = kv_call_bytes(t, cs.nelem, 1);
  free(cx->prev_got);
  free(cx->prev_exp);
  cx->prev_got = cx->prev_exp = NULL;
  for (int j = 0;
       j < (cs.dr ? 1 : cx->nseeds) && *cx->worst != KV_V_CRASH && *cx->worst != KV_V_TIMEOUT;
       j++) {
    if (cx->r->nchecks >= KV_GATE_MAX_CHECKS)
      break;
    int rc = check_pair(cx, &cs, j);
    if (rc < 0)
      return -1;
    if (rc > 0)
      break;
  }
  return 0;
}

int kv_gate_checks(struct kv_session *s, const char *refsrc, const char *cand_so,
                   struct kv_gate_result *r, enum kv_verdict *worst, char *err, size_t errlen) {
  const struct kv_task *t = s->t;
  const struct kv_gate_opts *o = s->o;
  struct checks cx = {.s = s,
                      .refsrc = refsrc,
                      .cand_so = cand_so,
                      .r = r,
                      .worst = worst,
                      .err = err,
                      .errlen = errlen};
  cx.base = o->seed ? o->seed : kv_random_u64() >> 8;
  cx.nseeds = o->nseeds >= 2 ? o->nseeds : 2;
  /* After the listed sets, one drawn from the seed (recorded, so that
   * --seed replays it), judged on one pair of calls. */
  struct kv_sizeset drawn_set;
  cx.drawn = draw_set(t, cx.base, &drawn_set) ? &drawn_set : NULL;
  cx.chk_len = check_mem(t, cx.drawn);
  cx.key = kv_random_u64(); /* the guard zones' secret (cpu, and cuda's lent buffers) */
  int nsets = t->ncheck + (cx.drawn != NULL), rc = 0;
  for (int i = 0; i < nsets && *worst != KV_V_CRASH && *worst != KV_V_TIMEOUT; i++)
    if (check_set(&cx, i) < 0) {
      rc = -1;
      break;
    }
  free(cx.prev_got);
  free(cx.prev_exp);
  return rc;
}
