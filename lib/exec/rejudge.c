/* Remote verdicts re-judged on this host (kevo/rejudge.h). */
#include "kevo/rejudge.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static int judge_source(const struct kv_task *t, const char *src, size_t len, const char *surface,
                        const struct kv_gate_opts *o, struct kv_rejudge *r, char *err,
                        size_t errlen);

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
  return judge_source(t, src, len, surface, o, r, err, errlen);
}

int kv_rejudge_source(const char *from, const char *host, const struct kv_task *t, const char *src,
                      size_t len, const char *surface, const struct kv_gate_opts *o,
                      struct kv_rejudge *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  snprintf(r->executor, sizeof r->executor, "%s", from ? from : "?");
  snprintf(r->host, sizeof r->host, "%s", host && *host ? host : "?");
  return judge_source(t, src, len, surface, o, r, err, errlen);
}

static int judge_source(const struct kv_task *t, const char *src, size_t len, const char *surface,
                        const struct kv_gate_opts *o, struct kv_rejudge *r, char *err,
                        size_t errlen) {
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

/* ---- skill cards ---- */

static void card_log(json_t *card, const struct kv_rejudge *r, const char *remote) {
  json_t *log = json_object_get(card, "verification_log");
  if (!json_is_array(log)) {
    log = json_array();
    json_object_set_new(card, "verification_log", log);
  }
  json_array_append_new(log, json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:I}", "what", "rejudge", "from",
                                       r->executor, "remote_verdict", remote, "verdict", r->verdict,
                                       "detail", r->why, "agrees", r->state == KV_REJUDGE_AGREES,
                                       "when", (json_int_t)time(NULL)));
}

/* The card rejected here: its status, and why, where a reader of it looks. */
static void card_reject(json_t *card, const struct kv_rejudge *r) {
  json_object_set_new(card, "status", json_string("rejected"));
  json_object_set_new(card, "admitted", json_false());
  json_t *risks = json_object_get(card, "risks");
  if (!json_is_array(risks)) {
    risks = json_array();
    json_object_set_new(card, "risks", risks);
  }
  char line[1500];
  snprintf(line, sizeof line,
           "judged again on import: the richer kernel is %s here (%.1200s); the %s said it was "
           "accepted",
           r->verdict, r->why, r->executor);
  json_array_append_new(risks, json_string(line));
}

void kv_rejudge_cards(json_t *cards, const struct kv_task *t, const struct kv_gate_opts *o,
                      const char *from, struct kv_cards_rejudged *n, struct kv_buf *report) {
  memset(n, 0, sizeof *n);
  for (size_t i = 0; i < json_array_size(cards); i++) {
    json_t *c = json_array_get(cards, i);
    const char *id = json_string_value(json_object_get(c, "id"));
    const char *status = json_string_value(json_object_get(c, "status"));
    if (!status || strcmp(status, "admitted") != 0)
      continue;
    json_t *scope = json_object_get(c, "scope");
    const char *task = json_string_value(json_object_get(scope, "task"));
    const char *surface = json_string_value(json_object_get(scope, "surface"));
    const char *device = json_string_value(json_object_get(scope, "device"));
    const char *src =
        json_string_value(json_object_get(json_object_get(c, "carrier"), "after_src"));
    if (!t || !task || strcmp(task, t->name) != 0 || !src || !surface) {
      n->cannot++;
      kv_buf_appendf(report, "skill %s: not judged here (%s): admitted by the %s's word only\n",
                     id ? id : "?",
                     !t     ? "no --task names its task"
                     : !src ? "the card carries no kernel (carrier.after_src)"
                     : !task || strcmp(task, t->name) ? "a card of another task"
                                                      : "no surface in its scope",
                     from);
      continue;
    }
    struct kv_rejudge r;
    char err[512];
    if (kv_rejudge_source(from, device, t, src, strlen(src), surface, o, &r, err, sizeof err) < 0) {
      r.state = KV_REJUDGE_CANNOT;
      snprintf(r.why, sizeof r.why, "%s", err);
    }
    if (r.state == KV_REJUDGE_CANNOT) {
      n->cannot++;
      kv_buf_appendf(report, "skill %s: not judged here: %s; admitted by the %s's word only\n",
                     id ? id : "?", r.why, from);
      continue;
    }
    n->judged++;
    card_log(c, &r, "ok");
    if (r.state == KV_REJUDGE_AGREES) {
      n->agreed++;
      kv_buf_appendf(report, "skill %s: judged again here: ok\n", id ? id : "?");
    } else {
      n->disagreed++;
      card_reject(c, &r);
      kv_buf_appendf(report,
                     "skill %s: the %s says its kernel was accepted, this host judges it %s: "
                     "%.300s; stored as rejected\n",
                     id ? id : "?", from, r.verdict, r.why);
    }
  }
}
