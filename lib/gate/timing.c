/* Timing with a clock the candidate cannot touch.
 *
 * Threat: the candidate runs inside its worker, so anything that process
 * reports (per-call times, the frame it replies with) may be forged, and
 * anything else it shares a machine with (the reference's process, the GPU)
 * may be disturbed. So:
 *
 * - The reference (and the baseline) run only in the reference worker, which
 *   never loads candidate code; while it is timed, the candidate's process is
 *   stopped (SIGSTOP, confirmed by waitpid), and its times are compared with
 *   a baseline taken once the candidate's process is dead: the speedup is
 *   taken against the faster of the two, and (cuda) a reference much slower
 *   beside the candidate than alone is `interference`.
 * - Timing is a sequence of phases, each one job of m calls of one side on
 *   completely fresh inputs (a new random seed per phase, seed + c per call),
 *   alternating candidate / reference / kevo's own empty entry, ABBA. The
 *   parent clocks every job. The empty entry's phases (in the clean worker)
 *   measure what a phase costs besides the calls, so the parent's clock
 *   bounds the candidate's reported times from below and above: reported
 *   times well below (parent wall - clean overhead) are forged: `implausible`.
 * - Which calls are validated is drawn by the parent after each phase is
 *   over; their outputs and inputs are read and compared with the
 *   reference's on the same fresh inputs, computed in the clean worker.
 *   cuda, lending (lend.h): the candidate's timed calls run in its own
 *   buffers, whose handles its worker gave before anything was timed; every
 *   phase of every side ends, inside kevo's clock, with its worker stopped
 *   and the GPU settled (the clean worker's probe runs promptly), so work a
 *   candidate leaves running after it answers counts as its phase's, and
 *   the clean worker maps those buffers and reads the validated calls.
 * - The number of calls comes from the parent's own clock (overheads
 *   included), never fewer than KV_TIMING_MIN_CALLS.
 * - Adaptive timing (kv_gate_opts.timing_ci, kevo/timeci.h) only decides
 *   when to stop taking rounds, between a minimum and the budget's count:
 *   when the 95% interval of the speedup (over rounds, as reported) and that
 *   of the candidate's time by kevo's own clock are both within the target.
 *   Every check above runs as it does on a fixed budget. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/runtime.h"
#include "kevo/timeci.h"
#include "kevo/wire.h"

#define IMPLAUSIBLE_FACTOR 2.0
#define MAX_PER_PHASE 64
/* Reported candidate time may not fall below this share of what the
 * parent's clock leaves for it (a 1.25x forgery reports 0.8). */
#define CLOCK_FLOOR 0.87
#define MEDIAN_FLOOR 0.80
#define SUM_FLOOR 0.60
/* A reference slower beside the candidate than alone by more than this
 * (plus noise) is interference. */
#define INTERFERENCE_TOL 0.10
#define TARGET_VALIDATIONS 6
#define MAX_PENDING 32 /* validated calls awaiting the reference's answers */
#define PENDING_JOB 8  /* calls per reference job judging them */
/* Slack of kevo's clock per call, at least (ns), and in sigmas of the clean
 * phases' robust spread (clean_spread). */
#define MIN_SLACK_CUDA 2000.0
#define MIN_SLACK_CPU 250.0
#define SPREAD_K 4.0
/* A side's median is raised to this share of its phases' mean call
 * (raise_to_phase_mean). */
#define DEFER_FLOOR 0.9

enum { SIDE_CAND, SIDE_REF, SIDE_BASE, SIDE_EMPTY, SIDE_ALONE, SIDE_EMPTY_ALONE, NSIDES };
static const char *const side_names[NSIDES] = {"candidate",       "reference",
                                               "baseline",        "kevo's empty entry",
                                               "reference alone", "kevo's empty entry alone"};

/* One side's reported per-call times and the parent's clock around its
 * phases. */
struct side {
  struct kv_worker *w;
  int slot;
  double *ev, *host; /* ns per call (cpu: host only; ev = host) */
  int n, cap;
  double *wall; /* ns per phase, parent clock */
  int nph, capph;
  double per_call;      /* parent wall per call of the last phase, ns */
  double fill_per_call; /* cpu, candidate: the parent's writing of fresh inputs, ns */
};

static const char *const method_names[] = {"kevo", "kernelbench", "do_bench"};

const char *kv_timing_method_name(int method) {
  return method > 0 && method <= KV_TIMING_DOBENCH ? method_names[method] : "kevo";
}

int kv_timing_method_parse(const char *name, int *method) {
  for (int i = 0; name && i <= KV_TIMING_DOBENCH; i++)
    if (!strcmp(name, method_names[i])) {
      *method = i;
      return 0;
    }
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q) {
  if (n <= 0)
    return 0;
  double pos = q * (n - 1);
  int lo = (int)pos;
  int hi = lo + 1 < n ? lo + 1 : lo;
  double f = pos - lo;
  return sorted[lo] * (1 - f) + sorted[hi] * f;
}

/* Statistics in us of n values in ns. */
static void stats_of(const double *ns, int n, struct kv_stats *st) {
  memset(st, 0, sizeof *st);
  if (n <= 0)
    return;
  double *v = malloc(sizeof(double) * (size_t)n);
  if (!v)
    return;
  double sum = 0;
  for (int i = 0; i < n; i++) {
    v[i] = ns[i] / 1000.0;
    sum += v[i];
  }
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  st->n = n;
  st->median_us = quantile(v, n, 0.5);
  st->iqr_us = quantile(v, n, 0.75) - quantile(v, n, 0.25);
  st->min_us = v[0];
  st->mean_us = sum / n;
  double var = 0;
  for (int i = 0; i < n; i++)
    var += (v[i] - st->mean_us) * (v[i] - st->mean_us);
  st->cv = n > 1 && st->mean_us > 0 ? sqrt(var / (n - 1)) / st->mean_us : 0;
  free(v);
}

static double median_ns(const double *x, int n) {
  struct kv_stats st;
  stats_of(x, n, &st);
  return st.median_us * 1000.0;
}

static double sum_of(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++)
    s += x[i];
  return s;
}

/* A torch worker's lead kernel (python/kevo_torch_worker.py), from a phase's
 * reply: its length and the calls it did not cover. */
static void torch_lead(struct kv_gate_result *r, json_t *rep) {
  double us = json_number_value(json_object_get(rep, "lead_us"));
  json_int_t un = json_integer_value(json_object_get(rep, "uncovered"));
  if (us > r->timing.torch_lead_us)
    r->timing.torch_lead_us = us;
  if (un > 0 && un < 4096)
    r->timing.torch_uncovered += (int)un;
}

static int side_grow(struct side *sd, int more) {
  if (sd->n + more > sd->cap) {
    int cap = (sd->n + more) * 2;
    double *e = realloc(sd->ev, sizeof(double) * (size_t)cap);
    if (!e)
      return -1;
    sd->ev = e;
    double *h = realloc(sd->host, sizeof(double) * (size_t)cap);
    if (!h)
      return -1;
    sd->host = h;
    sd->cap = cap;
  }
  if (sd->nph + 1 > sd->capph) {
    int cap = (sd->nph + 1) * 2;
    double *w = realloc(sd->wall, sizeof(double) * (size_t)cap);
    if (!w)
      return -1;
    sd->wall = w;
    sd->capph = cap;
  }
  return 0;
}

static void side_free(struct side *sd) {
  free(sd->ev);
  free(sd->host);
  free(sd->wall);
  memset(sd, 0, sizeof *sd);
}

/* A reply's array of m non-negative integers, appended to dst. */
static int take_ns(json_t *a, int m, double *dst) {
  if (!json_is_array(a) || (int)json_array_size(a) != m)
    return -1;
  for (int i = 0; i < m; i++) {
    json_t *x = json_array_get(a, (size_t)i);
    if (!json_is_integer(x) || json_integer_value(x) < 0 ||
        json_integer_value(x) > (json_int_t)1e15)
      return -1;
    dst[i] = (double)json_integer_value(x);
  }
  return 0;
}

struct timing {
  struct kv_session *s;
  struct kv_gate_result *r;
  const struct kv_sizeset *ss;
  int index; /* of ss in the task's bench sizes */
  int64_t nelem[KV_MAX_PARAMS];
  int64_t snelem[KV_MAX_PARAMS]; /* nelem as a validation's sample caps it */
  int cuda;
  struct side sd[NSIDES];
  char d[1024];
  int validated;
  uint64_t last_seed;      /* of the last phase */
  uint64_t cand_seed;      /* of the candidate's last phase (its buffers hold it) */
  double *rratio, *rclock; /* per round: the stopping rule's figures */
  /* cpu: every call's buffers in memory shared with each worker, the
   * candidate's inputs as written, the parent's flush buffer */
  size_t off[KV_MAX_PARAMS], per_call, shm_len;
  uint8_t *pristine, *flush;
  size_t flush_bytes;
  uint64_t fill_ns; /* when the last fill_phase had written its inputs */
  int threads;
  int rw_filled;     /* calls of the clean worker's shared memory filled so far */
  double validate_s; /* spent validating timed calls */
  /* KernelBench's protocol (kv_gate_opts.timing_method): each side's block
   * keeps the inputs of its first phase (kb_seed, 0: none yet) */
  int kb;
  /* Test control (KEVO_TEST_LOADED_HOST_US): added to every phase of kevo's
   * empty entry, as a host loaded only then would (tests/torch_surface). */
  double test_loaded_ns;
  uint64_t kb_seed[NSIDES];
  int kb_asked, kb_acked; /* cuda: phases asked to keep inputs, and the worker said it did */
  /* cuda: validated calls whose reference answers are still to come (one
   * job for all of them once the loop is over, judge_pending) */
  struct pending {
    int c, poison;
    uint64_t seed, sseed;
    uint8_t *got; /* the candidate's sample: outputs, then inputs */
  } pend[MAX_PENDING];
  int npend;
  /* cuda: the clean worker reads the candidate's validated calls (lend.h)
   * from its buffers, per call a row of handles its worker exported once
   * it had allocated them; lend 0 where it cannot */
  int lend, kevo_err;
  char lid[16];
  json_t *exported;
};

/* cpu: call c's buffers in a worker's shared memory. */
static void call_bufs(struct timing *tm, uint8_t *base, int c, void *bufs[KV_MAX_PARAMS]) {
  kv_shm_call_bufs(tm->s->t, base, tm->per_call, tm->off, c, bufs);
}

/* cpu: fresh inputs and poisoned outputs for m calls, written while the
 * worker is stopped (or is the clean one). */
static int fill_phase(struct timing *tm, struct kv_worker *w, int m, uint64_t seed, int cand) {
  const struct kv_task *t = tm->s->t;
  char e[256];
  uint8_t *base = kv_worker_shm(w, tm->shm_len, e, sizeof e);
  if (!base) {
    snprintf(tm->d, sizeof tm->d, "%s", e);
    return -1;
  }
  for (int c = 0; c < m; c++) {
    void *bufs[KV_MAX_PARAMS];
    call_bufs(tm, base, c, bufs);
    kv_fill_inputs_mt(t, tm->nelem, bufs, seed + (uint64_t)c, tm->threads);
    for (int p = 0; p < t->nparams; p++)
      if (t->params[p].role == KV_ROLE_OUT)
        kv_poison_fill(t->params[p].dtype, bufs[p], (size_t)tm->nelem[p], c & 1);
    kv_guard_fill_call(t, tm->nelem, bufs, seed + (uint64_t)c, 0); /* as the checks' */
  }
  /* The candidate's inputs as written, to check every call's afterwards. */
  if (cand && tm->pristine)
    memcpy(tm->pristine, base, tm->per_call * (size_t)m);
  tm->fill_ns = kv_now_ns(); /* the end of the writing, before the flush */
  return 0;
}

