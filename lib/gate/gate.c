/* kv_gate_eval: compile, check, time, decide. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "toolrun.h"
#include "kevo/runtime.h"
#include "kevo/wire.h"

#define IMPLAUSIBLE_FACTOR 2.0

/* The SHA-256 of a file's contents ("" when it cannot be read). */
static void content_hash(const char *path, char out[65]) {
  char *text = NULL, e[256];
  size_t len = 0;
  out[0] = 0;
  if (path[0] && kv_read_file(path, 64u << 20, &text, &len, e, sizeof e) == 0)
    kv_sha256_hex(text, len, out);
  free(text);
}

/* What a warm reference worker must have been started for (the surface,
 * worker, cache, sandbox, task, the reference's and the baseline's sources
 * by content) and what a warm candidate worker must have been spawned with. */
static void warm_keys(const struct kv_session *s, const char *refsrc, const char *basesrc,
                      char ref_key[65], char cand_key[65]) {
  char rh[65], bh[65];
  content_hash(refsrc, rh);
  content_hash(basesrc, bh);
  struct kv_buf b;
  kv_buf_init(&b, 1u << 24);
  kv_buf_appendf(&b, "%s|%s|%s|%s|%s|%d|", s->sf->name, s->worker_path, s->objdir, s->scratch,
                 s->o->torch_compile ? s->o->torch_compile : "", s->o->sandbox);
  kv_sha256_hex(b.data, b.len, cand_key);
  kv_buf_appendf(&b, "%s|%s|%s|%s|%s", refsrc, rh, basesrc, bh, s->t->json ? s->t->json : "");
  kv_sha256_hex(b.data, b.len, ref_key);
  kv_buf_release(&b);
}

/* Workers started on threads while the compile pool runs (cuda: cuInit and
 * a context take about as long as a compilation). */
struct up_job {
  struct kv_session *s;
  struct kv_worker *w;
  int *up;
  int rc, started, warm;
  double ready_s; /* kv_now_s() when it was ready (or failed) */
  pthread_t th;
  char err[1024];
};

static void *up_main(void *arg) {
  struct up_job *j = arg;
  j->rc = j->warm ? kv_session_worker_up(j->s, j->w, j->up, j->err, sizeof j->err)
                  : kv_session_worker_ready(j->s, j->w, j->up, j->err, sizeof j->err);
  j->ready_s = kv_now_s();
  return NULL;
}

/* Spawned here (the evaluation's thread, which outlives the worker; the
 * short-lived thread only waits for it to be ready). */
static void up_start(struct up_job *j) {
  j->started = 0;
  /* (a warm candidate worker is spawned already: up_main readies it) */
  j->warm = j->w == &j->s->cw && j->s->cw_fresh;
  j->rc = j->warm ? 0 : kv_session_worker_spawn(j->s, j->w, j->up, j->err, sizeof j->err);
  if (j->rc < 0)
    return;
  j->rc = -1;
  j->started = pthread_create(&j->th, NULL, up_main, j) == 0;
  if (!j->started)
    up_main(j);
}

static void up_join(struct up_job *j) {
  if (j->started)
    pthread_join(j->th, NULL);
  j->started = 0;
}

/* The candidate's static analysis (cuobjdump -sass takes 0.6 s of CPU on
 * its own), on a thread beside the checks and timing: it never decides the
 * verdict, so it is kept off the verdict's path. Only the analysis writes
 * the build's kernels, static fields and listing until an_join. */
struct an_job {
  const struct kv_surface *sf;
  struct kv_build *b;
  const char *cache_dir;
  const struct kv_gate_opts *o;
  int ran, started;
  pthread_t th;
};

static void *an_main(void *arg) {
  struct an_job *a = arg;
  a->sf->analyze(a->b, a->o, a->cache_dir, 30);
  return NULL;
}

static void an_start(struct an_job *a) {
  a->ran = 1;
  a->started = pthread_create(&a->th, NULL, an_main, a) == 0;
  if (!a->started)
    an_main(a);
}

static void an_join(struct an_job *a) {
  if (a->started)
    pthread_join(a->th, NULL);
  a->started = 0;
}

/* The ceilings of a cuda device: from the cache, else measured by worker w
 * (before any candidate is loaded into it) and saved. */
static int device_calib(struct kv_session *s, struct kv_worker *w, int force, struct kv_calib *c,
                        int *measured, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  *measured = 0;
  const char *dev = json_string_value(json_object_get(kv_session_hello_cuda(w), "device"));
  if (!dev)
    return kv_error(err, errlen, "the worker did not name its device");
  char path[PATH_MAX + 32], e2[512];
  snprintf(path, sizeof path, "%s/calib-%s.json", s->cache, s->sf->name);
  if (!force && kv_calib_load(path, dev, c, e2, sizeof e2) == 0)
    return 0;
  /* Measured on the GPU alone: no evaluation times on it meanwhile. */
  struct kv_devlock lock;
  if (kv_gate_lock_device(s->sf, s->o, w->hello, "measuring the GPU's ceilings", &lock, err,
                          errlen) < 0)
    return -1;
  json_t *req = json_object(), *rep = NULL;
  char d[1024];
  enum kv_call_status st = kv_worker_call(w, KV_MSG_CALIB, req, 120, &rep, NULL, 0, d, sizeof d);
  kv_devlock_release(&lock);
  json_decref(req);
  if (st != KV_CALL_OK) {
    json_decref(rep);
    return kv_error(err, errlen, "measuring the device's ceilings failed: %s", d);
  }
  snprintf(c->device, sizeof c->device, "%s", dev);
  c->bandwidth_gbs = json_number_value(json_object_get(rep, "bandwidth_gbs"));
  c->fma_gflops = json_number_value(json_object_get(rep, "fma_gflops"));
  c->llc_bytes = (double)json_integer_value(json_object_get(rep, "l2_bytes"));
  c->threads = (int)json_integer_value(json_object_get(rep, "sms"));
  c->measured_unix = (long long)kv_unix_time();
  json_decref(rep);
  if (!(c->bandwidth_gbs > 0) || !isfinite(c->bandwidth_gbs) || !(c->fma_gflops > 0) ||
      !isfinite(c->fma_gflops) || c->threads < 1)
    return kv_error(err, errlen,
                    "the device's measured ceilings are implausible (%.3g GB/s, "
                    "%.3g GFLOP/s)",
                    c->bandwidth_gbs, c->fma_gflops);
  *measured = 1;
  kv_calib_save(path, c, e2, sizeof e2); /* a failed save only means measuring again */
  return 0;
}

/* "compiled for sm_80 but the GPU is sm_90" when the worker's device is not
 * the architecture the objects were built for. */
