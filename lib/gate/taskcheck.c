/* kevo task check: the reference runs on every check size, and the task is
 * well-posed: no trivial output passes its own tolerance. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/runtime.h"
#include "kevo/wire.h"

#define NSEEDS 2

static void finding(struct kv_task_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void finding(struct kv_task_report *r, const char *fmt, ...) {
  r->ok = 0;
  if (r->nfindings >= KV_TASK_MAX_FINDINGS)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->findings[r->nfindings++], sizeof r->findings[0], fmt, ap);
  va_end(ap);
}

/* A remark that does not reject the task ("warning: ..."). */
static void note(struct kv_task_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct kv_task_report *r, const char *fmt, ...) {
  if (r->nfindings >= KV_TASK_MAX_FINDINGS)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->findings[r->nfindings++], sizeof r->findings[0], fmt, ap);
  va_end(ap);
}

/* Reference outputs and inputs of one (check set, seed). */
struct sample {
  int set;
  uint64_t seed;
  int64_t nelem[KV_MAX_PARAMS];
  uint8_t *out[KV_MAX_PARAMS]; /* per output param */
  uint8_t *in[KV_MAX_PARAMS];  /* per input param, regenerated here */
};

static void store_double(enum kv_dtype d, void *buf, size_t i, double v) {
  switch (d) {
  case KV_F32:
    ((float *)buf)[i] = (float)v;
    break;
  case KV_F64:
    ((double *)buf)[i] = v;
    break;
  case KV_F16:
    ((uint16_t *)buf)[i] = kv_f32_to_f16((float)v);
    break;
  case KV_BF16:
    ((uint16_t *)buf)[i] = kv_f32_to_bf16((float)v);
    break;
  case KV_I32:
    ((int32_t *)buf)[i] = (int32_t)llround(v);
    break;
  case KV_I64:
    ((int64_t *)buf)[i] = (int64_t)llround(v);
    break;
  case KV_U8:
    ((uint8_t *)buf)[i] = (uint8_t)llround(v);
    break;
  default:
    break;
  }
}

/* The mean of output p over every element of the draws at sample k's check
 * size (samples come NSEEDS to a size): a constant that knows the size but
 * not the inputs. */
static double size_mean(const struct kv_task *t, const struct sample *sm, int ns, int k, int p) {
  double sum = 0, cnt = 0;
  for (int j = k - k % NSEEDS; j < ns && j < k - k % NSEEDS + NSEEDS; j++) {
    size_t n = (size_t)sm[j].nelem[p];
    for (size_t i = 0; i < n; i++)
      sum += kv_elem_as_double(t->params[p].dtype, sm[j].out[p], i);
    cnt += (double)n;
  }
  return cnt > 0 ? sum / cnt : 0;
}

/* Does a trivial output (kind 0: zeros, 1: one constant per check size, the
 * mean of the true outputs over the draws there, 2: a copy of input `src`)
 * pass every check? A constant per draw would be the output itself when it
 * has one element (a total, a loss): the constant must not know the inputs. */
static int trivial_passes(const struct kv_task *t, struct sample *sm, int ns, int kind, int src) {
  for (int k = 0; k < ns; k++) {
    struct sample *x = &sm[k];
    const struct kv_sizeset *ss = &t->check[x->set];
    for (int p = 0; p < t->nparams; p++) {
      if (!kv_is_output(t->params[p].role))
        continue;
      enum kv_dtype d = t->params[p].dtype;
      size_t n = (size_t)x->nelem[p], sz = kv_dtype_size(d);
      uint8_t *fake = calloc(n ? n : 1, sz);
      if (!fake)
        return 0;
      if (kind == 1) {
        double mean = size_mean(t, sm, ns, k, p);
        for (size_t i = 0; i < n; i++)
          store_double(d, fake, i, mean);
      } else if (kind == 2) {
        size_t m = (size_t)x->nelem[src];
        for (size_t i = 0; i < n && i < m; i++)
          store_double(d, fake, i, kv_elem_as_double(t->params[src].dtype, x->in[src], i));
      }
      struct kv_cmp c;
      kv_compare(t, ss, p, x->out[p], fake, (int64_t)n, -1, &c);
      free(fake);
      if (c.verdict != KV_V_OK)
        return 0;
    }
  }
  return 1;
}

/* What a reference that answers differently on the same inputs is told: the
 * fix is in the reference, never in the tolerance. */