/* cpu: after a candidate phase (the worker stopped), every call's inputs must
 * be what was written. Returns 0 with r's verdict set when one changed. */
static void check_inputs(struct timing *tm, int m) {
  const struct kv_task *t = tm->s->t;
  for (int c = 0; c < m && tm->pristine; c++) {
    void *got[KV_MAX_PARAMS], *want[KV_MAX_PARAMS];
    call_bufs(tm, tm->s->cw.shm, c, got);
    call_bufs(tm, tm->pristine, c, want);
    for (int p = 0; p < t->nparams; p++) {
      char d[512];
      if (t->params[p].role == KV_ROLE_IN &&
          kv_input_changed(t, tm->ss, p, want[p], got[p], tm->nelem[p], NULL, d, sizeof d)) {
        kv_set_verdict(tm->r, KV_V_INPUT_MUTATED, "timing at %s, timed call %d of a phase: %s",
                       tm->r->timing.sizes, c, d);
        return;
      }
    }
  }
}

/* Only the side being timed runs: the candidate's process is stopped
 * whenever the reference worker works. */
static void only(struct timing *tm, int side) {
  if (side == SIDE_CAND)
    kv_worker_resume(&tm->s->cw);
  else if (tm->s->cw_up && tm->s->cw.alive)
    kv_worker_pause(&tm->s->cw);
}

/* cpu: KernelBench's trials after the first of a side's block keep the
 * inputs; the outputs of the candidate's one call are poisoned again (a
 * result left from the last trial must not pass for this one's). */
static int repoison_call(struct timing *tm, struct kv_worker *w) {
  const struct kv_task *t = tm->s->t;
  char e[256];
  uint8_t *base = kv_worker_shm(w, tm->shm_len, e, sizeof e);
  if (!base) {
    snprintf(tm->d, sizeof tm->d, "%s", e);
    return -1;
  }
  void *bufs[KV_MAX_PARAMS];
  call_bufs(tm, base, 0, bufs);
  for (int p = 0; p < t->nparams; p++)
    if (t->params[p].role == KV_ROLE_OUT)
      kv_poison_fill(t->params[p].dtype, bufs[p], (size_t)tm->nelem[p], 0);
  tm->fill_ns = kv_now_ns();
  return 0;
}

/* cpu: the cache lines of the clean worker's last calls rewritten with their
 * own bytes, from this process, as fill_phase writes the candidate's: a
 * write takes a line from every other core's private caches, which the
 * flush (run on this process's core) does not reach. Without it a
 * reference whose worker last ran on another core found its last calls'
 * buffers warm in that core's private L2 where the candidate's, rewritten by
 * kevo, were cold. Those caches hold at most the flush's size (twice the
 * last level's) of what the worker touched last: the end of its calls. */
static void touch_lines(struct timing *tm, struct kv_worker *w, int m) {
  char e[256];
  volatile uint8_t *base = kv_worker_shm(w, tm->shm_len, e, sizeof e);
  size_t n = tm->per_call * (size_t)m;
  n = n < tm->shm_len ? n : tm->shm_len;
  size_t from = n > tm->flush_bytes ? (n - tm->flush_bytes) / 64 * 64 : 0;
  for (size_t i = from; base && i < n; i += 64)
    base[i] = base[i];
}

/* cpu: a phase's buffers, written while its worker is stopped, then the
 * flush. Fresh inputs for every candidate phase; the clean worker's sides
 * get theirs once (the reference is trusted, the empty entry reads
 * nothing). The clean worker is stopped and resumed around its phases too,
 * so that both sides' phases cost kevo the same besides the calls.
 * KernelBench's protocol: a side's inputs once per block, no flush. */
static enum kv_call_status cpu_prepare(struct timing *tm, int side, int m, uint64_t seed,
                                       int kb_kept) {
  struct side *sd = &tm->sd[side];
  if (side != SIDE_CAND)
    kv_worker_pause(sd->w);
  uint64_t f0 = kv_now_ns();
  /* ew (a torch reference's empty entry) reads nothing: its shared
   * memory is only sized, like the clean worker's once it is filled. */
  int clean = sd->w == &tm->s->rw, kept = kb_kept && side == SIDE_CAND;
  char e[256];
  if (side != SIDE_CAND && !clean && !kv_worker_shm(sd->w, tm->shm_len, e, sizeof e)) {
    snprintf(tm->d, sizeof tm->d, "%s", e);
    return KV_CALL_ERROR;
  }
  if (kept && repoison_call(tm, sd->w) < 0)
    return KV_CALL_PROTOCOL;
  if (((side == SIDE_CAND && !kept) || (clean && tm->rw_filled < m)) &&
      fill_phase(tm, sd->w, m, seed, side == SIDE_CAND) < 0)
    return side == SIDE_CAND ? KV_CALL_PROTOCOL : KV_CALL_ERROR;
  if (side == SIDE_CAND)
    sd->fill_per_call = (double)(tm->fill_ns - f0) / m;
  else if (clean && !tm->kb && side != SIDE_EMPTY && side != SIDE_EMPTY_ALONE)
    touch_lines(tm, sd->w, m);
  /* One flush, from this clean process, before every phase of every side
   * (not only where inputs were written: the clean worker's are written
   * once, and its later phases ran warm while the candidate's ran cold,
   * so a copy of the reference scored 0.87x-0.9x): every call's buffers
   * are then untouched since, so each call of each side starts cold. */
  if (tm->flush && !tm->kb)
    kv_flush_cpu(tm->flush, tm->flush_bytes, (unsigned)seed);
  kv_worker_resume(sd->w);
  if (clean && m >= tm->rw_filled)
    tm->rw_filled = m;
  return KV_CALL_OK;
}

/* cuda, lending: the candidate's worker's handles of its m calls' buffers
 * (its answer to an alloc_only phase with "export"), kept for the reads of
 * validated calls: a row of nparams per call. */
static enum kv_call_status take_export(struct timing *tm, json_t *rep, int m) {
  json_t *ex = json_object_get(rep, "export"), *row;
  size_t i;
  int ok = json_is_array(ex) && json_array_size(ex) >= (size_t)m;
  json_array_foreach(ex, i, row) ok =
      ok && json_is_array(row) && json_array_size(row) == (size_t)tm->s->t->nparams;
  if (!ok) {
    snprintf(tm->d, sizeof tm->d, "the worker's list of its buffers' handles is malformed");
    return KV_CALL_PROTOCOL;
  }
  json_decref(tm->exported);
  tm->exported = json_incref(ex);
  return KV_CALL_OK;
}

/* cuda: the end of every phase of every side, inside kevo's clock: the
 * phase's worker stopped (the candidate's stays so until its next phase),
 * the clean worker waits until the GPU runs nothing of another process. So
 * a candidate's phase lasts until whatever it left running on the GPU is
 * over, and the same steps in the empty entry's phases price them as kevo's
 * overhead. Work still running at the limit after a candidate's phase is a
 * verdict. */
static enum kv_call_status settle_after(struct timing *tm, int side) {
  double charge = 0;
  int busy = 0;
  char e[1024];
  struct kv_worker *w = tm->sd[side].w;
  if (kv_worker_pause(w) < 0) {
    snprintf(tm->d, sizeof tm->d, "the worker could not be stopped after a phase: %s", w->death);
    if (side != SIDE_CAND)
      tm->kevo_err = 1;
    return KV_CALL_DIED;
  }
  if (kv_lend_settle(tm->s, tm->lid, &charge, &busy, e, sizeof e) < 0) {
    tm->kevo_err = 1;
    snprintf(tm->d, sizeof tm->d, "%s", e);
    return KV_CALL_ERROR;
  }
  if (!busy || side != SIDE_CAND)
    return KV_CALL_OK;
  /* Whose work is it? The candidate's process goes (its GPU context and
   * whatever it queued with it): a GPU idle then was running its work. */
  kv_session_stop_candidate(tm->s, tm->r);
  if (kv_lend_settle(tm->s, tm->lid, &charge, &busy, e, sizeof e) < 0 || busy) {
    tm->kevo_err = 1;
    snprintf(tm->d, sizeof tm->d,
             "the GPU stayed busy %.1f s after a phase, and still once the candidate's process "
             "was gone: another process's work shares this GPU; time where nothing else runs",
             KV_LEND_SETTLE_S);
    return KV_CALL_ERROR;
  }
  kv_set_verdict(tm->r, KV_V_IMPLAUSIBLE,
                 "timing at %s: the candidate's process left work running on the GPU after its "
                 "phase answered (still running %.1f s later, its process stopped; the GPU idle "
                 "once it was gone): work done outside the timed calls",
                 tm->r->timing.sizes, KV_LEND_SETTLE_S);
  return KV_CALL_OK;
}

/* One phase of m calls of `side`. keep: record its times. KernelBench's
 * protocol: a side's block (kb_seed[side] set to 0 by its caller) writes its
 * inputs in its first phase and keeps them in the later ones. */