static int check_arch(struct kv_session *s, char *err, size_t errlen) {
  const char *dev_arch = json_string_value(json_object_get(kv_session_hello_cuda(&s->cw), "arch"));
  char built[32];
  if (!dev_arch || kv_cuda_arch(s->o, built, sizeof built, err, errlen) < 0)
    return dev_arch ? -1 : kv_error(err, errlen, "the worker did not name its GPU's architecture");
  size_t n = strlen(dev_arch);
  if (strncmp(built, dev_arch, n) != 0 || (built[n] && built[n] != 'a' && built[n] != 'f'))
    return kv_error(err, errlen,
                    "--surface cuda: the objects are built for %s but the GPU is %s; unset "
                    "KEVO_CUDA_ARCH (or set it to %s)",
                    built, dev_arch, dev_arch);
  return 0;
}

int kv_gate_prebuild(const struct kv_task *t, const char *const *paths, int n,
                     const struct kv_gate_opts *o, char *err, size_t errlen) {
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  if (n <= 0)
    return 0;
  struct kv_session s;
  if (kv_session_init(&s, t, o, err, errlen) < 0)
    return -1;
  char desc[512];
  struct kv_build_job *jobs = calloc((size_t)n, sizeof *jobs);
  if (!jobs || s.sf->prepare(o, desc, sizeof desc, err, errlen) < 0) {
    free(jobs);
    kv_session_release(&s);
    return jobs ? -1 : kv_error(err, errlen, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    jobs[i].t = t;
    jobs[i].src = paths[i];
    jobs[i].o = o;
    jobs[i].cache_dir = s.cache;
    jobs[i].deadline_s = o->compile_deadline_s;
    if (!o->prebuild_compile_only) /* off the evaluation's path too */
      jobs[i].analyze = s.sf->analyze;
  }
  kv_build_pool(s.sf->build, jobs, n);
  int built = 0, rc = 0;
  for (int i = 0; i < n; i++) {
    if (jobs[i].rc < 0 && rc == 0)
      rc = kv_error(err, errlen, "%s", jobs[i].err);
    else if (jobs[i].rc == 0)
      built++;
    kv_build_release(&jobs[i].b);
  }
  free(jobs);
  kv_session_release(&s);
  return rc < 0 ? rc : built;
}

/* One evaluation's state, shared by its stages (kv_gate_eval): the
 * session, the builds, the workers starting beside the compile, the
 * analysis, the warm keys and the sources' paths. */
struct eval {
  const struct kv_task *t;
  const char *candidate_path;
  const struct kv_gate_opts *o; /* the caller's, or defaults */
  struct kv_gate_result *r;
  char *err;
  size_t errlen;
  struct kv_gate_opts defaults;
  struct kv_session s;
  /* The caller's ceilings where they are of this surface's device; those
   * the verdict uses (given, or cal as measured); NULL: none. */
  const struct kv_calib *given, *calp;
  struct kv_calib cal;
  struct kv_build_job jobs[3]; /* the reference's, the candidate's, the baseline's */
  int njobs;
  struct up_job ups[2]; /* cuda: the reference's and the candidate's workers */
  struct an_job an;
  double up_wait; /* waited for the workers after the compile: correctness time */
  double t_check; /* when correctness began, less up_wait */
  char ref_key[65], cand_key[65];
  char refsrc[PATH_MAX], basesrc[PATH_MAX], desc[512];
  /* The candidate's bytes as read and hashed, in a private directory: what
   * is built and debugged (the user's file may change meanwhile). */
  char snap_dir[PATH_MAX], snap[PATH_MAX + 256];
};

/* What a stage of kv_gate_eval says: go on to the next, stop with the
 * verdict reached (kv_gate_eval returns 0), or stop on an error of kevo's
 * own (-1, with err). */
enum { STAGE_ERROR = -1, STAGE_NEXT = 0, STAGE_DONE = 1 };

/* The session, the ceilings given and the sources' paths. -1 (with nothing
 * to clean up) when there is no session. */
static int eval_open(struct eval *e, const struct kv_gate_opts *o) {
  struct kv_gate_result *r = e->r;
  if (!o) {
    kv_gate_opts_default(&e->defaults);
    o = &e->defaults;
  }
  e->o = o;
  snprintf(r->surface, sizeof r->surface, "%s", o->surface ? o->surface : "cpu");
  if (kv_session_init(&e->s, e->t, o, e->err, e->errlen) < 0)
    return -1;
  const struct kv_surface *sf = e->s.sf;
  /* Ceilings of another surface's device (a CPU's for a GPU run) are no
   * ceilings at all: a cuda run measures its own. */
  e->given = o->calib && !(sf->device_in_worker && !strncmp(o->calib->device, "cpu:", 4)) ? o->calib
                                                                                          : NULL;
  if (e->given)
    snprintf(r->device, sizeof r->device, "%s", e->given->device);
  else if (!sf->device_in_worker)
    kv_calib_cpu_device(r->device, sizeof r->device);
  e->an = (struct an_job){.sf = sf, .b = &e->jobs[1].b, .cache_dir = e->s.cache, .o = o};
  const char *dir = e->t->dir && *e->t->dir ? e->t->dir : ".";
  snprintf(e->refsrc, sizeof e->refsrc, "%s/%s", dir, sf->reference);
  /* An imported task: reference.py runs in the torch reference worker (the
   * torch surface's ground truth whatever else the task holds). */
  e->s.torch = sf->lang == KV_LANG_PYTHON
                   ? kv_torch_surface_reference(e->t, e->refsrc, sizeof e->refsrc)
                   : kv_torch_reference(e->t, e->refsrc, sizeof e->refsrc);
  e->basesrc[0] = 0;
  if (sf->baseline) {
    snprintf(e->basesrc, sizeof e->basesrc, "%s/%s", dir, sf->baseline);
    if (!kv_path_exists(e->basesrc))
      e->basesrc[0] = 0;
  }
  return 0;
}

/* The candidate's bytes, read once: hashed, and written to a private copy
 * (same base name) that everything after reads, so that the hash names what
 * was judged. */
static int snapshot(struct eval *e) {
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(e->candidate_path, KV_SOURCE_MAX, &text, &len, e->err, e->errlen) < 0)
    return -1;
  kv_sha256_hex(text, len, e->r->source_hash);
  const char *tmp = getenv("TMPDIR"), *base = strrchr(e->candidate_path, '/');
  int rc = kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-cand-", e->snap_dir, sizeof e->snap_dir,
                      e->err, e->errlen);
  if (rc == 0) {
    snprintf(e->snap, sizeof e->snap, "%s/%s", e->snap_dir, base ? base + 1 : e->candidate_path);
    rc = kv_write_file(e->snap, text, len, e->err, e->errlen);
  }
  free(text);
  return rc;
}

