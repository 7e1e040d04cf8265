/* A step of any strategy: one candidate judged (by the local gate or an
 * executor's gate servers) and recorded in the store: its source, its
 * evaluation and its node. The run loop (run.c) and the LLM strategies
 * (search.c) both step through here; it depends on neither. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/exec.h"
#include "kevo/run.h"
#include "kevo/util.h"
#include "kevo/surface.h"
#include "internal.h"

/* Records an evaluated source: the source, the evaluation (js: its result's
 * JSON) and the node (n's source_hash, eval_id, verdict and speedup are
 * filled in here). */
int kv_run_record_eval(struct kv_store *st, int64_t task_id, const char *candidate_path,
                       const char *src, size_t len, const struct kv_gate_result *r, const char *js,
                       int64_t *eval_id, char *err, size_t errlen) {
  struct kv_eval_record e = {0};
  e.task_id = task_id;
  e.source_hash = r->source_hash;
  e.candidate_path = candidate_path;
  e.surface = r->surface;
  e.device = r->device;
  e.verdict = kv_verdict_name(r->verdict);
  e.detail = r->detail;
  e.median_us = r->timed ? r->timing.cand.median_us : -1;
  e.speedup = r->timed ? r->timing.speedup : -1;
  e.result_json = js;
  int rc = kv_store_put_source(st, r->source_hash, src, len, err, errlen);
  return rc < 0 ? rc : kv_store_add_eval(st, &e, eval_id, err, errlen);
}

static int record_step(struct kv_store *st, int64_t task_id, const struct kv_node_record *node,
                       const char *src, size_t len, const struct kv_gate_result *r, const char *js,
                       int want_reward, struct kva_step_out *out, char *err, size_t errlen) {
  int64_t eval_id = 0, node_id = 0;
  int rc = kv_run_record_eval(st, task_id, NULL, src, len, r, js, &eval_id, err, errlen);
  if (rc == 0) {
    struct kv_node_record n = *node;
    n.source_hash = r->source_hash;
    n.eval_id = eval_id;
    n.verdict = kv_verdict_name(r->verdict);
    n.speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
    n.reward = want_reward ? kva_ada_reward_as(want_reward - 1, (int)r->verdict, n.speedup) : -1;
    rc = kv_store_node_add(st, &n, &node_id, err, errlen);
  }
  if (out) {
    out->node_id = node_id;
    out->eval_id = eval_id;
  }
  return rc;
}

/* A candidate no gate server could judge (an executor gave up on it): its
 * node says so, with no evaluation. 1, or -1 with err. */
static int record_unjudged(struct kv_store *st, const struct kv_node_record *node, const char *src,
                           size_t len, int want_reward, struct kva_step_out *out, char *err,
                           size_t errlen) {
  char hash[65];
  kv_sha256_hex(src, len, hash);
  struct kv_node_record n = *node;
  n.source_hash = hash;
  n.eval_id = 0;
  n.verdict = "unjudged";
  n.speedup = -1;
  n.reward = want_reward ? 0 : -1;
  int64_t node_id = 0;
  if (kv_store_put_source(st, hash, src, len, err, errlen) < 0 ||
      kv_store_node_add(st, &n, &node_id, err, errlen) < 0)
    return -1;
  if (out) {
    out->node_id = node_id;
    out->eval_id = 0;
  }
  return 1;
}

/* What an executor returned for one candidate, into r (and its JSON). */
static int take_done(struct kv_exec_done *d, struct kv_gate_result *r, char *err, size_t errlen) {
  if (!d->ok)
    return 1;
  return kv_gate_result_from_json(d->result_json, r, err, errlen) < 0 ? -1 : 0;
}

int kva_step_record_done(struct kv_store *st, int64_t task_id, const struct kv_node_record *node,
                         const char *src, size_t len, struct kv_exec_done *d,
                         struct kv_gate_result *r, int want_reward, struct kva_step_out *out,
                         char *err, size_t errlen) {
  int rc = take_done(d, r, err, errlen);
  if (rc == 0)
    rc = record_step(st, task_id, node, src, len, r, d->result_json, want_reward, out, err, errlen);
  else if (rc == 1)
    rc = record_unjudged(st, node, src, len, want_reward, out, err, errlen);
  return rc;
}

/* A job's key in an executor: the source's hash (never NULL, never a small
 * number like the tune window's steps). */
static void *source_key(const char *src, size_t len) {
  char h[65];
  kv_sha256_hex(src, len, h);
  uintptr_t k = 0;
  for (int i = 0; i < (int)sizeof k * 2; i++)
    k = k << 4 | (uintptr_t)(h[i] <= '9' ? h[i] - '0' : h[i] - 'a' + 10);
  return (void *)(k | (uintptr_t)1 << (sizeof k * 8 - 1));
}

int kva_step_prefetch(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                      const struct kv_gate_opts *g, char *err, size_t errlen) {
  void *key = source_key(src, len);
  if (kv_exec_has(x, key))
    return 0;
  return kv_exec_submit(x, t, src, len, g, key, err, errlen);
}

int kva_step(struct kv_exec *x, struct kv_store *st, const struct kv_task *t, int64_t task_id,
             const struct kv_node_record *node, const char *src, size_t len,
             const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
             struct kva_step_out *out, char *err, size_t errlen) {
  if (x) {
    struct kv_exec_done d;
    /* judged already, or on the way, when it was prefetched */
    void *key = source_key(src, len);
    if (!kv_exec_has(x, key) && kv_exec_submit(x, t, src, len, g, key, err, errlen) < 0)
      return -1;
    int got;
    while ((got = kv_exec_take(x, key, 5, &d, err, errlen)) == 0)
      ;
    if (got < 0)
      return -1;
    int rc =
        kva_step_record_done(st, task_id, node, src, len, &d, r, want_reward, out, err, errlen);
    kv_exec_done_release(&d);
    if (rc == 1 && !kv_exec_alive(x, err, errlen))
      return -1; /* recorded as unjudged; nothing more can be judged */
    return rc;
  }
  char cache[PATH_MAX - 64], dir[PATH_MAX - 32], path[PATH_MAX];
  if (g && g->cache_dir)
    snprintf(cache, sizeof cache, "%s", g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    return kv_error(err, errlen, "cannot find a cache directory; set KEVO_CACHE_DIR");
  if (kv_mkdtemp(cache, "run", dir, sizeof dir, err, errlen) < 0)
    return -1;
  snprintf(path, sizeof path, "%s/candidate.%s", dir, kv_surface_ext(kv_surface_find(g->surface)));
  int rc = kv_write_file(path, src, len, err, errlen);
  if (rc == 0)
    rc = kv_gate_eval(t, path, g, r, err, errlen);
  kv_rmtree(dir);
  if (rc < 0)
    return -1;
  char *js = kv_gate_result_json(r);
  rc = record_step(st, task_id, node, src, len, r, js, want_reward, out, err, errlen);
  free(js);
  return rc;
}
