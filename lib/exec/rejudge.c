/* Remote verdicts re-judged on this host (kevo/rejudge.h). */
#include "kevo/rejudge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/surface.h"
#include "kevo/util.h"

int kv_rejudge_is_remote(const char *result_json, struct kv_rejudge *r) {
  memset(r, 0, sizeof *r);
  json_t *j = json_loads(result_json ? result_json : "", 0, NULL);
  json_t *x = json_object_get(j, "executor");
  const char *name = json_string_value(json_object_get(x, "name"));
  const char *host = json_string_value(json_object_get(x, "host"));
  int remote = name && (!strcmp(name, "ssh") || !strcmp(name, "slurm"));
  if (remote) {
    snprintf(r->executor, sizeof r->executor, "%s", name);
    snprintf(r->host, sizeof r->host, "%s", host && *host ? host : "?");
  }
  json_decref(j);
  return remote;
}

/* 0 when this host can judge the surface; else -1 with why. */
static int can_judge(const char *surface, const struct kv_gate_opts *o, char *why, size_t cap) {
  const struct kv_surface *sf = kv_surface_find(surface);
  if (!sf)
    return snprintf(why, cap, "surface %s is not in this kevo", surface ? surface : "?"), -1;
  if (!kv_surface_gpu(sf))
    return 0;
  struct kv_gate_opts g = *o;
  g.surface = surface;
  char device[512], e[1024];
  if (kv_gate_cuda_device(&g, device, sizeof device, e, sizeof e) < 0)
    return snprintf(why, cap, "this host cannot judge %s kernels: %s", surface, e), -1;
  return 0;
}

static void judge_here(const struct kv_task *t, const char *path, const char *surface,
                       const struct kv_gate_opts *o, struct kv_rejudge *r) {
  struct kv_gate_opts g = *o;
  g.surface = surface;
  g.timing = 0;
  struct kv_gate_result *res = calloc(1, sizeof *res);
  char e[1024];
  if (!res) {
    r->state = KV_REJUDGE_CANNOT;
    snprintf(r->why, sizeof r->why, "out of memory");
    return;
  }
  if (kv_gate_eval(t, path, &g, res, e, sizeof e) < 0) {
    r->state = KV_REJUDGE_CANNOT;
    snprintf(r->why, sizeof r->why, "kevo could not judge it here: %s", e);
  } else {
    r->state = res->verdict == KV_V_OK ? KV_REJUDGE_AGREES : KV_REJUDGE_DISAGREES;
    snprintf(r->verdict, sizeof r->verdict, "%s", kv_verdict_name(res->verdict));
    snprintf(r->why, sizeof r->why, "%s", res->detail);
  }
  kv_gate_result_release(res);
  free(res);
}

int kv_rejudge_local(const char *result_json, const struct kv_task *t, const char *src, size_t len,
                     const char *surface, const struct kv_gate_opts *o, struct kv_rejudge *r,
                     char *err, size_t errlen) {
  if (!kv_rejudge_is_remote(result_json, r))
    return 0;
  if (can_judge(surface, o, r->why, sizeof r->why) < 0) {
    r->state = KV_REJUDGE_CANNOT;
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX], path[PATH_MAX + 32];
  if (kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-rejudge", dir, sizeof dir, err, errlen) < 0)
    return -1;
  snprintf(path, sizeof path, "%s/best.%s", dir, kv_surface_ext(kv_surface_find(surface)));
  if (kv_write_file(path, src, len, err, errlen) < 0) {
    kv_rmtree(dir);
    return -1;
  }
  judge_here(t, path, surface, o, r);
  kv_rmtree(dir);
  return 0;
}