/* The candidate read and hashed, the toolchain ready, the reference there;
 * workers kept warm by an earlier evaluation (kv_gate_warm) taken. */
static int eval_prepare(struct eval *e) {
  struct kv_session *s = &e->s;
  /* The candidate must be readable before anything else happens. */
  if (snapshot(e) < 0)
    return STAGE_ERROR;
  if (s->sf->prepare(e->o, e->desc, sizeof e->desc, e->err, e->errlen) < 0)
    return STAGE_ERROR;
  if (s->torch && kv_torch_worker_paths(s->worker_path, &s->tp, e->err, e->errlen) < 0)
    return STAGE_ERROR;
  if (!kv_path_exists(e->refsrc)) {
    kv_error(e->err, e->errlen, "%s: not found; the %s surface needs the task's ground truth there",
             e->refsrc, s->sf->name);
    return STAGE_ERROR;
  }
  if (e->o->warm) {
    warm_keys(s, e->refsrc, e->basesrc, e->ref_key, e->cand_key);
    kv_warm_take_ref(e->o->warm, e->ref_key, s);
    s->cw_fresh = s->cw_up = kv_warm_take_cand(e->o->warm, e->cand_key, &s->cw);
  }
  return STAGE_NEXT;
}

/* Compile reference, candidate (and baseline) at once; cuda workers start
 * meanwhile. An error only when a compiler could not be run at all. */
static int eval_compile(struct eval *e) {
  struct kv_session *s = &e->s;
  struct kv_gate_result *r = e->r;
  double t0 = kv_now_s();
  if (s->sf->device_in_worker) {
    e->ups[0] = (struct up_job){.s = s, .w = &s->rw, .up = &s->rw_up};
    e->ups[1] = (struct up_job){.s = s, .w = &s->cw, .up = &s->cw_up};
    if (!s->rw_up)
      up_start(&e->ups[0]);
    up_start(&e->ups[1]);
  }
  const char *srcs[3] = {e->refsrc, e->snap, e->basesrc};
  e->njobs = e->basesrc[0] ? 3 : 2;
  for (int i = 0; i < e->njobs; i++) {
    e->jobs[i].t = e->t;
    e->jobs[i].src = srcs[i];
    e->jobs[i].o = e->o;
    e->jobs[i].cache_dir = s->cache;
    e->jobs[i].deadline_s = e->o->compile_deadline_s;
  }
  /* reference.py is not built: the torch worker loads it as it is. */
  kv_build_pool(s->sf->build, e->jobs + s->torch, e->njobs - s->torch);
  if (s->torch) {
    e->jobs[0].b.ok = 1;
    snprintf(e->jobs[0].b.so_path, sizeof e->jobs[0].b.so_path, "%s", e->refsrc);
  }
  r->compile_s = kv_now_s() - t0;
  kv_gate_mark(r, "compiled");
  /* Waiting for the workers still to come counts as correctness time. */
  double t_up = kv_now_s();
  int joined[2] = {e->ups[0].started, e->ups[1].started};
  up_join(&e->ups[0]);
  up_join(&e->ups[1]);
  e->up_wait = kv_now_s() - t_up;
  if (joined[0])
    kv_gate_mark_at(r, "reference_worker_up", e->ups[0].ready_s);
  if (joined[1])
    kv_gate_mark_at(r, "candidate_worker_up", e->ups[1].ready_s);
  for (int i = 0; i < e->njobs; i++) {
    if (e->jobs[i].rc < 0) {
      snprintf(e->err, e->errlen, "%s", e->jobs[i].err);
      return STAGE_ERROR;
    }
  }
  return STAGE_NEXT;
}

/* The device (cuda) is there and of the architecture built for; the
 * reference (and baseline) compiled. */
static int eval_ground_ready(struct eval *e) {
  struct kv_session *s = &e->s;
  const struct kv_surface *sf = s->sf;
  const struct kv_build *ref = &e->jobs[0].b, *cand = &e->jobs[1].b, *bas = &e->jobs[2].b;
  /* No device (a laptop with KEVO_CUDA_ARCH set): a candidate that does not
   * compile is judged all the same (compile_error, with the log), since that
   * needs no GPU; one that compiles cannot be judged further here. */
  int no_device = sf->device_in_worker && (e->ups[0].rc < 0 || e->ups[1].rc < 0);
  if (no_device && ref->ok && cand->ok) {
    snprintf(e->err, e->errlen,
             "%s; %s compiles (the compile step needs no GPU), judging it needs one",
             e->ups[e->ups[0].rc < 0 ? 0 : 1].err, e->candidate_path);
    return STAGE_ERROR;
  }
  if (sf->device_in_worker && !no_device) {
    const char *dev = json_string_value(json_object_get(kv_session_hello_cuda(&s->cw), "device"));
    snprintf(e->r->device, sizeof e->r->device, "%s", dev ? dev : "cuda");
    if (check_arch(s, e->err, e->errlen) < 0)
      return STAGE_ERROR;
  }
  if (!ref->ok) {
    kv_error(e->err, e->errlen,
             "%s: the reference does not compile; run 'kevo task check --surface %s %s':\n%s",
             e->refsrc, sf->name, e->t->dir, ref->log ? ref->log : "");
    return STAGE_ERROR;
  }
  if (e->basesrc[0] && !bas->ok) {
    kv_error(e->err, e->errlen, "%s: the baseline does not compile:\n%s", e->basesrc,
             bas->log ? bas->log : "");
    return STAGE_ERROR;
  }
  return STAGE_NEXT;
}

/* compile_error: the first error line of the log makes the detail (the
 * whole log is kept). */
static void compile_error_verdict(struct eval *e) {
  struct kv_gate_result *r = e->r;
  const char *log = r->compile_log ? r->compile_log : "";
  const char *err = strstr(log, "error");
  const char *ls = err;
  while (ls && ls > log && ls[-1] != '\n')
    ls--;
  kv_set_verdict(r, KV_V_COMPILE_ERROR, "%.*s", ls ? (int)strcspn(ls, "\n") : 200, ls ? ls : log);
  const char *path = e->candidate_path;
  size_t pl = strlen(path);
  if (!e->s.sf->device_in_worker && pl > 3 && !strcmp(path + pl - 3, ".cu")) {
    size_t dl = strlen(r->detail);
    snprintf(r->detail + dl, sizeof r->detail - dl,
             " (a .cu file judged on the %s surface, as C: pass --surface cuda)", e->s.sf->name);
  }
}

/* The candidate's build into the result (its log, ptxas's report), its
 * analysis started; compile_error or policy_violation decide here. */