static enum kv_call_status phase(struct timing *tm, int side, int m, int keep, int alloc_only,
                                 double deadline) {
  struct side *sd = &tm->sd[side];
  int kb_kept = tm->kb && !alloc_only && tm->kb_seed[side] != 0;
  uint64_t seed = kb_kept ? tm->kb_seed[side] : (kv_random_u64() >> 8) | (uint64_t)tm->kb;
  if (!tm->cuda) {
    if (tm->s->cw_up && tm->s->cw.alive && kv_worker_pause(&tm->s->cw) < 0 && side == SIDE_CAND) {
      snprintf(tm->d, sizeof tm->d, "the worker could not be stopped: %s", tm->s->cw.death);
      return KV_CALL_DIED;
    }
    if (alloc_only)
      return KV_CALL_OK; /* the shared memory is sized on first use */
    enum kv_call_status cs = cpu_prepare(tm, side, m, seed, kb_kept);
    if (cs != KV_CALL_OK)
      return cs;
  }
  if (tm->kb && !alloc_only)
    tm->kb_seed[side] = seed;
  only(tm, side);
  json_t *req = json_pack("{s:i,s:s,s:i,s:i,s:I,s:b,s:I}", "slot", sd->slot, "set", "bench",
                          "index", tm->index, "calls", m, "seed", (json_int_t)seed, "alloc_only",
                          alloc_only, "shm_bytes", (json_int_t)tm->shm_len);
  /* KernelBench (cuda): the worker keeps the last phase's inputs (the same
   * seed's) and does not flush; a torch worker queues no lead kernel (the
   * harness's events hold the launch). */
  if (tm->kb)
    json_object_update_new(
        req, json_pack("{s:b,s:b,s:b}", "keep_inputs", kb_kept, "flush", 0, "lead", 0));
  /* do_bench: a flush before every call, the start event behind it. */
  if (tm->cuda && tm->s->o->timing_method == KV_TIMING_DOBENCH)
    json_object_set_new(req, "flush_each", json_true());
  /* Lending: the candidate's worker names the buffers it made for m calls. */
  if (side == SIDE_CAND && tm->lend && alloc_only)
    json_object_set_new(req, "export", json_true());
  json_t *rep = NULL;
  uint64_t t0 = kv_now_ns();
  enum kv_call_status st =
      kv_worker_call(sd->w, KV_MSG_TIME, req, deadline, &rep, NULL, 0, tm->d, sizeof tm->d);
  if (tm->lend && st == KV_CALL_OK && !alloc_only)
    st = settle_after(tm, side);
  if (side == SIDE_CAND && tm->lend && st == KV_CALL_OK && alloc_only)
    st = take_export(tm, rep, m);
  uint64_t t1 = kv_now_ns();
  json_decref(req);
  if (st == KV_CALL_OK && !alloc_only) {
    if (side_grow(sd, m) < 0) {
      snprintf(tm->d, sizeof tm->d, "out of memory");
      st = KV_CALL_PROTOCOL;
    } else if (take_ns(json_object_get(rep, "ns"), m, sd->ev + sd->n) < 0 ||
               (tm->cuda ? take_ns(json_object_get(rep, "host_ns"), m, sd->host + sd->n)
                         : take_ns(json_object_get(rep, "ns"), m, sd->host + sd->n)) < 0) {
      snprintf(tm->d, sizeof tm->d, "the worker's report of the phase is malformed");
      st = KV_CALL_PROTOCOL;
    } else {
      sd->per_call = (double)(t1 - t0) / m;
      /* A torch reference (trusted) makes its inputs on the host, which
       * kevo-worker does on the device: what it says that took is left out
       * of the per-call price that sizes the phases (only that). */
      double prep = json_number_value(json_object_get(rep, "prep_ns")) +
                    json_number_value(json_object_get(rep, "lead_ns"));
      if (side != SIDE_CAND && sd->w == &tm->s->rw && tm->s->torch && prep > 0 &&
          prep < (double)(t1 - t0))
        sd->per_call = ((double)(t1 - t0) - prep) / m;
      if (side != SIDE_CAND && tm->s->torch && keep)
        torch_lead(tm->r, rep);
      if (tm->cuda && kb_kept) {
        tm->kb_asked++;
        tm->kb_acked += json_is_true(json_object_get(rep, "kept_inputs"));
      }
      if (keep) {
        int empty = side == SIDE_EMPTY || side == SIDE_EMPTY_ALONE;
        sd->wall[sd->nph++] = (double)(t1 - t0) + (empty ? tm->test_loaded_ns : 0);
        sd->n += m;
      }
    }
  }
  json_decref(rep);
  tm->last_seed = seed;
  if (side == SIDE_CAND)
    tm->cand_seed = seed;
  /* cpu: the candidate stops before anyone reads what it wrote (cuda with
   * lending: it stopped in settle_after). */
  if (!tm->cuda && side == SIDE_CAND && st == KV_CALL_OK && kv_worker_pause(&tm->s->cw) < 0) {
    snprintf(tm->d, sizeof tm->d, "the worker could not be stopped after a phase: %s",
             tm->s->cw.death);
    st = KV_CALL_DIED;
  }
  return st;
}

/* cpu: the reference's outputs for call c of the candidate's last phase: its
 * inputs as kevo wrote them, copied into the clean worker's first call
 * buffers (no generating them again), one call there. *exp: sample sseed
 * of the outputs (ob bytes), in param order. */
static enum kv_call_status reference_on(struct timing *tm, int c, uint64_t seed, uint64_t sseed,
                                        size_t ob, double deadline, uint8_t **exp) {
  const struct kv_task *t = tm->s->t;
  struct kv_worker *rw = &tm->s->rw;
  char e[256];
  uint8_t *base = kv_worker_shm(rw, tm->shm_len, e, sizeof e);
  *exp = base ? malloc(ob ? ob : 1) : NULL;
  if (!*exp) {
    snprintf(tm->d, sizeof tm->d, "%s", base ? "out of memory" : e);
    return KV_CALL_ERROR;
  }
  void *rb[KV_MAX_PARAMS], *pb[KV_MAX_PARAMS];
  call_bufs(tm, base, 0, rb);
  call_bufs(tm, tm->pristine, c, pb);
  for (int p = 0; p < t->nparams; p++) {
    enum kv_role r = t->params[p].role;
    if (kv_is_input(r))
      memcpy(rb[p], pb[p], kv_param_bytes(t, p, tm->nelem));
    else if (r == KV_ROLE_OUT)
      kv_poison_fill(t->params[p].dtype, rb[p], (size_t)tm->nelem[p], c & 1);
  }
  json_t *req =
             json_pack("{s:i,s:s,s:i,s:i,s:I,s:I}", "slot", 0, "set", "bench", "index", tm->index,
                       "calls", 1, "seed", (json_int_t)seed, "shm_bytes", (json_int_t)tm->shm_len),
         *rep = NULL;
  enum kv_call_status st =
      kv_worker_call(rw, KV_MSG_TIME, req, deadline, &rep, NULL, 0, tm->d, sizeof tm->d);
  json_decref(req);
  json_decref(rep);
  if (st == KV_CALL_OK && kv_pack_sample(t, tm->nelem, rb, 0, sseed, *exp) < 0) {
    snprintf(tm->d, sizeof tm->d, "out of memory");
    st = KV_CALL_ERROR;
  }
  return st;
}

/* A torch reference: its outputs (and with `inputs` its inputs) for seed on
 * the bench size, whole from its worker, sample sseed of them taken here
 * (kevo/runtime.h) into *exp. */
static enum kv_call_status reference_torch(struct timing *tm, uint64_t seed, int poison, int inputs,
                                           uint64_t sseed, size_t cb, double deadline,
                                           uint8_t **exp) {
  struct kv_session *s = tm->s;
  const struct kv_task *t = s->t;
  uint8_t *whole = NULL;
  enum kv_call_status st = kv_run_check(&s->rw, 0, "bench", tm->index, &seed, &poison, 1, inputs,
                                        kv_call_bytes(t, tm->nelem, inputs), deadline, &whole, NULL,
                                        tm->d, sizeof tm->d);
  if (st != KV_CALL_OK)
    return st;
  void *bufs[KV_MAX_PARAMS] = {0};
  size_t o = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < t->nparams; p++) {
      enum kv_role r = t->params[p].role;
      if (pass == 0 ? kv_is_output(r) : inputs && r == KV_ROLE_IN) {
        bufs[p] = whole + o;
        o += kv_param_bytes(t, p, tm->nelem);
      }
    }
  *exp = malloc(cb ? cb : 1);
  if (!*exp || kv_pack_sample(t, tm->nelem, bufs, inputs, sseed, *exp) < 0) {
    free(*exp);
    *exp = NULL;
    st = KV_CALL_ERROR;
    snprintf(tm->d, sizeof tm->d, "out of memory");
  }
  free(whole);
  return st;
}

/* Judges a validated call: the candidate's sample (got: outputs, then
 * inputs) against the reference's (exp, the same layout). */
static void judge_sample(struct timing *tm, int c, uint64_t seed, uint64_t sseed, int poison,
                         int inputs, const uint8_t *got, const uint8_t *exp) {
  const struct kv_task *t = tm->s->t;
  const int64_t *snelem = tm->snelem;
  size_t ob = kv_call_bytes(t, snelem, 0);
  struct kv_sample_of smp = {tm->nelem, sseed};
  struct kv_cmp cmp;
  kv_judge_call(t, tm->ss, exp, got, inputs ? got + ob : NULL, inputs ? exp + ob : NULL, snelem,
                seed, poison, &smp, &cmp);
  if (cmp.verdict == KV_V_INPUT_MUTATED)
    kv_set_verdict(tm->r, KV_V_INPUT_MUTATED, "timing at %s, timed call %d of a phase: %s",
                   tm->r->timing.sizes, c, cmp.detail);
  else if (cmp.verdict != KV_V_OK)
    kv_set_verdict(tm->r, KV_V_STALE_OUTPUT,
                   "a timed call (call %d of a phase, fresh inputs, drawn after the phase) did not "
                   "compute the reference's answer, so results were cached, skipped or left "
                   "unfinished while timed: %s",
                   c, cmp.detail);
}

/* cuda: the reference's answers to the pending validated calls, PENDING_JOB
 * calls to a job of the clean worker, each judged in turn (the first wrong
 * one decides). Nothing of the candidate runs meanwhile. 0, or -1 when kevo
 * failed. */
static int judge_pending(struct timing *tm, double deadline, char *err, size_t errlen) {
  const struct kv_task *t = tm->s->t;
  const int64_t *snelem = tm->snelem;
  size_t cb = kv_call_bytes(t, snelem, 1);
  int rc = 0;
  only(tm, SIDE_REF);
  for (int a = 0; a < tm->npend && rc == 0 && tm->r->verdict == KV_V_OK; a += PENDING_JOB) {
    int n = tm->npend - a < PENDING_JOB ? tm->npend - a : PENDING_JOB;
    json_t *calls = json_array();
    for (int k = 0; k < n; k++) {
      const struct pending *pd = &tm->pend[a + k];
      json_array_append_new(calls,
                            json_pack("{s:I,s:i,s:I}", "seed", (json_int_t)pd->seed, "poison",
                                      pd->poison, "sample", (json_int_t)pd->sseed));
    }
    json_t *req = json_pack("{s:i,s:s,s:i,s:o,s:b}", "slot", 0, "set", "bench", "index", tm->index,
                            "calls", calls, "return_inputs", 1),
           *rep = NULL;
    uint8_t *exp = NULL;
    enum kv_call_status st = kv_worker_call(&tm->s->rw, KV_MSG_CHECK, req, deadline, &rep, &exp,
                                            cb * (size_t)n, tm->d, sizeof tm->d);
    json_decref(req);
    json_decref(rep);
    if (st != KV_CALL_OK)
      rc = kv_error(err, errlen, "the reference failed on the bench size: %s", tm->d);
    for (int k = 0; k < n && rc == 0 && tm->r->verdict == KV_V_OK; k++) {
      const struct pending *pd = &tm->pend[a + k];
      judge_sample(tm, pd->c, pd->seed, pd->sseed, pd->poison, 1, pd->got, exp + cb * (size_t)k);
    }
    free(exp);
  }
  for (int k = 0; k < tm->npend; k++)
    free(tm->pend[k].got);
  tm->npend = 0;
  return rc;
}

/* Validates call c of the candidate's last phase against the reference's
 * answer on the same fresh inputs (clean worker), on a sample of each
 * buffer's elements drawn now (kevo/runtime.h). cpu: outputs from shared
 * memory (its inputs are compared whole by check_inputs), the reference's
 * call at once. cuda: outputs and inputs gathered on the device by the
 * clean worker from the candidate's buffers, mapped (without lending, the
 * old path: by the candidate's worker, FETCH); the reference's answers later, for all
 * validated calls at once (judge_pending), or at once for a torch
 * reference. Returns 0 with r's verdict changed when it is wrong, -1 when
 * kevo failed. */