#define NONDET_FIX                                                                                 \
  "it is not deterministic (training-mode Dropout, an unseeded or time-seeded random draw, "       \
  "state kept between calls?), so no tolerance makes it a judge: seed its random draws and "       \
  "keep no state between calls"

/* How much of a comparison's detail names the first difference ("y[0]:
 * expected 1.5, got 1.25"), less the tolerance's arithmetic and the count. */
static int first_difference(const char *detail) {
  int n = (int)strcspn(detail, "(;");
  while (n > 0 && detail[n - 1] == ' ')
    n--;
  return n < 160 ? n : 160;
}

/* Two calls of the reference on the same inputs (check size 0, one seed)
 * in one job: outputs that differ beyond the tolerance make a finding.
 * Returns 1 when they differ. */
static int same_inputs_twice(const struct kv_task *t, struct kv_worker *w, uint64_t seed,
                             double deadline, struct kv_task_report *r) {
  const struct kv_sizeset *ss = &t->check[0];
  int64_t nelem[KV_MAX_PARAMS];
  char e[512], d[1024], sizes[256];
  if (kv_layout(t, ss, nelem, e, sizeof e) < 0)
    return 0;
  size_t ob = kv_call_bytes(t, nelem, 0);
  json_t *req = json_pack("{s:i,s:s,s:i,s:[{s:I,s:i},{s:I,s:i}],s:b}", "slot", 0, "set", "check",
                          "index", 0, "calls", "seed", (json_int_t)seed, "poison", 0, "seed",
                          (json_int_t)seed, "poison", 1, "return_inputs", 0);
  json_t *rep = NULL;
  uint8_t *blob = NULL;
  kv_sizeset_format(t, ss, sizes, sizeof sizes);
  enum kv_call_status st =
      kv_worker_call(w, KV_MSG_CHECK, req, deadline, &rep, &blob, 2 * ob, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  r->ncalls += 2;
  if (st != KV_CALL_OK) {
    finding(r, "the reference fails at %s: %s", sizes, d);
    return 0;
  }
  size_t off = 0;
  int differs = 0;
  for (int p = 0; p < t->nparams && !differs; p++) {
    if (!kv_is_output(t->params[p].role))
      continue;
    struct kv_cmp c;
    kv_compare(t, ss, p, blob + off, blob + ob + off, nelem[p], -1, &c);
    if (c.verdict != KV_V_OK) {
      finding(r,
              "ill-posed: the reference itself gives different answers on the same inputs (two "
              "calls at %s: %.*s); " NONDET_FIX,
              sizes, first_difference(c.detail), c.detail);
      differs = 1;
    }
    off += kv_param_bytes(t, p, nelem);
  }
  free(blob);
  return differs;
}

/* One call in `slot` on check sample x's seed: its outputs into *blob
 * (malloc'd). */
static enum kv_call_status call_sample(const struct kv_task *t, struct kv_worker *w, int slot,
                                       const struct sample *x, double deadline, uint8_t **blob,
                                       char *d, size_t dcap) {
  json_t *rep = NULL;
  json_t *req =
      json_pack("{s:i,s:s,s:i,s:[{s:I,s:i}],s:b}", "slot", slot, "set", "check", "index", x->set,
                "calls", "seed", (json_int_t)x->seed, "poison", 0, "return_inputs", 0);
  enum kv_call_status st = kv_worker_call(w, KV_MSG_CHECK, req, deadline, &rep, blob,
                                          kv_call_bytes(t, x->nelem, 0), d, dcap);
  json_decref(req);
  json_decref(rep);
  return st;
}

/* Does output blob (one call's outputs, back to back) match sample x's
 * within the tolerance? 1 yes, 0 no (c: the first difference). */
static int matches_sample(const struct kv_task *t, const struct sample *x, const uint8_t *blob,
                          struct kv_cmp *c) {
  size_t off = 0;
  for (int p = 0; p < t->nparams; p++) {
    if (!kv_is_output(t->params[p].role))
      continue;
    if (x->out[p]) {
      kv_compare(t, &t->check[x->set], p, x->out[p], blob + off, x->nelem[p], -1, c);
      if (c->verdict != KV_V_OK)
        return 0;
    }
    off += kv_param_bytes(t, p, x->nelem);
  }
  return 1;
}

/* The reference rebuilt with its sums free to be reordered, loaded in slot
 * 1 (b: its build): 0; -1 it does not build, -2 it does not load, -3 its
 * source or a scratch directory could not be had. */
static int load_reordered(const struct kv_task *t, const struct kv_gate_opts *o,
                          const struct kv_surface *sf, const char *refsrc, const char *cache,
                          const char *scratch, struct kv_worker *w, struct kv_build *b) {
  char *text = NULL, dir[PATH_MAX], path[PATH_MAX + 16], e[512], d[1024];
  size_t len = 0;
  memset(b, 0, sizeof *b);
  if (kv_read_file(refsrc, KV_SOURCE_MAX, &text, &len, e, sizeof e) < 0)
    return -3;
  if (kv_mkdtemp(scratch, "reorder", dir, sizeof dir, e, sizeof e) < 0) {
    free(text);
    return -3;
  }
  snprintf(path, sizeof path, "%s/reference.c", dir);
  struct kv_buf src;
  kv_buf_init(&src, len + 512);
  kv_buf_appendf(&src,
                 "#pragma GCC optimize(\"O3\", \"associative-math\", \"no-signed-zeros\", "
                 "\"no-trapping-math\")\n#line 1 \"%s\"\n",
                 refsrc);
  kv_buf_append(&src, text, len);
  free(text);
  int built = src.data && kv_write_file(path, src.data, src.len, e, sizeof e) == 0 &&
              sf->build(t, o, path, cache, o->compile_deadline_s, b, e, sizeof e) == 0 && b->ok;
  kv_buf_release(&src);
  kv_rmtree(dir);
  json_t *rep = NULL;
  enum kv_call_status st = KV_CALL_ERROR;
  if (built) {
    json_t *req = json_pack("{s:i,s:s}", "slot", 1, "path", b->so_path);
    st = kv_worker_call(w, KV_MSG_LOAD, req, 30, &rep, NULL, 0, d, sizeof d);
    json_decref(req);
    json_decref(rep);
  }
  if (st == KV_CALL_OK)
    return 0;
  kv_build_release(b);
  return built ? -2 : -1;
}

/* The tolerance against float rounding (cpu surface, gcc): the reference
 * rebuilt with its sums free to be reordered (-O3 -fassociative-math:
 * vectorized reductions, another order of the same additions), loaded in
 * slot 1 and called on the first seed of every check size. Where its outputs
 * fail the task's own tolerance, a correct candidate that sums in another
 * order fails it too: a warning with the difference found. Unless the
 * reference itself, called again on those inputs, no longer gives its first
 * answer: then it is not deterministic (state kept between calls), which no
 * tolerance fixes, and that is the finding. */
static void reordered_reference(const struct kv_task *t, const struct kv_gate_opts *o,
                                const struct kv_surface *sf, const char *refsrc, const char *cache,
                                const char *scratch, struct kv_worker *w, const struct sample *sm,
                                int have, struct kv_task_report *r) {
  if (sf->lang != KV_LANG_C || have < 1 || strstr(kv_cc_version(), "clang"))
    return;
  struct kv_build b;
  int lrc = load_reordered(t, o, sf, refsrc, cache, scratch, w, &b);
  if (lrc == -1 || lrc == -2)
    note(r,
         "note: the tolerance was not tried against a reordered sum (the reference built "
         "with -fassociative-math %s)",
         lrc == -2 ? "does not load" : "does not build");
  if (lrc < 0)
    return;
  char d[1024], sizes[256];
  for (int k = 0; k < have; k += NSEEDS) {
    uint8_t *blob = NULL, *again = NULL;
    struct kv_cmp c, c2;
    enum kv_call_status st = call_sample(t, w, 1, &sm[k], o->job_deadline_s, &blob, d, sizeof d);
    r->ncalls++;
    int bad = st == KV_CALL_OK && !matches_sample(t, &sm[k], blob, &c);
    free(blob);
    if (!bad)
      continue;
    kv_sizeset_format(t, &t->check[sm[k].set], sizes, sizeof sizes);
    st = call_sample(t, w, 0, &sm[k], o->job_deadline_s, &again, d, sizeof d);
    r->ncalls++;
    if (st == KV_CALL_OK && !matches_sample(t, &sm[k], again, &c2))
      finding(r,
              "ill-posed: the reference itself gives different answers on the same inputs "
              "(called again at %s: %.*s); " NONDET_FIX,
              sizes, first_difference(c2.detail), c2.detail);
    else
      note(r,
           "warning: the tolerance (atol %g, rtol %g) is tighter than float rounding: the "
           "reference with its sums reordered (gcc -O3 -fassociative-math) fails it at %s: "
           "%.300s; a correct candidate that adds in another order (vectors, a tree, "
           "threads) fails the same way; loosen \"tolerance\" in task.json (max |diff| "
           "here %.3g)",
           t->atol, t->rtol, sizes, c.detail, c.max_abs);
    free(again);
    break;
  }
  kv_build_release(&b);
}

/* Sample x (check size i, the j-th seed of its job) from the job's output
 * blob: its outputs copied (a reference that leaves one unwritten is
 * broken) and its inputs regenerated here. */
static void keep_sample(const struct kv_task *t, int i, int j, uint64_t seed, const int64_t *nelem,
                        const uint8_t *blob, size_t ob, const char *sizes, struct sample *x,
                        struct kv_task_report *r) {
  const struct kv_sizeset *ss = &t->check[i];
  x->set = i;
  x->seed = seed;
  memcpy(x->nelem, nelem, sizeof x->nelem);
  size_t off = (size_t)j * ob;
  for (int p = 0; p < t->nparams; p++) {
    size_t bytes = kv_param_bytes(t, p, nelem);
    if (kv_is_output(t->params[p].role)) {
      x->out[p] = malloc(bytes ? bytes : 1);
      if (x->out[p])
        memcpy(x->out[p], blob + off, bytes);
      off += bytes;
      for (int64_t e = 0; x->out[p] && e < nelem[p] && t->params[p].role == KV_ROLE_OUT; e++) {
        if (kv_is_poison(t->params[p].dtype, x->out[p], (size_t)e, j & 1)) {
          char where[160];
          kv_format_index(t, ss, p, e, where, sizeof where);
          finding(r, "the reference never writes %s at %s", where, sizes);
          break;
        }
      }
    }
    if (t->params[p].role == KV_ROLE_IN) {
      x->in[p] = malloc(bytes ? bytes : 1);
      if (x->in[p])
        kv_fill_param(t, p, nelem[p], x->in[p], seed);
    }
  }
}

/* The reference at every check size with NSEEDS seeds (one job per size):
 * the samples into sm (*have of them). 0, or -1 with err; a reference that
 * fails is a finding. */
static int sample_check_sizes(const struct kv_task *t, const struct kv_gate_opts *o,
                              struct kv_worker *w, uint64_t base, struct sample *sm, int *have,
                              struct kv_task_report *r, char *err, size_t errlen) {
  char d[1024], sizes[256];
  for (int i = 0; i < t->ncheck && r->ok; i++) {
    const struct kv_sizeset *ss = &t->check[i];
    int64_t nelem[KV_MAX_PARAMS];
    if (kv_layout(t, ss, nelem, err, errlen) < 0)
      return -1;
    size_t ob = kv_call_bytes(t, nelem, 0);
    json_t *calls = json_array(), *rep = NULL;
    uint64_t seeds[NSEEDS];
    for (int j = 0; j < NSEEDS; j++) {
      seeds[j] = base + (uint64_t)i * 1000 + (uint64_t)j;
      json_array_append_new(calls,
                            json_pack("{s:I,s:i}", "seed", (json_int_t)seeds[j], "poison", j & 1));
    }
    json_t *req = json_pack("{s:i,s:s,s:i,s:o,s:b}", "slot", 0, "set", "check", "index", i, "calls",
                            calls, "return_inputs", 0);
    uint8_t *blob = NULL;
    kv_sizeset_format(t, ss, sizes, sizeof sizes);
    enum kv_call_status st = kv_worker_call(w, KV_MSG_CHECK, req, o->job_deadline_s, &rep, &blob,
                                            ob * NSEEDS, d, sizeof d);
    json_decref(req);
    json_decref(rep);
    r->ncalls += NSEEDS;
    if (st != KV_CALL_OK) {
      finding(r, "the reference fails at %s: %s", sizes, d);
      free(blob);
      break;
    }
    for (int j = 0; j < NSEEDS; j++)
      keep_sample(t, i, j, seeds[j], nelem, blob, ob, sizes, &sm[(*have)++], r);
    free(blob);
  }
  return 0;
}

/* Outputs must depend on the inputs, size by size: a size whose two seeds
 * give the same outputs (softmax of one element is always 1) checks only
 * that a candidate handles it, not what it computes there. No size that
 * does: ill-posed; some that do not: named in a warning. */
static void degenerate_sizes(const struct kv_task *t, const struct sample *sm, int have,
                             struct kv_task_report *r) {
  int live = 0, dead = 0;
  char dead_sizes[400] = "";
  for (int k = 0; k + 1 < have; k += NSEEDS) {
    int differs = 0;
    for (int p = 0; p < t->nparams && !differs; p++)
      if (kv_is_output(t->params[p].role) && sm[k].out[p] && sm[k + 1].out[p] &&
          memcmp(sm[k].out[p], sm[k + 1].out[p], kv_param_bytes(t, p, sm[k].nelem)) != 0)
        differs = 1;
    if (differs) {
      live++;
      continue;
    }
    char sizes[256];
    size_t at = strlen(dead_sizes);
    kv_sizeset_format(t, &t->check[sm[k].set], sizes, sizeof sizes);
    snprintf(dead_sizes + at, sizeof dead_sizes - at, "%s%s (check size %d)", dead++ ? ", " : "",
             sizes, sm[k].set + 1);
  }
  if (!live)
    finding(r, "ill-posed: the reference output does not change when the inputs change");
  else if (dead)
    note(r,
         "warning: degenerate check size%s: %s: the reference output does not change when "
         "the inputs change there, so %s only that a candidate handles %s; the other sizes "
         "judge what it computes",
         dead > 1 ? "s" : "", dead_sizes, dead > 1 ? "they check" : "it checks",
         dead > 1 ? "them" : "it");
}

/* Ill-posed: zeros, a constant that ignores the inputs or a copy of an input
 * passes every check, or the outputs ignore the inputs. */
static void ill_posed(const struct kv_task *t, struct sample *sm, int have,
                      struct kv_task_report *r) {
  if (trivial_passes(t, sm, have, 0, 0))
    finding(r,
            "ill-posed: an output of all zeros passes every check; make the outputs larger "
            "than the tolerance (atol %g) or tighten it",
            t->atol);
  else if (trivial_passes(t, sm, have, 1, 0))
    finding(r,
            "ill-posed: a constant output that ignores the inputs (one per check size: "
            "the mean of the reference's outputs over two fresh draws there) passes every "
            "check; the outputs vary less than the tolerance (atol %g, rtol %g) between "
            "draws at every check size: tighten it, or add check sizes or inputs whose "
            "outputs vary more",
            t->atol, t->rtol);
  for (int p = 0; p < t->nparams; p++) {
    if (t->params[p].role != KV_ROLE_IN || !sm[0].in[p])
      continue;
    if (trivial_passes(t, sm, have, 2, p))
      finding(r,
              "ill-posed: a copy of input '%s' passes every check; the operator must change "
              "its input more than the tolerance allows",
              t->params[p].name);
  }
  degenerate_sizes(t, sm, have, r);
}

/* One reference call at the bench size, to show what timing will cost:
 * timed, so on the device alone (no evaluation times on it meanwhile). 0,
 * or -1 with err. */
static int bench_call(const struct kv_task *t, const struct kv_gate_opts *o,
                      const struct kv_surface *sf, struct kv_worker *w, uint64_t base,
                      struct kv_task_report *r, char *err, size_t errlen) {
  int64_t nelem[KV_MAX_PARAMS];
  if (t->nbench < 1 || kv_layout(t, &t->bench[0], nelem, err, errlen) < 0)
    return 0; /* no bench size to call it on: not measured */
  struct kv_devlock lock;
  char what[300], d[1024];
  snprintf(what, sizeof what, "timing task %s's reference", t->name ? t->name : "");
  if (kv_gate_lock_device(sf, o, w->hello, what, &lock, err, errlen) < 0)
    return -1;
  size_t ob = kv_call_bytes(t, nelem, 0);
  json_t *rep = NULL;
  json_t *req = json_pack("{s:i,s:s,s:i,s:[{s:I,s:i}],s:b}", "slot", 0, "set", "bench", "index", 0,
                          "calls", "seed", (json_int_t)base, "poison", 0, "return_inputs", 0);
  uint8_t *blob = NULL;
  enum kv_call_status st =
      kv_worker_call(w, KV_MSG_CHECK, req, o->job_deadline_s * 6, &rep, &blob, ob, d, sizeof d);
  json_decref(req);
  if (st == KV_CALL_OK)
    r->bench_ref_ms =
        (double)json_integer_value(json_array_get(json_object_get(rep, "call_ns"), 0)) / 1e6;
  else
    finding(r, "the reference fails at the bench size: %s", d);
  kv_devlock_release(&lock);
  json_decref(rep);
  free(blob);
  r->ncalls++;
  return 0;
}

/* The reference built (or, imported, named: reference.py is loaded as it
 * is) into b. 0, or -1 with err; b->ok 0 when it does not compile. */
static int build_reference(const struct kv_task *t, const struct kv_gate_opts *o,
                           struct kv_session *s, const char *refsrc, struct kv_build *b, char *err,
                           size_t errlen) {
  memset(b, 0, sizeof *b);
  if (!kv_path_exists(refsrc))
    return kv_error(err, errlen,
                    "%s: not found; the %s surface needs the task's ground truth there", refsrc,
                    s->sf->name);
  if (s->torch) {
    b->ok = 1;
    snprintf(b->so_path, sizeof b->so_path, "%s", refsrc);
    return 0;
  }
  return s->sf->build(t, o, refsrc, s->cache, o->compile_deadline_s, b, err, errlen) < 0 ? -1 : 0;
}

/* The checks once the reference is loaded in the session's worker. */
static int check_loaded(const struct kv_task *t, const struct kv_gate_opts *o, struct kv_session *s,
                        const char *refsrc, struct kv_task_report *r, char *err, size_t errlen) {
  struct kv_worker *w = &s->rw;
  int ns = t->ncheck * NSEEDS, have = 0, rc = 0;
  struct sample *sm = calloc((size_t)(ns ? ns : 1), sizeof *sm);
  if (!sm)
    return kv_error(err, errlen, "out of memory");
  uint64_t base = o->seed ? o->seed : 0x6b65766fu;
  rc = sample_check_sizes(t, o, w, base, sm, &have, r, err, errlen);
  if (r->ok && rc == 0) {
    ill_posed(t, sm, have, r);
    /* The same inputs twice must give the same outputs (within tolerance):
     * a reference with randomness inside (training-mode Dropout, an unseeded
     * RNG) cannot judge anything, and its reordered sums would differ for
     * that reason, not for rounding. */
    int nondet = have > 0 && same_inputs_twice(t, w, base, o->job_deadline_s, r);
    if (!s->torch && !nondet)
      reordered_reference(t, o, s->sf, refsrc, s->cache, s->scratch, w, sm, have, r);
  }
  if (r->ok && rc == 0)
    rc = bench_call(t, o, s->sf, w, base, r, err, errlen);
  for (int k = 0; k < have; k++)
    for (int p = 0; p < KV_MAX_PARAMS; p++) {
      free(sm[k].out[p]);
      free(sm[k].in[p]);
    }
  free(sm);
  return rc;
}

int kv_task_check(const struct kv_task *t, const struct kv_gate_opts *o, struct kv_task_report *r,
                  char *err, size_t errlen) {
  memset(r, 0, sizeof(*r));
  r->ok = 1;
  r->bench_ref_ms = -1;
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  /* The gate's evaluation session (kevo/gate.h's kv_gate_eval uses the
   * same): directories, worker path, the reference's worker. */
  struct kv_session s;
  if (kv_session_init(&s, t, o, err, errlen) < 0)
    return -1;
  char desc[512];
  if (s.sf->prepare(o, desc, sizeof desc, err, errlen) < 0)
    return -1;
  char refsrc[PATH_MAX];
  snprintf(refsrc, sizeof refsrc, "%s/%s", t->dir && *t->dir ? t->dir : ".", s.sf->reference);
  /* An imported task: reference.py runs in the torch reference worker,
   * loaded as it is (nothing to compile). */
  s.torch = s.sf->lang == KV_LANG_PYTHON ? kv_torch_surface_reference(t, refsrc, sizeof refsrc)
                                         : kv_torch_reference(t, refsrc, sizeof refsrc);
  if (s.torch && kv_torch_worker_paths(s.worker_path, &s.tp, err, errlen) < 0)
    return -1;
  struct kv_build b;
  if (build_reference(t, o, &s, refsrc, &b, err, errlen) < 0)
    return -1;
  r->compile_s = b.seconds;
  r->compile_log = b.log;
  b.log = NULL;
  int rc = 0;
  char d[1024];
  if (!b.ok) {
    finding(r, "%s does not compile (see the log)", refsrc);
  } else if (kv_session_worker_up(&s, &s.rw, &s.rw_up, err, errlen) < 0) {
    rc = -1;
  } else if (kv_session_load(&s.rw, 0, b.so_path, d, sizeof d) != 0) {
    finding(r, "%s does not load: %s", refsrc, d);
  } else {
    rc = check_loaded(t, o, &s, refsrc, r, err, errlen);
  }
  kv_session_release(&s);
  kv_build_release(&b);
  return rc;
}

void kv_task_report_release(struct kv_task_report *r) {
  free(r->compile_log);
  r->compile_log = NULL;
}