static int eval_candidate_built(struct eval *e) {
  const struct kv_surface *sf = e->s.sf;
  const struct kv_gate_opts *o = e->o;
  struct kv_gate_result *r = e->r;
  struct kv_build *cand = &e->jobs[1].b;
  r->compile_cached = cand->cached;
  r->compile_log = kv_gate_log_own_names(cand->log, e->candidate_path);
  if (r->compile_log) {
    free(cand->log);
  } else {
    r->compile_log = cand->log;
  }
  cand->log = NULL;
  r->nkernels = cand->nkernels; /* ptxas's report; the mixes come with the analysis */
  memcpy(r->kernels, cand->kernels, sizeof r->kernels);
  if (cand->ok && sf->analyze)
    an_start(&e->an);
  if (o->on_phase)
    o->on_phase(o->phase_ud, "compile", r);
  if (!cand->ok) {
    compile_error_verdict(e);
    return STAGE_DONE;
  }
  char bad[512];
  int nbad = sf->policy(cand, e->t, bad, sizeof bad, e->err, e->errlen);
  if (nbad < 0)
    return STAGE_ERROR;
  if (nbad > 0) {
    kv_set_verdict(r, KV_V_POLICY_VIOLATION,
                   "the candidate calls %s, which kernels may not use (processes, sockets, "
                   "signals, dynamic loading%s)",
                   bad, sf->device_in_worker ? ", libraries the task does not allow" : "");
    return STAGE_DONE;
  }
  return STAGE_NEXT;
}

/* Correctness begins: the reference loaded in its own worker (a warm one
 * kept when it holds this reference). */
static int eval_load_reference(struct eval *e) {
  struct kv_session *s = &e->s;
  const struct kv_build *ref = &e->jobs[0].b;
  e->t_check = kv_now_s() - e->up_wait;
  char detail[1024];
  int lr = 0;
  if (s->rw_up && s->rw_slot0[0] && strcmp(s->rw_slot0, ref->so_path)) {
    /* a warm reference worker with another build loaded (the reference
     * changed): a fresh one */
    kv_worker_stop(&s->rw);
    s->rw_up = 0;
    if (s->sf->device_in_worker &&
        kv_session_worker_up(s, &s->rw, &s->rw_up, e->err, e->errlen) < 0)
      return STAGE_ERROR;
  }
  if (!strcmp(s->rw_slot0, ref->so_path))
    ; /* handed on warm, loaded */
  else if (s->sf->device_in_worker)
    lr = kv_session_load(&s->rw, 0, ref->so_path, detail, sizeof detail);
  else
    lr = kv_session_start_worker(s, &s->rw, &s->rw_up, ref->so_path, detail, sizeof detail, e->err,
                                 e->errlen);
  if (lr == 0)
    snprintf(s->rw_slot0, sizeof s->rw_slot0, "%s", ref->so_path);
  if (lr != 0) {
    if (lr > 0)
      kv_error(e->err, e->errlen, "%s: the reference does not load: %s", e->refsrc, detail);
    return STAGE_ERROR;
  }
  kv_gate_mark(e->r, "reference_loaded");
  return STAGE_NEXT;
}

/* cuda: the device's ceilings, measured (once) in the reference's worker
 * before timing needs them; the lent buffers probed. */
static int eval_calibrate(struct eval *e) {
  struct kv_session *s = &e->s;
  e->calp = e->given;
  if (!e->calp && s->sf->device_in_worker && e->o->timing && e->t->nbench > 0) {
    /* A torch reference's worker is Python: the ceilings are measured by
     * kevo's own code in a clean kevo-worker (ew, which timing needs anyway
     * for kevo's empty entry). */
    int measured;
    if (s->torch && !s->ew_up && kv_session_worker_up(s, &s->ew, &s->ew_up, e->err, e->errlen) < 0)
      return STAGE_ERROR;
    if (device_calib(s, s->torch ? &s->ew : &s->rw, 0, &e->cal, &measured, e->err, e->errlen) < 0)
      return STAGE_ERROR;
    e->calp = &e->cal;
    if (measured)
      kv_gate_mark(e->r, "calibrated");
  }
  if (e->calp)
    e->r->calib = *e->calp;
  /* A reference.py task lends from a clean kevo-worker of its own. */
  if (kv_lend_wanted(s) && s->torch && !s->lw_up &&
      kv_session_worker_up(s, &s->lw, &s->lw_up, e->err, e->errlen) < 0)
    return STAGE_ERROR;
  if (s->sf->device_in_worker && kv_lend_probe(s, e->err, e->errlen) < 0)
    return STAGE_ERROR;
  return STAGE_NEXT;
}

/* The candidate loaded in its own worker; load_error decides here. */
static int eval_load_candidate(struct eval *e) {
  struct kv_session *s = &e->s;
  struct kv_gate_result *r = e->r;
  const char *so = e->jobs[1].b.so_path;
  char detail[1024];
  int lr;
  if (s->sf->device_in_worker)
    lr = kv_session_load_slot(&s->cw, 0, so, 1, detail, sizeof detail);
  else
    lr =
        kv_session_start_worker(s, &s->cw, &s->cw_up, so, detail, sizeof detail, e->err, e->errlen);
  if (lr < 0)
    return STAGE_ERROR;
  kv_sandbox_status_from_hello(s->cw.hello, &r->sandbox);
  r->jit_s = s->torch_jit_s;
  kv_gate_mark(r, "candidate_loaded");
  if (lr > 0) {
    const char *why = strstr(detail, "undefined symbol");
    kv_set_verdict(r, KV_V_LOAD_ERROR, "the candidate does not load: %s%s", detail,
                   why ? " (is the entry function defined, with that exact name?)" : "");
    return STAGE_DONE;
  }
  return STAGE_NEXT;
}

/* Correctness: every check size x seeds, two calls each at the same
 * addresses (the second with new contents), the reference in its own
 * worker. Any verdict but ok decides here. */
static int eval_checks(struct eval *e) {
  struct kv_gate_result *r = e->r;
  enum kv_verdict worst = KV_V_OK;
  if (kv_gate_checks(&e->s, e->refsrc, e->jobs[1].b.so_path, r, &worst, e->err, e->errlen) < 0)
    return STAGE_ERROR;
  r->check_s = kv_now_s() - e->t_check;
  kv_gate_mark(r, "checked");
  if (e->o->on_phase)
    e->o->on_phase(e->o->phase_ud, "checks", r);
  return worst != KV_V_OK ? STAGE_DONE : STAGE_NEXT;
}

/* One timing loop per device at a time. While this one waits for the
 * device, the candidate's process is stopped: nothing of it runs beside
 * the evaluation timing now. *t2 is when timing began, then when the
 * device was locked. */