static int validate_call(struct timing *tm, int c, double deadline, char *err, size_t errlen) {
  struct kv_session *s = tm->s;
  const struct kv_task *t = s->t;
  uint64_t seed = tm->cand_seed + (uint64_t)c;
  /* cuda: the inputs' sample too (a torch reference's whole inputs travel:
   * the first validated call's only). */
  int poison = c & 1, inputs = tm->cuda && (!s->torch || tm->validated == 0);
  /* The sample's seed travels as JSON's 63-bit integer. */
  uint64_t sseed = kv_random_u64() >> 1;
  const int64_t *snelem = tm->snelem;
  size_t cb = kv_call_bytes(t, snelem, inputs);
  uint8_t *got = NULL, *exp = NULL;
  enum kv_call_status st = KV_CALL_OK;
  if (!tm->cuda) {
    /* Straight from the shared memory of the stopped candidate. */
    got = malloc(cb ? cb : 1);
    if (!got)
      return kv_error(err, errlen, "out of memory");
    void *bufs[KV_MAX_PARAMS];
    call_bufs(tm, s->cw.shm, c, bufs);
    if (kv_pack_sample(t, tm->nelem, bufs, inputs, sseed, got) < 0) {
      free(got);
      return kv_error(err, errlen, "out of memory");
    }
  } else if (tm->lend) {
    /* Read by the clean worker from the candidate's buffers, its process
     * stopped since its phase answered and the GPU settled. */
    char why[700] = "no buffers named for that call";
    json_t *row = json_array_get(tm->exported, (size_t)c);
    int pr =
        row ? kv_lend_peek(s, tm->index, row, sseed, inputs, cb, &got, why, sizeof why, err, errlen)
            : 1;
    if (pr < 0)
      return -1;
    if (pr > 0) {
      kv_set_verdict(tm->r, KV_V_CRASH,
                     "timing at %s: kevo cannot read timed call %d's results: %s",
                     tm->r->timing.sizes, c, why);
      return 0;
    }
  } else {
    json_t *req =
               json_pack("{s:i,s:b,s:I}", "call", c, "inputs", inputs, "sample", (json_int_t)sseed),
           *rep = NULL;
    st = kv_worker_call(&s->cw, KV_MSG_FETCH, req, deadline, &rep, &got, cb, tm->d, sizeof tm->d);
    json_decref(req);
    json_decref(rep);
  }
  if (st != KV_CALL_OK) {
    char tail[300];
    kv_tail_of(&s->cw.err, tail, sizeof tail);
    kv_set_verdict(tm->r, st == KV_CALL_TIMEOUT ? KV_V_TIMEOUT : KV_V_CRASH,
                   "timing at %s: fetching a timed call's outputs: %s%s", tm->r->timing.sizes,
                   tm->d, tail);
    return 0;
  }
  tm->validated++;
  if (tm->cuda && !s->torch) {
    if (tm->npend == MAX_PENDING && judge_pending(tm, deadline, err, errlen) < 0) {
      free(got);
      return -1;
    }
    tm->pend[tm->npend++] = (struct pending){c, poison, seed, sseed, got};
    return 0;
  }
  /* cpu: the call's guard zones, filled by fill_phase as the checks' are. */
  void *gbufs[KV_MAX_PARAMS];
  int gp, gb;
  long gk;
  if (!tm->cuda) {
    call_bufs(tm, s->cw.shm, c, gbufs);
    if (kv_guard_find(t, tm->nelem, gbufs, seed, 0, &gp, &gb, &gk)) {
      char gd[512];
      kv_guard_detail(t, gp, tm->nelem[gp], gb, gk, gd, sizeof gd);
      free(got);
      kv_set_verdict(tm->r,
                     t->params[gp].role == KV_ROLE_IN ? KV_V_INPUT_MUTATED : KV_V_WRONG_OUTPUT,
                     "timing at %s, timed call %d of a phase: %s", tm->r->timing.sizes, c, gd);
      return 0;
    }
  }
  only(tm, SIDE_REF);
  if (!tm->cuda)
    st = reference_on(tm, c, seed, sseed, kv_call_bytes(t, snelem, 0), deadline, &exp);
  else
    st = reference_torch(tm, seed, poison, inputs, sseed, cb, deadline, &exp);
  if (st != KV_CALL_OK) {
    free(got);
    return kv_error(err, errlen, "the reference failed on the bench size: %s", tm->d);
  }
  judge_sample(tm, c, seed, sseed, poison, inputs, got, exp);
  free(exp);
  free(got);
  return 0;
}

/* cuda: one side's per-call times. The stream's events time the call,
 * unless the host clock around the call and a device-wide synchronization
 * (less that of kevo's empty call, measured in the clean worker) says the
 * work ran outside them (another stream, host work in the entry): then each
 * call takes the larger of the two, and *host_timer is set. */
static void choose_times(struct side *sd, double sync_ns, int *host_timer) {
  double me = median_ns(sd->ev, sd->n), mh = median_ns(sd->host, sd->n) - sync_ns;
  /* Honest: the events see the launch gap too, so the two agree within a
   * few us; a side whose events say much less was timed outside them (or
   * its events were forged). */
  *host_timer = mh > 1.15 * me + 5000;
  if (!*host_timer)
    return;
  for (int i = 0; i < sd->n; i++) {
    double h = sd->host[i] - sync_ns;
    if (h > sd->ev[i])
      sd->ev[i] = h;
  }
}

static enum kv_verdict phase_failed(struct timing *tm, int side, enum kv_call_status st, char *err,
                                    size_t errlen, int *kevo_failed) {
  *kevo_failed = 0;
  if (side != SIDE_CAND || tm->kevo_err) {
    *kevo_failed = 1;
    kv_error(err, errlen, "timing the %s at %s failed: %s", side_names[side], tm->r->timing.sizes,
             tm->d);
    return KV_V_OK;
  }
  char tail[300];
  kv_tail_of(&tm->s->cw.err, tail, sizeof tail);
  if (st == KV_CALL_TIMEOUT) {
    kv_set_verdict(tm->r, KV_V_TIMEOUT, "timing at %s: %s", tm->r->timing.sizes, tm->d);
    return KV_V_TIMEOUT;
  }
  kv_set_verdict(tm->r, KV_V_CRASH, "timing at %s: %s%s", tm->r->timing.sizes, tm->d, tail);
  return KV_V_CRASH;
}

/* The 95% interval of the speedup, from the final times (cuda: after the
 * choice of clock): the order-statistic interval of the rounds' ratios,
 * relative to their median, applied to the speedup as reported (pooled
 * medians, raised to kevo's floor where it was); and the interval of the
 * candidate's time per call by kevo's clock, less the clean overhead. */
static void speedup_ci(struct timing *tm, int m, int P, double overhead) {
  struct kv_timing *T = &tm->r->timing;
  struct side *C = &tm->sd[SIDE_CAND], *R = &tm->sd[SIDE_REF];
  if (!tm->rratio || !tm->rclock || P < 1 || C->n < P * m || R->n < P * m || C->nph < P)
    return;
  /* The clock's rounds less the overhead the loop's stop rule used (the
   * empty phases interleaved with them), so that the interval reported is
   * the one the loop stopped on. */
  const struct side *EI = &tm->sd[SIDE_EMPTY];
  double oh = EI->nph > 0 ? median_ns(EI->wall, EI->nph) : overhead;
  for (int j = 0; j < P; j++) {
    double cm = median_ns(C->ev + j * m, m);
    tm->rratio[j] = cm > 0 ? median_ns(R->ev + j * m, m) / cm : 0;
    tm->rclock[j] = (C->wall[j] - oh) / m;
  }
  struct kv_median_ci ci, cc;
  if (kv_median_ci(tm->rratio, P, 0.95, &ci) < 0 || !(ci.median > 0))
    return;
  T->speedup_lo = T->speedup * ci.lo / ci.median;
  T->speedup_hi = T->speedup * ci.hi / ci.median;
  T->ci_level = ci.level;
  T->ci_half_width = kv_median_ci_rel(&ci);
  /* -1: kevo's clock cannot resolve the candidate's calls (the overhead
   * is most of a phase) */
  double hc = kv_median_ci(tm->rclock, P, 0.95, &cc) == 0 ? kv_median_ci_rel(&cc) : -1;
  T->ci_clock_half_width = hc >= 0 && hc < 1e6 ? hc : -1;
}

/* validate_call, its seconds counted (the timing stage's breakdown). */
static int validate(struct timing *tm, int c, double deadline, char *err, size_t errlen) {
  double t0 = kv_now_s();
  int rc = validate_call(tm, c, deadline, err, errlen);
  tm->validate_s += kv_now_s() - t0;
  return rc;
}

static double rand01(void) {
  return (double)(kv_random_u64() >> 11) * 0x1p-53;
}

/* The most calls a phase holds buffers for at these sizes. */
static int phase_calls(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS], int cuda) {
  size_t call_bytes = kv_call_bytes(t, nelem, 1);
  for (int p = 0; p < t->nparams; p++) /* kv_call_bytes leaves out inouts' inputs */
    if (t->params[p].role == KV_ROLE_INOUT)
      call_bytes += kv_param_bytes(t, p, nelem);
  double cap = cuda ? 8.0 * (1 << 30) : 1.0 * (1 << 30);
  return call_bytes ? (int)fmin(MAX_PER_PHASE, fmax(1, cap / (double)call_bytes)) : MAX_PER_PHASE;
}

/* cpu: the shared memory every bench size's phases fit in (a worker's is
 * sized once). */
static int shm_bytes(const struct kv_task *t, int n, int cuda, size_t *len, char *err,
                     size_t errlen) {
  *len = 0;
  for (int i = 0; i < n; i++) {
    int64_t nelem[KV_MAX_PARAMS];
    size_t off[KV_MAX_PARAMS], per_call;
    if (kv_layout(t, &t->bench[i], nelem, err, errlen) < 0)
      return -1;
    kv_shm_layout(t, nelem, off, &per_call);
    size_t b = per_call * (size_t)phase_calls(t, nelem, cuda);
    *len = b > *len ? b : *len;
  }
  return 0;
}

/* The clean phases' spread, robustly (ns per phase): SPREAD_K sigmas of
 * their walls as the median absolute deviation estimates them. One host
 * hiccup moves a MAD by one rank at most, where it set the range (and with
 * the range, the slack) to anything: at 10 us calls one hiccup made the
 * floor 0 and a candidate that deferred its work to a phase's last call
 * got 1.5x-3.8x. */
static double clean_spread(const struct timing *tm) {
  const struct side *E = &tm->sd[SIDE_EMPTY_ALONE], *EI = &tm->sd[SIDE_EMPTY];
  /* cpu: the interleaved empty phases ran with the candidate stopped, so
   * they are clean samples of the machine's noise too (cuda: GPU work the
   * candidate left running could widen them; only the ones alone count). */
  int n = E->nph + (tm->cuda ? 0 : EI->nph);
  double *w = malloc(sizeof(double) * (size_t)(n + 1));
  if (!w)
    return 0;
  memcpy(w, E->wall, sizeof(double) * (size_t)E->nph);
  if (!tm->cuda)
    memcpy(w + E->nph, EI->wall, sizeof(double) * (size_t)EI->nph);
  double sigma = kv_robust_sigma(w, n);
  free(w);
  return SPREAD_K * sigma;
}

