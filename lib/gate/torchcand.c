/* The torch surface (docs/torch-surface.md): a candidate is a Python file
 * defining ModelNew, judged against the task's reference.py. The reference
 * runs in the torch reference worker (torchref.c, kevo_torch_worker.py); the
 * candidate, and kevo's empty ModelNew that prices a phase's overhead, each
 * in a worker of python/kevo_torch_cand.py, which never loads the task's
 * Model; here, their LOADs (the surface's table entries: torchbuild.c).
 * Everything else (the check memory kevo reads itself, the timing loop,
 * kevo's clock) is the cpu surface's machinery: these workers speak
 * kevo-worker's protocol on the same shared memory. */
#include <limits.h>
#include <stdio.h>

#include "internal.h"
#include "kevo/wire.h"
#include "torchbuild.h"

/* The worker's word on its sandbox after its LOAD (stages 2 and 3 come with
 * it), over its HELLO's: shown in the verdict's sandbox block, never judged. */
static void take_sandbox(struct kv_worker *w, json_t *rep) {
  json_t *sb = json_object_get(rep, "sandbox");
  if (w->hello && json_is_object(sb))
    json_object_update(w->hello, sb);
}

int kv_torch_load_candidate(struct kv_session *s, struct kv_worker *w, const char *path,
                            char *detail, size_t detlen) {
  char ref[PATH_MAX];
  if (!kv_torch_surface_reference(s->t, ref, sizeof ref)) {
    snprintf(detail, detlen, "the task has no reference.py, which the torch surface needs");
    return 1;
  }
  json_t *req = json_pack("{s:i,s:s,s:b,s:s}", "slot", 0, "path", path, "candidate", 1, "reference",
                          ref),
         *rep = NULL;
  char d[1024];
  /* Its import, ModelNew built and called once at every listed size: Triton
   * compiles, load_inline builds (a minute of nvcc for CUDA). */
  double deadline = 60 + (s->o->compile_deadline_s > 0 ? s->o->compile_deadline_s : 60);
  double t0 = kv_now_s();
  enum kv_call_status st =
      kv_worker_call(w, KV_MSG_LOAD, req, deadline, &rep, NULL, 0, d, sizeof d);
  s->torch_jit_s += kv_now_s() - t0;
  json_decref(req);
  if (st == KV_CALL_OK)
    take_sandbox(w, rep);
  json_decref(rep);
  if (st == KV_CALL_OK)
    return 0;
  char tail[300] = "";
  if (st != KV_CALL_ERROR)
    kv_tail_of(&w->err, tail, sizeof tail);
  snprintf(detail, detlen, "%s%s", d, tail);
  return 1;
}

int kv_torch_load_empty(struct kv_session *s, struct kv_worker *w, char *err, size_t errlen) {
  char ref[PATH_MAX];
  if (!kv_torch_surface_reference(s->t, ref, sizeof ref))
    return kv_error(err, errlen, "%s: the task has no reference.py, which the torch surface needs",
                    s->t->dir ? s->t->dir : ".");
  json_t *req = json_pack("{s:i,s:b,s:s}", "slot", 0, "empty", 1, "reference", ref), *rep = NULL;
  char d[1024];
  enum kv_call_status st = kv_worker_call(w, KV_MSG_LOAD, req, 60, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st != KV_CALL_OK)
    return kv_error(err, errlen, "kevo's empty ModelNew does not load in a clean torch worker: %s",
                    d);
  return 0;
}