static int eval_time_locked(struct eval *e, double *t2) {
  struct kv_session *s = &e->s;
  const struct kv_gate_opts *o = e->o;
  struct kv_gate_result *r = e->r;
  struct kv_devlock lock;
  char what[300];
  snprintf(what, sizeof what, "timing %s", e->t->name && *e->t->name ? e->t->name : "a candidate");
  kv_worker_pause(&s->cw);
  int lr = kv_gate_lock_device(s->sf, o, s->cw.hello, what, &lock, e->err, e->errlen);
  r->lock_wait_s = kv_now_s() - *t2;
  if (lr < 0)
    return -1;
  kv_gate_mark(r, "device_locked");
  kv_worker_resume(&s->cw);
  if (o->on_phase)
    o->on_phase(o->phase_ud, "timing", r);
  *t2 = kv_now_s();
  /* The baseline: the task's baseline.cu, or its PyTorch module under
   * torch.compile. */
  const char *base = e->basesrc[0]                  ? e->jobs[2].b.so_path
                     : s->torch && o->torch_compile ? e->refsrc
                                                    : NULL;
  int tr = kv_time_candidate(s, base, e->jobs[1].b.so_path, e->calp, r, e->err, e->errlen);
  if (tr == 0)
    kv_torch_do_bench(s, r);
  kv_devlock_release(&lock);
  kv_gate_mark(r, "timed");
  return tr < 0 ? -1 : 0;
}

/* An ok verdict's detail with the speedup (and what qualifies it). */
static void timed_verdict(struct kv_gate_result *r) {
  char rnote[320]; /* the reference's time off do_bench's: said with its speedup */
  kv_side_note(&r->timing, 0, rnote, sizeof rnote);
  if (r->timing.clock_blind)
    snprintf(rnote + strlen(rnote), sizeof rnote - strlen(rnote), "%s",
             " (kevo's clock could not see its calls on this loaded host, so no speedup above "
             "1x is credited: time on a quieter host)");
  if (r->verdict == KV_V_OK && r->timed && r->timing.nsizes > 1)
    kv_set_verdict(r, KV_V_OK,
                   "passed %d checks; %.2fx the reference (geometric mean over %d sizes; "
                   "%.2fx at %s)%s",
                   r->nchecks, r->timing.speedup, r->timing.nsizes, r->timing.size[0].speedup,
                   r->timing.sizes, rnote);
  else if (r->verdict == KV_V_OK && r->timed)
    kv_set_verdict(r, KV_V_OK, "passed %d checks; %.2fx the reference at %s%s", r->nchecks,
                   r->timing.speedup, r->timing.sizes, rnote);
}

/* The checks passed: ok, and timed when the task has bench sizes. */
static int eval_timing(struct eval *e) {
  struct kv_gate_result *r = e->r;
  kv_set_verdict(r, KV_V_OK, "passed %d checks", r->nchecks);
  if (!(e->o->timing && e->t->nbench > 0))
    return STAGE_NEXT;
  double t2 = kv_now_s();
  if (!e->s.cw.alive)
    kv_set_verdict(r, KV_V_CRASH, "the worker died after the checks: %s", e->s.cw.death);
  else if (eval_time_locked(e, &t2) < 0)
    return STAGE_ERROR;
  r->time_s = kv_now_s() - t2;
  timed_verdict(r);
  return STAGE_NEXT;
}

/* Every path's end, first: the lend note; the candidate's worker stopped
 * (its output kept) or, never readied, handed back warm; the reference's
 * kept warm and the next candidate's process started, when asked for; the
 * rest stopped. */
static void eval_stop_workers(struct eval *e, int rc) {
  struct kv_session *s = &e->s;
  const struct kv_gate_opts *o = e->o;
  if (rc == 0)
    kv_lend_note(s, e->r->detail, sizeof e->r->detail);
  if (o->warm && s->cw_fresh && s->cw_up) { /* never readied: as good as new */
    kv_warm_put_cand(o->warm, e->cand_key, &s->cw);
    s->cw_up = s->cw_fresh = 0;
  }
  kv_session_stop_candidate(s, e->r);
  e->r->jit_s = s->torch_jit_s;
  up_join(&e->ups[0]);
  up_join(&e->ups[1]);
  if (o->warm && e->ref_key[0]) {
    if (rc == 0)
      kv_warm_put_ref(o->warm, e->ref_key, s);
    /* The next candidate's process, started now, off its evaluation's path. */
    char e2[256];
    if (!s->cw_up && kv_session_worker_spawn(s, &s->cw, &s->cw_up, e2, sizeof e2) == 0) {
      kv_warm_put_cand(o->warm, e->cand_key, &s->cw);
      s->cw_up = 0;
    }
  }
  /* What is not kept warm goes now (not waited for: the exits, a GPU
   * context's teardown each, overlap the analysis's end). */
  kv_session_release(s);
  kv_gate_mark(e->r, "workers_stopped");
}

/* Every path's end, then: the verdict is final: it goes out now, and the
 * analysis (nvdisasm spends about 0.45 s of CPU on any cubin, however
 * small), the profiler and the debugger come after it; the builds go. */
static void eval_after_verdict(struct eval *e, int rc) {
  const struct kv_gate_opts *o = e->o;
  struct kv_gate_result *r = e->r;
  struct kv_build *cand = &e->jobs[1].b;
  if (rc == 0) {
    kv_gate_mark(r, "verdict");
    if (o->on_phase)
      o->on_phase(o->phase_ud, "verdict", r);
  }
  if (e->an.ran) {
    an_join(&e->an);
    kv_gate_mark(r, "analysis_joined");
    r->nkernels = cand->nkernels; /* static analysis (kevo/sass.h): mixes are in kernels */
    memcpy(r->kernels, cand->kernels, sizeof r->kernels);
    r->static_done = cand->static_done;
    r->static_s = cand->static_s;
    snprintf(r->static_note, sizeof r->static_note, "%s", cand->static_note);
    r->sass = cand->sass;
    cand->sass = NULL;
    if (o->on_phase)
      o->on_phase(o->phase_ud, "static", r);
  }
  /* The profiler and the debugger, when asked for: after the verdict, which
   * they never change (toolrun.h). */
  if (rc == 0)
    kv_devtools_after(&e->s, &e->jobs[0].b, cand, e->refsrc, e->snap, r);
  kv_gate_mark(r, "end");
  for (int i = 0; i < 3; i++)
    kv_build_release(&e->jobs[i].b);
}