/* The clean phases' range (ns): what one hiccup of the host can add to a
 * phase. Judges only whether kevo's clock is precise enough to reject on
 * (judge_times): a noisy host clamps a median instead. */
static double clean_range(const struct timing *tm) {
  const struct side *E = &tm->sd[SIDE_EMPTY_ALONE], *EI = &tm->sd[SIDE_EMPTY];
  double lo = 0, hi = 0;
  int n = 0;
  for (int k = 0; k < 2; k++) {
    const struct side *sd = k ? EI : E;
    if (k && tm->cuda)
      break;
    for (int j = 0; j < sd->nph; j++, n++) {
      lo = n == 0 || sd->wall[j] < lo ? sd->wall[j] : lo;
      hi = n == 0 || sd->wall[j] > hi ? sd->wall[j] : hi;
    }
  }
  return hi - lo;
}

/* The median over a side's phases of its calls' mean in that phase (ns):
 * what a call costs when the work of a phase is spread over its calls. */
static double phase_mean_median(const struct side *sd, int m) {
  if (m < 2 || sd->n < m)
    return 0;
  int np = sd->n / m;
  double *pm = malloc(sizeof(double) * (size_t)np);
  if (!pm)
    return 0;
  for (int j = 0; j < np; j++)
    pm[j] = sum_of(sd->ev + (size_t)j * m, m) / m;
  double v = median_ns(pm, np);
  free(pm);
  return v;
}

/* A side's median is never below DEFER_FLOOR of its own phases' mean call:
 * work deferred to a phase's last call (detected from the next slot's
 * poison), or batched into every k-th call, leaves the median of the calls
 * near 0 and their sum, which kevo's clock bounds, honest. Applied to every
 * side alike (an honest kernel whose calls vary is raised as much as the
 * reference's copy of it). 1 when it was raised. */
static int raise_to_phase_mean(struct kv_stats *st, const struct side *sd, int m) {
  double pm = phase_mean_median(sd, m) / 1000.0;
  if (!(st->median_us < DEFER_FLOOR * pm))
    return 0;
  st->median_us = DEFER_FLOOR * pm;
  return 1;
}

/* What a side's time is taken as: its median, or under KernelBench's
 * protocol its mean. */
static double center_us(const struct timing *tm, const struct kv_stats *st) {
  return tm->kb ? st->mean_us : st->median_us;
}

/* Where kevo's clock cannot see the candidate's calls (its phases, less
 * kevo's overhead, within the clean phases' noise: a heavily loaded host,
 * where the empty entry's phases can outlast the candidate's), it bounds
 * nothing and the candidate's report is all there is: no speedup above 1x is
 * credited on it (clock_blind, said in the verdict). On a 2-core host at a
 * load of 11, a torch candidate that slowed its own clock 50x was taken at
 * 2.44x before. */
static void clock_blind(struct kv_timing *T) {
  T->clock_blind = 1;
  if (!(T->speedup > 1))
    return;
  double f = 1 / T->speedup; /* the candidate's time raised to the reference's */
  T->speedup = 1;
  T->speedup_lo *= f;
  T->speedup_hi *= f;
  T->speedup_vs_baseline *= f;
  T->cand.median_us /= f;
  T->cand.mean_us /= f;
  T->cand_clamped = 1;
}

/* Each side's times (cuda: events unless the host clock says work escaped
 * them), each raised to its phases' mean (raise_to_phase_mean), and the
 * speedup as reported. Returns kevo's empty call on the host clock (ns). */
static double side_times(struct timing *tm, int m, int has_base) {
  struct kv_gate_result *r = tm->r;
  struct side *C = &tm->sd[SIDE_CAND], *R = &tm->sd[SIDE_REF], *E = &tm->sd[SIDE_EMPTY_ALONE],
              *B = &tm->sd[SIDE_BASE], *A = &tm->sd[SIDE_ALONE];
  double empty_host = median_ns(E->host, E->n); /* launch + sync of nothing (cpu: ~0) */
  if (tm->cuda) {
    int dummy;
    r->timing.sync_overhead_us = empty_host / 1000.0;
    choose_times(C, empty_host, &r->timing.cand_host_timer);
    choose_times(R, empty_host, &r->timing.ref_host_timer);
    choose_times(A, empty_host, &dummy);
    if (has_base)
      choose_times(B, empty_host, &dummy);
  }
  stats_of(C->ev, C->n, &r->timing.cand);
  stats_of(R->ev, R->n, &r->timing.ref);
  stats_of(A->ev, A->n, &r->timing.ref_alone);
  r->timing.cand_clamped = raise_to_phase_mean(&r->timing.cand, C, m);
  raise_to_phase_mean(&r->timing.ref, R, m);
  raise_to_phase_mean(&r->timing.ref_alone, A, m);
  if (has_base) {
    stats_of(B->ev, B->n, &r->timing.base);
    raise_to_phase_mean(&r->timing.base, B, m);
    r->timing.has_baseline = 1;
  }
  r->timed = 1;
  r->timing.wall_s = sum_of(C->wall, C->nph) * 1e-9;
  r->timing.covered_s = sum_of(C->host, C->n) * 1e-9;
  double cc = center_us(tm, &r->timing.cand);
  r->timing.speedup = cc > 0 ? center_us(tm, &r->timing.ref) / cc : 0;
  if (r->timing.has_baseline && cc > 0)
    r->timing.speedup_vs_baseline = center_us(tm, &r->timing.base) / cc;
  return empty_host;
}

/* kevo's clock around the candidate's phases (judge_times), in ns. */
struct clock_view {
  double empty_host;  /* kevo's empty call on the host clock (launch + sync) */
  double overhead;    /* the empty entry's median phase, alone */
  double slack;       /* per phase: what kevo's clock cannot resolve */
  double per_parent;  /* the candidate's median phase less the overhead, per call */
  double phase_ratio; /* median over phases: reported (+ slack) over kevo's clock */
  double med_host;    /* the candidate's median call on the host clock, less empty_host */
};

/* The parent's clock bounds the candidate's: what the phases took beyond
 * kevo's own overhead (the empty entry's phases, clean worker) is what the
 * calls took. Fills *cv; may set r's verdict (implausible). -1 only when
 * kevo failed. */
static int clock_bound(struct timing *tm, int m, struct clock_view *cv, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  struct side *C = &tm->sd[SIDE_CAND], *E = &tm->sd[SIDE_EMPTY_ALONE];
  double empty_host = cv->empty_host;
  /* Per phase: the parent's wall less the clean overhead (the empty entry's
   * median phase) against what the worker reported for the phase. The
   * median over phases is robust to one disturbed phase; a forger has to
   * forge most of them, and then the sum shows it too. */
  double overhead = median_ns(E->wall, E->nph);
  double *ratio = calloc((size_t)C->nph + 1, sizeof *ratio),
         *pe = calloc((size_t)C->nph + 1, sizeof *pe);
  if (!ratio || !pe) {
    free(ratio);
    free(pe);
    return kv_error(err, errlen, "out of memory");
  }
  /* Slack per phase: MIN_SLACK a call (cuda: 2 us, the host clock's jitter
   * around a synchronization), or the clean phases' robust spread where the
   * machine is noisier than that (a busy CPU host). */
  double parent = 0, reported = 0,
         slack = fmax((tm->cuda ? MIN_SLACK_CUDA : MIN_SLACK_CPU) * m, clean_spread(tm));
  r->timing.clock_slack_us = slack / m / 1000.0;
  for (int j = 0; j < C->nph; j++) {
    double e = C->wall[j] - overhead;
    double rep = sum_of(C->host + j * m, m) - m * empty_host;
    parent += e;
    reported += rep;
    pe[j] = e / m;
    ratio[j] = e > slack ? (rep + slack) / e : 1.0;
  }
  double per_parent = median_ns(pe, C->nph), phase_ratio = median_ns(ratio, C->nph);
  /* How much the candidate's phases vary by kevo's clock (never by what the
   * candidate reports: it could claim noise to escape the rejection below). */
  struct kv_stats spread;
  stats_of(pe, C->nph, &spread);
  free(ratio);
  free(pe);
  r->timing.clock_ratio = phase_ratio;
  r->timing.parent_us = per_parent / 1000.0;
  r->timing.cand_phase_us = median_ns(C->wall, C->nph) / 1000.0;
  r->timing.empty_phase_us = overhead / 1000.0;
  r->timing.empty_beside_phase_us =
      median_ns(tm->sd[SIDE_EMPTY].wall, tm->sd[SIDE_EMPTY].nph) / 1000.0;
  double med_host = median_ns(C->host, C->n) - empty_host;
  cv->overhead = overhead;
  cv->slack = slack;
  cv->per_parent = per_parent;
  cv->phase_ratio = phase_ratio;
  cv->med_host = med_host;
  /* Where kevo's clock is precise (a quiet GPU: the slack is a few percent
   * of a call, and the candidate's phases differ by under 10% on kevo's
   * clock), reported times below CLOCK_FLOOR of it are a forgery; on a noisy
   * host an honest phase can fall far below (the process waited for a core
   * outside its calls), so there the candidate's median is raised to the
   * floor instead (clamp_to_clock): a forger gains at most 1 / CLOCK_FLOOR,
   * and can make the clock imprecise only by really spending time in its
   * phases. */
  double hiccup = fmax(slack, 2 * clean_range(tm)); /* the clock's worst case */
  int precise = hiccup / m < 0.05 * per_parent &&
                (spread.median_us <= 0 || spread.iqr_us < 0.10 * spread.median_us);
  if (sum_of(C->host, C->n) > sum_of(C->wall, C->nph) * 1.001 + 1e6) {
    kv_set_verdict(r, KV_V_IMPLAUSIBLE,
                   "the candidate's worker reported %.3f s of calls in phases that took %.3f s "
                   "by kevo's clock: its clock is forged",
                   sum_of(C->host, C->n) * 1e-9, r->timing.wall_s);
  } else if (precise &&
             (phase_ratio < CLOCK_FLOOR || reported < SUM_FLOOR * parent - slack * C->nph)) {
    kv_set_verdict(r, KV_V_IMPLAUSIBLE,
                   "the candidate's worker reported %.1f us per call (median %.1f us), but "
                   "kevo's own clock around its phases, less kevo's overhead measured in a clean "
                   "process, leaves %.1f us per call: its clock is forged or work escaped it",
                   reported / C->n / 1000.0, med_host / 1000.0, per_parent / 1000.0);
  }
  return 0;
}

/* The sums agree, but the median may still be skewed (most calls reported
 * fast, a few slow): the candidate's median is never taken below what
 * kevo's clock allows (a noisy host can make an honest median that low:
 * it is raised, not rejected). */
static void clamp_to_clock(struct timing *tm, int m, const struct clock_view *cv) {
  struct kv_gate_result *r = tm->r;
  double floor_us = ((cv->phase_ratio < CLOCK_FLOOR ? CLOCK_FLOOR : MEDIAN_FLOOR) * cv->per_parent -
                     cv->slack / m) /
                    1000.0;
  if (cv->med_host / 1000.0 < floor_us && center_us(tm, &r->timing.cand) < floor_us) {
    r->timing.cand_clamped = 1;
    r->timing.cand.median_us = fmax(r->timing.cand.median_us, floor_us);
    if (tm->kb)
      r->timing.cand.mean_us = floor_us;
    r->timing.speedup = center_us(tm, &r->timing.ref) / floor_us;
    if (r->timing.has_baseline)
      r->timing.speedup_vs_baseline = center_us(tm, &r->timing.base) / floor_us;
  }
}