int kv_gate_eval(const struct kv_task *t, const char *candidate_path, const struct kv_gate_opts *o,
                 struct kv_gate_result *r, char *err, size_t errlen) {
  memset(r, 0, sizeof(*r));
  r->start_s = kv_now_s();
  struct eval e;
  memset(&e, 0, sizeof e);
  e.t = t;
  e.candidate_path = candidate_path;
  e.r = r;
  e.err = err;
  e.errlen = errlen;
  if (eval_open(&e, o) < 0)
    return -1;
  /* Each stage in turn while they say go on; whatever stops them, the
   * evaluation ends the same way. */
  int (*const stages[])(struct eval *) = {
      eval_prepare,         eval_compile,        eval_ground_ready,
      eval_candidate_built, eval_load_reference, eval_calibrate,
      eval_load_candidate,  eval_checks,         eval_timing};
  int st = STAGE_NEXT;
  for (size_t i = 0; i < sizeof stages / sizeof *stages && st == STAGE_NEXT; i++)
    st = stages[i](&e);
  int rc = st == STAGE_ERROR ? -1 : 0;
  eval_stop_workers(&e, rc);
  eval_after_verdict(&e, rc);
  if (e.snap_dir[0])
    kv_rmtree(e.snap_dir);
  return rc;
}

void kv_gate_result_release(struct kv_gate_result *r) {
  free(r->compile_log);
  free(r->cand_stdout);
  free(r->cand_stderr);
  free(r->sass);
  r->compile_log = r->cand_stdout = r->cand_stderr = r->sass = NULL;
  kv_ncu_report_free(r->profile);
  kv_ncu_report_free(r->profile_ref);
  kv_san_report_free(r->debug);
  r->profile = r->profile_ref = NULL;
  r->debug = NULL;
}

/* A JSON string even for bytes that are not UTF-8 (candidate output). */
static json_t *safe_string(const char *s) {
  if (!s) /* out of memory for "" too must not reach strlen(NULL) */
    return json_string("");
  json_t *j = json_string(s);
  if (j)
    return j;
  size_t n = strlen(s);
  char *c = malloc(n + 1);
  if (!c)
    return json_string("");
  for (size_t i = 0; i < n; i++)
    c[i] = ((unsigned char)s[i] < 0x80) ? s[i] : '?';
  c[n] = 0;
  j = json_string(c);
  free(c);
  return j ? j : json_string("");
}

/* The do_bench cross-check beside kevo's own times of the torch sides. */
static json_t *do_bench_json(const struct kv_timing *t) {
  json_t *d = json_object();
  char note[160];
  if (t->ref_do_bench_us > 0) {
    json_object_set_new(d, "reference_us", json_real(t->ref_do_bench_us));
    json_object_set_new(d, "reference_ratio", json_real(t->ref.median_us / t->ref_do_bench_us));
    json_object_set_new(d, "reference_comparable",
                        json_boolean(!kv_side_note(t, 0, note, sizeof note)));
  }
  if (t->has_baseline && t->base_do_bench_us > 0) {
    json_object_set_new(d, "baseline_us", json_real(t->base_do_bench_us));
    json_object_set_new(d, "baseline_ratio", json_real(t->base.median_us / t->base_do_bench_us));
    json_object_set_new(d, "baseline_comparable",
                        json_boolean(!kv_side_note(t, 1, note, sizeof note)));
  }
  if (t->do_bench_why[0])
    json_object_set_new(d, "why", json_string(t->do_bench_why));
  json_object_set_new(d, "tolerance", json_real(KV_DO_BENCH_TOL));
  return d;
}

static json_t *stats_json(const struct kv_stats *s) {
  return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f}", "n", s->n, "median_us", s->median_us, "iqr_us",
                   s->iqr_us, "cv", s->cv, "min_us", s->min_us, "mean_us", s->mean_us);
}

/* ptxas's report of each kernel (and its instruction mix): feedback for
 * whoever wrote it. */
static json_t *kernels_json(const struct kv_gate_result *r) {
  json_t *ks = json_array();
  for (int i = 0; i < r->nkernels && i < KV_MAX_KERNELS; i++) {
    const struct kv_kernel_res *k = &r->kernels[i];
    json_array_append_new(ks, json_pack("{s:o,s:i,s:i,s:I,s:I,s:I,s:I,s:I}", "name",
                                        safe_string(k->name), "registers", k->registers, "barriers",
                                        k->barriers, "smem_bytes", (json_int_t)k->smem_bytes,
                                        "cmem_bytes", (json_int_t)k->cmem_bytes, "stack_bytes",
                                        (json_int_t)k->stack_bytes, "spill_store_bytes",
                                        (json_int_t)k->spill_store_bytes, "spill_load_bytes",
                                        (json_int_t)k->spill_load_bytes));
    if (k->has_sass) /* its instruction mix (kevo/sass.h) */
      json_object_set_new(json_array_get(ks, json_array_size(ks) - 1), "static",
                          kv_sass_mix_json(&k->sass));
  }
  return ks;
}

static json_t *compile_json(const struct kv_gate_result *r) {
  json_t *comp = json_pack("{s:f,s:b,s:o}", "seconds", r->compile_s, "cached", r->compile_cached,
                           "log", safe_string(r->compile_log));
  if (kv_surface_lang(kv_surface_find(r->surface)) == KV_LANG_PYTHON)
    json_object_set_new(comp, "jit_s", json_real(r->jit_s)); /* the LOAD: never timed */
  if (r->nkernels > 0)
    json_object_set_new(comp, "kernels", kernels_json(r));
  return comp;
}

/* What ran after the verdict: the static analysis, the profiler, the
 * debugger (each only when it did). */
static void after_verdict_json(json_t *j, const struct kv_gate_result *r) {
  if (r->static_done || r->static_note[0])
    json_object_set_new(j, "static",
                        json_pack("{s:b,s:f,s:s,s:o}", "done", r->static_done, "seconds",
                                  r->static_s, "note", r->static_note, "sass",
                                  safe_string(r->sass)));
  if (r->profile)
    json_object_set_new(j, "profile", kv_ncu_json(r->profile));
  if (r->profile_ref)
    json_object_set_new(j, "profile_ref", kv_ncu_json(r->profile_ref));
  if (r->debug)
    json_object_set_new(j, "debug", kv_san_json(r->debug));
}

static json_t *checks_json(const struct kv_gate_result *r) {
  json_t *checks = json_array();
  for (int i = 0; i < r->nchecks; i++) {
    const struct kv_check *c = &r->checks[i];
    json_array_append_new(
        checks, json_pack("{s:s,s:I,s:s,s:s,s:f,s:f}", "sizes", c->sizes, "seed",
                          (json_int_t)c->seed, "verdict", kv_verdict_name(c->verdict), "detail",
                          c->detail, "max_abs_err", c->max_abs_err, "max_rel_err", c->max_rel_err));
  }
  return checks;
}

static json_t *timeline_json(const struct kv_gate_result *r) {
  json_t *tl = json_array();
  for (int i = 0; i < r->nmarks; i++)
    json_array_append_new(tl, json_pack("[s,f]", r->marks[i].what, r->marks[i].at_s));
  return tl;
}

/* kevo's own clock against the candidate's reports. */
static json_t *clock_json(const struct kv_timing *t) {
  json_t *j =
      json_pack("{s:i,s:i,s:i,s:f,s:f,s:f,s:b,s:b}", "phases", t->phases, "calls_per_phase",
                t->calls_per_phase, "validated_calls", t->validated_calls, "parent_us_per_call",
                t->parent_us, "reported_over_parent", t->clock_ratio, "slack_us_per_call",
                t->clock_slack_us, "median_raised", t->cand_clamped, "blind", t->clock_blind);
  json_object_update_new(j, json_pack("{s:f,s:f,s:f}", "cand_phase_us", t->cand_phase_us,
                                      "empty_phase_us", t->empty_phase_us, "empty_beside_phase_us",
                                      t->empty_beside_phase_us));
  return j;
}

/* The speedup's interval and adaptive timing's stop. */
static json_t *ci_json(const struct kv_timing *t) {
  return json_pack("{s:f,s:f,s:f,s:f,s:o,s:f,s:s,s:i,s:i,s:i}", "level", t->ci_level, "low",
                   t->speedup_lo, "high", t->speedup_hi, "half_width", t->ci_half_width,
                   "clock_half_width",
                   t->ci_clock_half_width >= 0 ? json_real(t->ci_clock_half_width) : json_null(),
                   "target", t->ci_target, "stop", t->stop, "phases", t->phases, "min_phases",
                   t->min_phases, "max_phases", t->max_phases);
}

static json_t *per_size_json(const struct kv_timing *t) {
  json_t *ps = json_array();
  for (int i = 0; i < t->nsizes; i++) {
    const struct kv_size_timing *z = &t->size[i];
    json_array_append_new(ps, json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f}", "sizes", z->sizes,
                                        "median_us", z->cand_us, "reference_median_us", z->ref_us,
                                        "speedup", z->speedup, "low", z->lo, "high", z->hi,
                                        "seconds", z->stages_s));
  }
  return ps;
}

/* The task's baseline, when it was timed too. */
static void baseline_json(json_t *tj, const struct kv_timing *t) {
  json_object_set_new(tj, "baseline", stats_json(&t->base));
  json_object_set_new(tj, "baseline_kind", json_string(t->baseline_kind));
  if (t->baseline_compile_s > 0)
    json_object_set_new(tj, "baseline_compile_s", json_real(t->baseline_compile_s));
  json_object_set_new(tj, "baseline_median_us", json_real(t->base.median_us));
  json_object_set_new(tj, "speedup_vs_baseline", json_real(t->speedup_vs_baseline));
}

/* A GPU surface's clocks: each side's timer, the synchronization's cost,
 * a torch reference's lead kernel, kevo's empty phases. */
static void gpu_clocks_json(json_t *tj, const struct kv_timing *t) {
  json_object_set_new(tj, "timer",
                      json_pack("{s:s,s:s}", "candidate", t->cand_host_timer ? "host" : "events",
                                "reference", t->ref_host_timer ? "host" : "events"));
  json_object_set_new(tj, "sync_overhead_us", json_real(t->sync_overhead_us));
  if (t->torch_lead_us > 0)
    json_object_set_new(
        tj, "torch_lead",
        json_pack("{s:f,s:i}", "us", t->torch_lead_us, "uncovered_calls", t->torch_uncovered));
  json_object_set_new(
      tj, "empty_phase_us",
      json_pack("{s:f,s:f}", "beside", t->empty_beside_us, "alone", t->empty_alone_us));
}

/* The timing method, and kernelbench's settings when it was that. */
static void method_json(json_t *tj, const struct kv_timing *t) {
  json_object_set_new(tj, "method", json_string(t->method[0] ? t->method : "kevo"));
  if (!strcmp(t->method, "kernelbench"))
    json_object_set_new(tj, "kernelbench",
                        json_pack("{s:i,s:i,s:b,s:f,s:f}", "warmup", KV_KB_WARMUP, "trials",
                                  KV_KB_TRIALS, "inputs_kept", t->kb_kept, "candidate_mean_us",
                                  t->cand.mean_us, "reference_mean_us", t->ref.mean_us));
}

static json_t *timing_json(const struct kv_gate_result *r) {
  const struct kv_timing *t = &r->timing;
  json_t *tj =
      json_pack("{s:s,s:f,s:f,s:f,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "sizes", t->sizes,
                "median_us", t->cand.median_us, "reference_median_us", t->ref.median_us, "speedup",
                t->speedup, "candidate", stats_json(&t->cand), "reference", stats_json(&t->ref),
                "bytes", t->bytes, "flops", t->flops, "gbs", t->gbs, "gflops", t->gflops,
                "roofline_fraction", t->roofline, "wall_s", t->wall_s, "covered_s", t->covered_s);
  json_object_set_new(tj, "reference_alone", stats_json(&t->ref_alone));
  /* reference_median_us is the faster of beside and alone (kevo/gate.h) */
  json_object_set_new(tj, "reference_from_alone", json_boolean(t->ref_from_alone));
  json_object_set_new(tj, "reference_beside_median_us",
                      json_real(t->ref_from_alone ? t->ref_beside_us : t->ref.median_us));
  json_object_set_new(tj, "clock", clock_json(t));
  json_object_set_new(tj, "ci", ci_json(t));
  json_object_set_new(tj, "stages",
                      json_pack("{s:f,s:f,s:f,s:f}", "warmup", t->stage_warmup_s, "loop",
                                t->stage_loop_s, "validate", t->stage_validate_s, "alone",
                                t->stage_alone_s));
  if (t->nsizes > 1)
    json_object_set_new(tj, "per_size", per_size_json(t));
  if (t->has_baseline)
    baseline_json(tj, t);
  if (kv_surface_gpu(kv_surface_find(r->surface)))
    gpu_clocks_json(tj, t);
  if (t->ref_do_bench_us > 0 || t->do_bench_why[0])
    json_object_set_new(tj, "do_bench", do_bench_json(t));
  method_json(tj, t);
  return tj;
}

static json_t *sandbox_json(const struct kv_sandbox_status *sb) {
  return json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "no_new_privs",
                   kv_layer_state_name(sb->no_new_privs), "netns", kv_layer_state_name(sb->netns),
                   "landlock", kv_layer_state_name(sb->landlock), "seccomp",
                   kv_layer_state_name(sb->seccomp), "rlimits", kv_layer_state_name(sb->rlimits),
                   "landlock_abi", sb->landlock_abi);
}