/* The reference beside the candidate against the reference alone (us), and
 * the tolerance between them their noise allows (relative). */
struct ref_sides {
  double alone, beside, tol;
};

/* Fills *rs; the speedup taken against the reference alone where it was
 * the faster. */
static void prefer_ref_alone(struct timing *tm, struct ref_sides *rs) {
  struct kv_gate_result *r = tm->r;
  const struct side *R = &tm->sd[SIDE_REF], *A = &tm->sd[SIDE_ALONE];
  double ra = center_us(tm, &r->timing.ref_alone), ri = center_us(tm, &r->timing.ref);
  double noise = ra > 0 ? fmax(r->timing.ref_alone.iqr_us, r->timing.ref.iqr_us) / ra : 0;
  rs->alone = ra;
  rs->beside = ri;
  rs->tol = INTERFERENCE_TOL + 3.0 * noise / sqrt(fmin(A->n, R->n));
  /* Whatever slowed the reference beside the candidate (anything its
   * process left behind, or a host busy only then), it cannot have slowed
   * the reference alone, timed once that process was dead: the speedup is
   * taken against the faster of the two, so a slower reference never buys a
   * candidate anything, on either surface and below any tolerance. */
  double cc = center_us(tm, &r->timing.cand);
  if (ra > 0 && ra < ri && cc > 0) {
    r->timing.ref_beside_us = ri;
    r->timing.ref = r->timing.ref_alone;
    r->timing.ref_from_alone = 1;
    r->timing.speedup = ra / cc;
    /* The baseline is timed only beside the candidate, in the same worker
     * as the reference: it is taken as slowed by the same factor. */
    if (r->timing.has_baseline) {
      r->timing.base.median_us *= ra / ri;
      r->timing.base.mean_us *= ra / ri;
      r->timing.speedup_vs_baseline = center_us(tm, &r->timing.base) / cc;
    }
  }
}

/* kevo's empty phases beside the candidate and alone (recorded), and cuda's
 * interference verdicts. 1 when r's verdict was set. */
static int interference(struct timing *tm, const struct ref_sides *rs, double slack) {
  struct kv_gate_result *r = tm->r;
  const struct side *E = &tm->sd[SIDE_EMPTY_ALONE], *EI = &tm->sd[SIDE_EMPTY];
  double ra = rs->alone, ri = rs->beside, tol = rs->tol;
  double ea = median_ns(E->wall, E->nph) / 1000.0, ei = median_ns(EI->wall, EI->nph) / 1000.0;
  r->timing.empty_beside_us = ei;
  r->timing.empty_alone_us = ea;
  /* cuda only: a stopped process's GPU work goes on, and a reference much
   * slower beside the candidate than alone is a verdict. On the cpu surface
   * nothing of the candidate can run while the reference does (its process
   * is stopped, and the sandbox denies it any say over other processes'
   * scheduling), and a busy host slows an honest candidate's reference as
   * much (an ASan run: 21%): there the speedup's reference is the faster
   * figure (prefer_ref_alone), not a verdict. */
  if (tm->cuda && ea > 0 && ei > ea * (1 + INTERFERENCE_TOL) + 2 * slack / 1000.0) {
    kv_set_verdict(r, KV_V_INTERFERENCE,
                   "kevo's own empty phases took %.1f us while the candidate's process existed "
                   "and %.1f us alone (%.0f%% slower): the candidate left work running that "
                   "slows everything beside it",
                   ei, ea, (ei / ea - 1) * 100);
    return 1;
  }
  if (tm->cuda && ra > 0 && ri > ra * (1 + tol) + 2.0) {
    kv_set_verdict(r, KV_V_INTERFERENCE,
                   "the reference took %.1f us (median) while the candidate's process existed "
                   "and %.1f us alone (%.0f%% slower; noise allows %.0f%%): the candidate "
                   "slowed the reference down",
                   ri, ra, (ri / ra - 1) * 100, tol * 100);
    return 1;
  }
  return 0;
}

/* Roofline against this device's measured ceilings. */
static void roofline(struct timing *tm, const struct kv_calib *cal) {
  struct kv_gate_result *r = tm->r;
  const struct kv_task *t = tm->s->t;
  char e2[256];
  int64_t v;
  if (t->cost_bytes && kv_expr_eval(t, tm->ss, t->cost_bytes, &v, e2, sizeof e2) == 0)
    r->timing.bytes = (double)v;
  if (t->cost_flops && kv_expr_eval(t, tm->ss, t->cost_flops, &v, e2, sizeof e2) == 0)
    r->timing.flops = (double)v;
  double sec = r->timing.cand.median_us * 1e-6;
  if (sec > 0) {
    r->timing.gbs = r->timing.bytes / sec / 1e9;
    r->timing.gflops = r->timing.flops / sec / 1e9;
  }
  if (cal && sec > 0 && cal->bandwidth_gbs > 0 && cal->fma_gflops > 0) {
    double fb = r->timing.gbs / cal->bandwidth_gbs, ff = r->timing.gflops / cal->fma_gflops;
    r->timing.roofline = fb > ff ? fb : ff;
    if (fb > IMPLAUSIBLE_FACTOR)
      kv_set_verdict(r, KV_V_IMPLAUSIBLE,
                     "achieved %.1f GB/s is %.1fx this device's measured %.1f GB/s: the candidate "
                     "cannot have done the work it claims",
                     r->timing.gbs, fb, cal->bandwidth_gbs);
    else if (ff > IMPLAUSIBLE_FACTOR)
      kv_set_verdict(r, KV_V_IMPLAUSIBLE,
                     "achieved %.1f GFLOP/s is %.1fx this device's measured FP32 peak of %.1f "
                     "GFLOP/s: the candidate cannot have done the work it claims",
                     r->timing.gflops, ff, cal->fma_gflops);
  }
}

/* After the phases: each side's times (cuda: events unless the host clock
 * says work escaped them), the candidate's bounded by kevo's clock, the
 * interval, the reference beside the candidate against alone, and the
 * roofline. May change r's verdict; -1 only when kevo failed. */
static int judge_times(struct timing *tm, int m, int P, int has_base, const struct kv_calib *cal,
                       char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  struct clock_view cv = {0};
  cv.empty_host = side_times(tm, m, has_base);
  if (clock_bound(tm, m, &cv, err, errlen) < 0)
    return -1;
  if (r->verdict != KV_V_OK)
    return 0;
  clamp_to_clock(tm, m, &cv);
  struct ref_sides rs;
  prefer_ref_alone(tm, &rs);
  if (!tm->kb) /* KernelBench's blocks are not rounds of ABBA */
    speedup_ci(tm, m, P, cv.overhead);
  if (cv.per_parent * m <= cv.slack)
    clock_blind(&r->timing);
  if (interference(tm, &rs, cv.slack))
    return 0;
  roofline(tm, cal);
  return 0;
}

/* KernelBench: one side's block, KV_KB_WARMUP untimed calls then `trials`
 * timed ones, each a phase of one call on the block's inputs; the
 * candidate's inputs checked after every trial (cpu) and its outputs
 * validated on trials drawn after each (the last one when none was). 0, or
 * -1 to stop (*kevo_failed set when kevo failed, else r's verdict says). */
static int kb_block(struct timing *tm, int side, int trials, double job, char *err, size_t errlen,
                    int *kevo_failed) {
  tm->kb_seed[side] = 0;
  double q = (double)TARGET_VALIDATIONS / trials;
  for (int i = 0; i < KV_KB_WARMUP + trials && tm->r->verdict == KV_V_OK; i++) {
    int timed = i >= KV_KB_WARMUP, last = i == KV_KB_WARMUP + trials - 1;
    double dl = job + 4.0 * tm->sd[side].per_call * 1e-9;
    enum kv_call_status st = phase(tm, side, 1, timed, 0, dl);
    if (st != KV_CALL_OK) {
      phase_failed(tm, side, st, err, errlen, kevo_failed);
      return -1;
    }
    if (side != SIDE_CAND || !timed)
      continue;
    if (!tm->cuda)
      check_inputs(tm, 1);
    if (tm->r->verdict == KV_V_OK && ((last && tm->validated == 0) || rand01() < q) &&
        validate(tm, 0, job * 6, err, errlen) < 0) {
      *kevo_failed = 1;
      return -1;
    }
  }
  return tm->r->verdict == KV_V_OK ? 0 : -1;
}

/* KernelBench's protocol (kv_gate_opts.timing_method) after the warm-up:
 * the sides' blocks back to back (candidate, reference, kevo's empty entry,
 * the baseline), the candidate's validated calls judged (cuda), its process
 * stopped, the reference's and the empty entry's blocks alone, then the
 * times judged as kevo's are. -1 only when kevo failed. */
static int kb_time(struct timing *tm, const int *sides, int nsides, int has_base, double job,
                   const struct kv_calib *cal, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  int kevo_failed = 0, n = KV_KB_TRIALS;
  r->timing.phases = r->timing.min_phases = r->timing.max_phases = n;
  r->timing.calls_per_phase = 1;
  snprintf(r->timing.stop, sizeof r->timing.stop, "%s", kv_timing_stop_name(KV_TSTOP_FIXED));
  uint64_t t0 = kv_now_ns();
  for (int k = 0; k < nsides; k++)
    if (kb_block(tm, sides[k], n, job, err, errlen, &kevo_failed) < 0)
      return kevo_failed ? -1 : 0;
  if (tm->npend) {
    kv_worker_kill(&tm->s->cw);
    if (judge_pending(tm, job * 6, err, errlen) < 0)
      return -1;
    if (r->verdict != KV_V_OK)
      return 0;
  }
  r->timing.validated_calls = tm->validated;
  r->timing.stage_loop_s = (double)(kv_now_ns() - t0) * 1e-9 - tm->validate_s;
  r->timing.stage_validate_s = tm->validate_s;
  double t1 = kv_now_s();
  kv_session_stop_candidate(tm->s, r);
  if (kb_block(tm, SIDE_ALONE, n, job, err, errlen, &kevo_failed) < 0 ||
      kb_block(tm, SIDE_EMPTY_ALONE, n, job, err, errlen, &kevo_failed) < 0)
    return kevo_failed ? -1 : 0;
  r->timing.stage_alone_s = kv_now_s() - t1;
  tm->r->timing.kb_kept = tm->cuda ? tm->kb_asked > 0 && tm->kb_acked == tm->kb_asked : 1;
  return judge_times(tm, 1, n, has_base, cal, err, errlen);
}

/* time_size's schedule: the sides in turn, the phases' sizes, the loop's
 * rates and deadline, and where it stopped. */
struct sched {
  int sides[4], nsides, has_base;
  double budget, job; /* s: of timed calls per side; a job's deadline */
  int m_mem, m, P;    /* calls a phase has buffers for; calls per phase; rounds */
  struct kv_timing_plan pl;
  double target;          /* adaptive: the interval's target (0: the fixed budget) */
  double q_first, q_rest; /* a call's chance to be validated, by the fewest rounds and past */
  double t_warm, loop_dl; /* s: when the warm-up began; the loop's deadline */
  uint64_t loop_t0;       /* ns: when the loop began */
  enum kv_timing_stop stop;
  int rounds;      /* rounds the loop ran */
  int kevo_failed; /* kevo failed (err says why); else r's verdict says */
};

/* The baseline into the reference worker's slot 2, unless it is there
 * (a later bench size, or a reference worker kept warm). -1 when it fails. */
static int load_baseline(struct timing *tm, const char *base_so, char *err, size_t errlen) {
  struct kv_session *s = tm->s;
  struct kv_gate_result *r = tm->r;
  char slot2[KV_SLOT_KEY];
  snprintf(slot2, sizeof slot2, "%s|%s", base_so ? base_so : "",
           s->torch && s->o->torch_compile ? s->o->torch_compile : "");
  int loaded = !strcmp(s->rw_slot2, slot2);
  if (base_so && s->torch) {
    /* The module under torch.compile: compiled at the bench size now, so
     * that no timed call pays for it (at most 10 minutes). */
    const char *mode = s->o->torch_compile;
    snprintf(r->timing.baseline_kind, sizeof r->timing.baseline_kind, "torch.compile(mode=%s)",
             mode);
    if (!loaded &&
        kv_session_load_compiled(&s->rw, 2, base_so, mode, 600, &r->timing.baseline_compile_s,
                                 tm->d, sizeof tm->d) != 0)
      return kv_error(err, errlen, "%s: torch.compile(mode=%s) of the reference failed: %s",
                      base_so, mode, tm->d);
  } else if (base_so) {
    snprintf(r->timing.baseline_kind, sizeof r->timing.baseline_kind, "baseline.cu");
    if (!loaded && kv_session_load(&s->rw, 2, base_so, tm->d, sizeof tm->d) != 0)
      return kv_error(err, errlen, "%s: the baseline does not load: %s", base_so, tm->d);
  }
  if (base_so)
    snprintf(s->rw_slot2, sizeof s->rw_slot2, "%s", slot2);
  return 0;
}

/* Each side's worker and slot. -1 when kevo failed. */
static int assign_workers(struct timing *tm, char *err, size_t errlen) {
  struct kv_session *s = tm->s;
  struct {
    struct kv_worker *w;
    int slot;
  } who[NSIDES] = {{&s->cw, 0}, {&s->rw, 0}, {&s->rw, 2}, {&s->rw, -1}, {&s->rw, 0}, {&s->rw, -1}};
  /* A torch reference: kevo's empty entry runs in a clean kevo-worker of its
   * own, so that the overhead it prices (what a phase costs besides the
   * calls) is that of a process like the candidate's, not Python's. So it
   * does when the reference's worker lends: each phase ends with that
   * worker's probe kernel (settle_after), which after the candidate's phase
   * waits for the GPU to switch from another process's context, and after
   * the empty entry's in the lender itself would not: 200-350 us a phase
   * on an H200, enough for kevo's clock to call honest kernels
   * `implausible`. (A torch reference lends from a worker of its own, lw.) */
  if (s->torch || tm->lend) {
    if (!s->ew_up && kv_session_worker_up(s, &s->ew, &s->ew_up, err, errlen) < 0)
      return -1;
    who[SIDE_EMPTY].w = who[SIDE_EMPTY_ALONE].w = &s->ew;
  }
  for (int i = 0; i < NSIDES; i++) {
    tm->sd[i].w = who[i].w;
    tm->sd[i].slot = who[i].slot;
  }
  return 0;
}

/* time_size's state before its first phase: the sizes, the baseline
 * loaded, each side's worker, the buffers. -1 when kevo failed (nothing is
 * left to free then). */
static int timing_setup(struct timing *tm, struct sched *sc, struct kv_session *s, int index,
                        const char *base_so, size_t shm_len, struct kv_gate_result *r, char *err,
                        size_t errlen) {
  static const int order[4] = {SIDE_CAND, SIDE_REF, SIDE_EMPTY, SIDE_BASE};
  const struct kv_task *t = s->t;
  memset(tm, 0, sizeof *tm);
  memset(sc, 0, sizeof *sc);
  tm->s = s;
  tm->r = r;
  tm->index = index;
  tm->ss = &t->bench[index];
  tm->cuda = s->sf->device_in_worker;
  tm->lend = tm->cuda && !(s->lend.tried && !s->lend.ipc);
  snprintf(tm->lid, sizeof tm->lid, "t%d", index);
  tm->kb = s->o->timing_method == KV_TIMING_KERNELBENCH;
  const char *lh = getenv("KEVO_TEST_LOADED_HOST_US");
  tm->test_loaded_ns = lh ? fmax(0, atof(lh)) * 1000.0 : 0;
  snprintf(r->timing.method, sizeof r->timing.method, "%s",
           kv_timing_method_name(s->o->timing_method));
  kv_sizeset_format(t, tm->ss, r->timing.sizes, sizeof r->timing.sizes);
  if (kv_layout(t, tm->ss, tm->nelem, err, errlen) < 0)
    return -1;
  kv_sample_layout(t, tm->nelem, tm->snelem);
  if (load_baseline(tm, base_so, err, errlen) < 0)
    return -1;
  /* cpu: the parent flushes 2x the last-level cache once per phase (cuda:
   * the worker flushes 2x its L2, once per phase). */
  tm->flush_bytes = tm->cuda ? 0 : 2 * kv_llc_bytes();
  if (assign_workers(tm, err, errlen) < 0)
    return -1;
  memcpy(sc->sides, order, sizeof order);
  sc->nsides = base_so ? 4 : 3;
  sc->has_base = base_so != NULL;
  sc->budget = s->o->time_budget_s > 0 ? s->o->time_budget_s : 1.0;
  sc->job = s->o->job_deadline_s > 0 ? s->o->job_deadline_s : 10;
  sc->stop = KV_TSTOP_GO;
  sc->m_mem = phase_calls(t, tm->nelem, tm->cuda);
  kv_shm_layout(t, tm->nelem, tm->off, &tm->per_call);
  tm->shm_len = shm_len; /* >= tm->per_call * m_mem */
  if (!tm->cuda) {
    tm->flush = tm->flush_bytes ? malloc(tm->flush_bytes) : NULL;
    tm->pristine = malloc(tm->shm_len);
    if ((tm->flush_bytes && !tm->flush) || !tm->pristine) {
      free(tm->flush);
      free(tm->pristine);
      return kv_error(err, errlen, "out of memory for timing (%zu bytes)", tm->shm_len);
    }
  }
  tm->threads = kv_fill_threads();
  return 0;
}

/* Warm-up: one phase of (up to) two calls on each side, which also prices a
 * call on the parent's clock, overheads (fresh inputs, flush) included; the
 * plan from those prices; then buffers for m calls on every side before
 * anything is timed. -1 to stop (sc->kevo_failed, or r's verdict, says). */
static int warm_up(struct timing *tm, struct sched *sc, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  const struct kv_gate_opts *o = tm->s->o;
  enum kv_call_status st;
  int m0 = sc->m_mem < 2 ? sc->m_mem : 2;
  for (int i = 0; i < sc->nsides; i++) {
    st = phase(tm, sc->sides[i], m0, 0, 0, sc->job * 6);
    if (st != KV_CALL_OK) {
      phase_failed(tm, sc->sides[i], st, err, errlen, &sc->kevo_failed);
      return -1;
    }
    if (r->verdict != KV_V_OK) /* work left running after its phase */
      return -1;
  }
  double per =
      fmax(tm->sd[SIDE_CAND].per_call + tm->sd[SIDE_CAND].fill_per_call, tm->sd[SIDE_REF].per_call);
  if (sc->has_base)
    per = fmax(per, tm->sd[SIDE_BASE].per_call);
  /* The count comes from kevo's clock (kevo/timeci.h): on a fixed budget P
   * rounds of m calls; adaptive, at most P and at least pl.min_rounds. */
  sc->target = o->timing_ci > 0 ? fmin(o->timing_ci, 1.0) : 0;
  kv_timing_plan(per, sc->budget, sc->m_mem, sc->target, &sc->pl);
  sc->m = tm->kb ? 1 : sc->pl.m;
  sc->P = tm->kb ? KV_KB_TRIALS : sc->pl.rounds;
  r->timing.phases = sc->P;
  r->timing.calls_per_phase = sc->m;
  r->timing.ci_target = sc->target;
  r->timing.min_phases = sc->pl.min_rounds;
  r->timing.max_phases = sc->P;
  /* Buffers for m calls on every side before anything is timed. */
  for (int i = 0; i < sc->nsides; i++) {
    st = phase(tm, sc->sides[i], sc->m, 0, 1, sc->job * 6);
    if (st != KV_CALL_OK) {
      phase_failed(tm, sc->sides[i], st, err, errlen, &sc->kevo_failed);
      return -1;
    }
  }
  return 0;
}

/* Before the loop: the validation rates, the stopping rule's per-round
 * figures, the loop's deadline; the warm-up's end recorded. -1 when out of
 * memory (sc->kevo_failed set). */
static int loop_prepare(struct timing *tm, struct sched *sc, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  /* About TARGET_VALIDATIONS checked calls (fewer for outputs of many
   * bytes: each one's sample travels and is compared). */
  double out_bytes = (double)kv_call_bytes(tm->s->t, tm->snelem, 0);
  double want = fmax(2, fmin(TARGET_VALIDATIONS, (double)(256u << 20) / (out_bytes + 1)));
  /* Adaptive: the rate gives about `want` by the fewest rounds; past them,
   * the fixed budget's rate (about `want` over the most rounds), so a loop
   * that runs to its most validates about twice `want`, not P / min_rounds
   * times it (on an H100, 30 validations of a 128 MiB output made timing
   * take 17 s where the fixed budget took 3 s). No call is ever less likely
   * to be checked than on the fixed budget. The calls are drawn after each
   * phase either way. */
  sc->q_first = fmin(1.0, want / sc->pl.valid_calls);
  sc->q_rest = fmin(1.0, want / ((double)sc->P * sc->m));
  /* Per round: the speedup as reported and the candidate's time per call by
   * kevo's clock (the stopping rule's figures). */
  tm->rratio = calloc((size_t)sc->P, sizeof(double));
  tm->rclock = calloc((size_t)sc->P, sizeof(double));
  if (!tm->rratio || !tm->rclock) {
    sc->kevo_failed = kv_error(err, errlen, "out of memory") < 0;
    return -1;
  }
  /* The loop's deadline (adaptive): three times what the warm-up's prices
   * say the most rounds take; past it, the loop stops once it has the
   * fewest rounds (each phase has its own deadline too). */
  double round_ns = 0;
  for (int k = 0; k < sc->nsides; k++)
    round_ns += sc->m * (tm->sd[sc->sides[k]].per_call + tm->sd[sc->sides[k]].fill_per_call);
  sc->loop_dl = 3.0 * sc->P * round_ns * 1e-9 + sc->job;
  sc->loop_t0 = kv_now_ns();
  r->timing.stage_warmup_s = kv_now_s() - sc->t_warm;
  kv_gate_mark(r, "warm_up");
  return 0;
}