char *kv_gate_result_json(const struct kv_gate_result *r) {
  json_t *j = json_object();
  json_object_set_new(j, "verdict", json_string(kv_verdict_name(r->verdict)));
  json_object_set_new(j, "accepted", json_boolean(r->verdict == KV_V_OK));
  json_object_set_new(j, "detail", safe_string(r->detail));
  json_object_set_new(j, "surface", json_string(r->surface));
  json_object_set_new(j, "device", json_string(r->device));
  json_object_set_new(j, "source_sha256", json_string(r->source_hash));
  json_object_set_new(j, "compile", compile_json(r));
  after_verdict_json(j, r);
  json_object_set_new(j, "checks", checks_json(r));
  json_object_set_new(j, "seconds",
                      json_pack("{s:f,s:f,s:f,s:f}", "compile", r->compile_s, "check", r->check_s,
                                "timing", r->time_s, "lock_wait", r->lock_wait_s));
  json_object_set_new(j, "timeline", timeline_json(r));
  if (r->timed)
    json_object_set_new(j, "timing", timing_json(r));
  if (r->calib.device[0])
    json_object_set_new(j, "ceilings",
                        json_pack("{s:s,s:f,s:f,s:f,s:i}", "device", r->calib.device,
                                  "bandwidth_gbs", r->calib.bandwidth_gbs, "fma_gflops",
                                  r->calib.fma_gflops, "cache_bytes", r->calib.llc_bytes, "units",
                                  r->calib.threads));
  json_object_set_new(j, "stdout", safe_string(r->cand_stdout));
  json_object_set_new(j, "stderr", safe_string(r->cand_stderr));
  json_object_set_new(j, "stdout_truncated", json_boolean(r->stdout_truncated));
  json_object_set_new(j, "stderr_truncated", json_boolean(r->stderr_truncated));
  json_object_set_new(j, "sandbox", sandbox_json(&r->sandbox));
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(j);
  return s;
}

int kv_gate_probe(const struct kv_gate_opts *o, struct kv_probe *p, char *err, size_t errlen) {
  memset(p, 0, sizeof(*p));
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  struct kv_session s;
  struct kv_task dummy = {0};
  if (kv_session_init(&s, &dummy, o, err, errlen) < 0)
    return -1;
  snprintf(p->worker_path, sizeof p->worker_path, "%s", s.worker_path);
  struct kv_worker_spec spec = {0};
  spec.worker_path = s.worker_path;
  spec.scratch_base = s.scratch;
  spec.read_paths[spec.nread++] = s.objdir;
  spec.sandbox = o->sandbox;
  spec.start_deadline_s = s.sf->worker_start_s;
  spec.surface = s.sf->worker_runtime;
  if (kv_worker_start(&s.cw, &spec, err, errlen) < 0)
    return -1;
  s.cw_up = 1;
  kv_sandbox_status_from_hello(s.cw.hello, &p->layers);
  json_t *req = json_object(), *rep = NULL;
  char d[512];
  enum kv_call_status st = kv_worker_call(&s.cw, KV_MSG_PROBE, req, 10, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  if (st != KV_CALL_OK) {
    /* A worker that could execve /bin/true is gone: that is a finding too. */
    snprintf(p->name[0], sizeof p->name[0], "execve");
    p->blocked[0] = 0;
    p->nprobes = 1;
    json_decref(rep);
    kv_session_release(&s);
    return 0;
  }
  const char *key;
  json_t *v;
  json_object_foreach(rep, key, v) {
    if (json_is_string(v) && p->nprobes < KV_PROBE_MAX) {
      snprintf(p->name[p->nprobes], sizeof p->name[0], "%s", key);
      p->blocked[p->nprobes++] = !strcmp(json_string_value(v), "blocked");
    } else if (!strcmp(key, "env_vars")) {
      p->env_vars = (int)json_integer_value(v);
    } else if (!strcmp(key, "exec_lock") && json_is_object(v)) {
      const char *ls = json_string_value(json_object_get(v, "state"));
      for (int i = 0; ls && i <= KV_LAYER_FAILED; i++)
        if (!strcmp(ls, kv_layer_state_name((enum kv_layer_state)i)))
          p->layers.exec_lock = (enum kv_layer_state)i;
      p->layers.sealed = (int)json_integer_value(json_object_get(v, "sealed"));
    }
  }
  json_decref(rep);
  kv_session_release(&s);
  return 0;
}

/* A worker of o's surface (cuda), started for a question about the device. */
static int device_worker(struct kv_session *s, const struct kv_gate_opts *o, char *err,
                         size_t errlen) {
  static struct kv_task dummy;
  if (kv_session_init(s, &dummy, o, err, errlen) < 0)
    return -1;
  if (!s->sf->device_in_worker)
    return kv_error(err, errlen, "--surface %s: the worker does not own a device here",
                    s->sf->name);
  struct kv_worker_spec spec = {0};
  spec.worker_path = s->worker_path;
  spec.scratch_base = s->scratch;
  spec.sandbox = o->sandbox;
  spec.start_deadline_s = s->sf->worker_start_s;
  spec.surface = s->sf->worker_runtime;
  if (kv_worker_start(&s->cw, &spec, err, errlen) < 0)
    return -1;
  s->cw_up = 1;
  json_t *c = kv_session_hello_cuda(&s->cw);
  if (!json_is_true(json_object_get(c, "ok"))) {
    const char *e = json_string_value(json_object_get(c, "error"));
    return kv_error(err, errlen, "--surface %s: %s", s->sf->name,
                    e ? e : "the worker cannot use the device");
  }
  return 0;
}

int kv_gate_calibrate(const struct kv_gate_opts *o, int force, struct kv_calib *c, int *measured,
                      char *err, size_t errlen) {
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  struct kv_session s;
  int rc = device_worker(&s, o, err, errlen);
  if (rc == 0)
    rc = device_calib(&s, &s.cw, force, c, measured, err, errlen);
  kv_session_release(&s);
  return rc;
}

int kv_gate_cuda_device(const struct kv_gate_opts *o, char *out, size_t cap, char *err,
                        size_t errlen) {
  struct kv_gate_opts co;
  if (o)
    co = *o;
  else
    kv_gate_opts_default(&co);
  co.surface = "cuda";
  struct kv_session s;
  int rc = device_worker(&s, &co, err, errlen);
  if (rc == 0) {
    json_t *c = kv_session_hello_cuda(&s.cw);
    int drv = (int)json_integer_value(json_object_get(c, "driver"));
    snprintf(out, cap, "%s, %s, %d SMs, %.1f MiB L2, %.1f GiB, driver %d.%d",
             json_string_value(json_object_get(c, "name")),
             json_string_value(json_object_get(c, "arch")),
             (int)json_integer_value(json_object_get(c, "sms")),
             (double)json_integer_value(json_object_get(c, "l2_bytes")) / 1048576.0,
             (double)json_integer_value(json_object_get(c, "mem_bytes")) / 1073741824.0, drv / 1000,
             drv % 1000 / 10);
  }
  kv_session_release(&s);
  return rc;
}