/* After the candidate's timed phase of round j: its inputs checked (cpu),
 * then which of its calls to validate, drawn now that the phase is over.
 * -1 when kevo failed (sc->kevo_failed set). */
static int check_cand_phase(struct timing *tm, struct sched *sc, int j, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  int m = sc->m;
  if (!tm->cuda)
    check_inputs(tm, m);
  for (int c = 0; c < m && r->verdict == KV_V_OK; c++) {
    int last = !sc->target && j == sc->P - 1 && c == m - 1 && tm->validated == 0;
    if (last || rand01() < (j < sc->pl.min_rounds ? sc->q_first : sc->q_rest)) {
      if (validate(tm, c, sc->job * 6, err, errlen) < 0) {
        sc->kevo_failed = 1;
        return -1;
      }
    }
  }
  return 0;
}

/* The interleaved loop: rounds of one timed phase per side, ABBA, until the
 * plan's rounds ran, the stopping rule says so, or a verdict. -1 to stop
 * (sc->kevo_failed, or r's verdict, says). */
static int interleave(struct timing *tm, struct sched *sc, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  struct side *C = &tm->sd[SIDE_CAND], *R = &tm->sd[SIDE_REF], *EI = &tm->sd[SIDE_EMPTY];
  int m = sc->m, nsides = sc->nsides;
  for (int j = 0; j < sc->P && r->verdict == KV_V_OK && sc->stop == KV_TSTOP_GO; j++) {
    for (int k = 0; k < nsides && r->verdict == KV_V_OK; k++) {
      int side = sc->sides[j % 2 ? nsides - 1 - k : k]; /* ABBA */
      double dl = sc->job + 4.0 * m * tm->sd[side].per_call * 1e-9;
      enum kv_call_status st = phase(tm, side, m, 1, 0, dl);
      if (st != KV_CALL_OK) {
        phase_failed(tm, side, st, err, errlen, &sc->kevo_failed);
        return -1;
      }
      if (side == SIDE_CAND && check_cand_phase(tm, sc, j, err, errlen) < 0)
        return -1;
    }
    if (r->verdict != KV_V_OK)
      break;
    sc->rounds = j + 1;
    double cm = median_ns(C->ev + j * m, m);
    tm->rratio[j] = cm > 0 ? median_ns(R->ev + j * m, m) / cm : 0;
    tm->rclock[j] = (C->wall[j] - median_ns(EI->wall, EI->nph)) / m;
    sc->stop = kv_timing_decide(&sc->pl, sc->target, tm->rratio, tm->rclock, sc->rounds,
                                (double)(kv_now_ns() - sc->loop_t0) * 1e-9,
                                sc->target ? sc->loop_dl : 0, NULL, NULL);
  }
  kv_gate_mark(r, "loop");
  return 0;
}

/* After the loop: the validations still owed, the loop's figures recorded.
 * -1 to stop (sc->kevo_failed, or r's verdict, says). */
static int finish_loop(struct timing *tm, struct sched *sc, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  int m = sc->m;
  /* Adaptive: at least one validated call, drawn from the candidate's last
   * phase now that the loop is over (its buffers still hold it). */
  if (r->verdict == KV_V_OK && sc->target && tm->validated == 0) {
    if (tm->cuda && !tm->lend)
      only(tm, SIDE_CAND); /* the fetch goes through its worker */
    int c = (int)(rand01() * m);
    if (validate(tm, c < m ? c : m - 1, sc->job * 6, err, errlen) < 0) {
      sc->kevo_failed = 1;
      return -1;
    }
  }
  /* cuda: the reference's answers to the validated calls. The candidate's
   * part is over: its process is killed now, so that its exit (a GPU
   * context's teardown) overlaps them; the phases alone wait for it below. */
  if (r->verdict == KV_V_OK && tm->npend) {
    double tv = kv_now_s();
    kv_worker_kill(&tm->s->cw);
    int jr = judge_pending(tm, sc->job * 6, err, errlen);
    tm->validate_s += kv_now_s() - tv;
    if (jr < 0) {
      sc->kevo_failed = 1;
      return -1;
    }
    kv_gate_mark(r, "validated");
  }
  if (r->verdict != KV_V_OK)
    return -1;
  sc->P = sc->rounds;
  r->timing.phases = sc->P;
  r->timing.stage_validate_s = tm->validate_s;
  r->timing.stage_loop_s = (double)(kv_now_ns() - sc->loop_t0) * 1e-9 - tm->validate_s;
  snprintf(r->timing.stop, sizeof r->timing.stop, "%s", kv_timing_stop_name(sc->stop));
  r->timing.validated_calls = tm->validated;
  return 0;
}

/* The candidate's process goes (and with it any GPU work it left running:
 * stopping a process does not stop its kernels). The reference and the
 * empty entry alone give the baselines that the interleaved times must
 * agree with, and the empty entry alone prices kevo's overhead. -1 to stop
 * (sc->kevo_failed, or r's verdict, says). */
static int alone_phases(struct timing *tm, struct sched *sc, char *err, size_t errlen) {
  struct kv_gate_result *r = tm->r;
  int m = sc->m;
  double t_alone = kv_now_s();
  kv_session_stop_candidate(tm->s, r);
  kv_gate_mark(r, "candidate_stopped");
  int PB = sc->P / 2 > 2 ? sc->P / 2 : 2;
  for (int j = 0; j < 2 * PB; j++) {
    int side = (j % 2) ^ ((j / 2) % 2) ? SIDE_EMPTY_ALONE : SIDE_ALONE; /* ABBA */
    double dl =
        sc->job + 4.0 * m * tm->sd[side == SIDE_ALONE ? SIDE_REF : SIDE_EMPTY].per_call * 1e-9;
    enum kv_call_status st = phase(tm, side, m, 1, 0, dl);
    if (st != KV_CALL_OK) {
      phase_failed(tm, side, st, err, errlen, &sc->kevo_failed);
      return -1;
    }
  }
  r->timing.stage_alone_s = kv_now_s() - t_alone;
  kv_gate_mark(r, "alone");
  return 0;
}

/* time_size's phases in order: the warm-up, then KernelBench's blocks, or
 * the interleaved loop, the phases alone and the times judged. Where it
 * stops early, sc->kevo_failed, or r's verdict, says why. */
static void timed_phases(struct timing *tm, struct sched *sc, const struct kv_calib *cal, char *err,
                         size_t errlen) {
  struct kv_gate_result *r = tm->r;
  sc->t_warm = kv_now_s();
  if (warm_up(tm, sc, err, errlen) < 0)
    return;
  if (tm->kb) {
    r->timing.stage_warmup_s = kv_now_s() - sc->t_warm;
    kv_gate_mark(r, "warm_up");
    if (kb_time(tm, sc->sides, sc->nsides, sc->has_base, sc->job, cal, err, errlen) < 0)
      sc->kevo_failed = 1;
    return;
  }
  if (loop_prepare(tm, sc, err, errlen) < 0 || interleave(tm, sc, err, errlen) < 0 ||
      finish_loop(tm, sc, err, errlen) < 0 || alone_phases(tm, sc, err, errlen) < 0)
    return;
  if (judge_times(tm, sc->m, sc->P, sc->has_base, cal, err, errlen) < 0)
    sc->kevo_failed = 1;
}

/* The candidate at bench size `index` into r->timing (its verdict into r).
 * base_so: the baseline, timed too, in the reference worker's slot 2 (loaded
 * there unless s->rw_slot2 says it is). */
static int time_size(struct kv_session *s, int index, const char *base_so, size_t shm_len,
                     const struct kv_calib *cal, struct kv_gate_result *r, char *err,
                     size_t errlen) {
  struct timing tm;
  struct sched sc;
  if (timing_setup(&tm, &sc, s, index, base_so, shm_len, r, err, errlen) < 0)
    return -1;
  timed_phases(&tm, &sc, cal, err, errlen);
  kv_worker_resume(&s->cw);
  free(tm.flush);
  free(tm.pristine);
  free(tm.rratio);
  free(tm.rclock);
  for (int k = 0; k < tm.npend; k++)
    free(tm.pend[k].got);
  json_decref(tm.exported);
  for (int i = 0; i < NSIDES; i++)
    side_free(&tm.sd[i]);
  return sc.kevo_failed ? -1 : 0;
}

/* Every bench size in turn, each in a candidate process of its own (the
 * last one was stopped for the reference-alone phases, which must run with
 * nothing of the candidate alive). One size: r->timing is that size's. Several:
 * r->timing holds the first size's figures, with the speedup and its interval
 * the geometric means over the sizes, and each size's in r->timing.size[]. The
 * first size that fails decides the verdict (its figures in r->timing). */
int kv_time_candidate(struct kv_session *s, const char *base_so, const char *cand_so,
                      const struct kv_calib *cal, struct kv_gate_result *r, char *err,
                      size_t errlen) {
  const struct kv_task *t = s->t; /* nbench <= KV_MAX_BENCH: the task parser's rule */
  struct kv_size_timing sz[KV_MAX_BENCH];
  struct kv_timing first = {0};
  double lg = 0, llo = 0, lhi = 0;
  int blind = 0;
  size_t shm_len;
  if (shm_bytes(t, t->nbench, s->sf->device_in_worker, &shm_len, err, errlen) < 0)
    return -1;
  for (int i = 0; i < t->nbench; i++) {
    if (i > 0) {
      memset(&r->timing, 0, sizeof r->timing);
      char detail[1024];
      int lr = kv_session_start_worker(s, &s->cw, &s->cw_up, cand_so, detail, sizeof detail, err,
                                       errlen);
      if (lr < 0)
        return -1;
      if (lr > 0) {
        kv_set_verdict(r, KV_V_LOAD_ERROR,
                       "timing at a second size: the candidate does not load: %s", detail);
        return 0;
      }
    }
    if (time_size(s, i, base_so, shm_len, cal, r, err, errlen) < 0)
      return -1;
    if (r->verdict != KV_V_OK)
      return 0;
    const struct kv_timing *T = &r->timing;
    if (!(T->speedup > 0))
      return kv_error(err, errlen, "timing at %s gave no speedup", T->sizes);
    struct kv_size_timing *z = &sz[i];
    snprintf(z->sizes, sizeof z->sizes, "%s", T->sizes);
    z->cand_us = T->cand.median_us;
    z->ref_us = T->ref.median_us;
    z->speedup = T->speedup;
    z->lo = T->speedup_lo > 0 ? T->speedup_lo : T->speedup;
    z->hi = T->speedup_hi > 0 ? T->speedup_hi : T->speedup;
    z->stages_s = T->stage_warmup_s + T->stage_loop_s + T->stage_validate_s + T->stage_alone_s;
    blind |= T->clock_blind; /* any size's: said once */
    lg += log(z->speedup);
    llo += log(z->lo);
    lhi += log(z->hi);
    if (i == 0)
      first = *T;
  }
  if (t->nbench > 1) {
    first.nsizes = t->nbench;
    memcpy(first.size, sz, sizeof(sz[0]) * (size_t)t->nbench);
    first.speedup = exp(lg / t->nbench);
    first.speedup_lo = exp(llo / t->nbench);
    first.speedup_hi = exp(lhi / t->nbench);
  }
  first.clock_blind = blind;
  r->timing = first;
  return 0;
}
