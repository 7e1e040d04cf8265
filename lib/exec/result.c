/* What a gate server says back: its hello and its verdict frames, both
 * outside input (a server on another host, of another build); the results
 * inside are read by kv_gate_result_from_json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"
#include "kevo/exec.h"
#include "kevo/serve.h"
#include "kevo/util.h"

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

static void str_into(json_t *o, const char *key, char *out, size_t cap) {
  const char *s = json_string_value(json_object_get(o, key));
  snprintf(out, cap, "%s", s ? s : "");
}

int kvx_hello_parse(const char *json, struct kvx_hello *h, char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  json_t *j = json_loads(json ? json : "", 0, NULL);
  if (!json_is_object(j)) {
    json_decref(j);
    return kv_error(err, errlen,
                    "its first frame is not a gate server's hello; is kevo on that host a kevo "
                    "with `gate serve`?");
  }
  str_into(j, "kevo", h->version, sizeof h->version);
  str_into(j, "host", h->host, sizeof h->host);
  str_into(j, "cuda_visible_devices", h->gpu, sizeof h->gpu);
  str_into(j, "device", h->device, sizeof h->device);
  json_t *p = json_object_get(j, "protocol");
  h->protocol = json_is_integer(p) ? (long long)json_integer_value(p) : -1;
  json_int_t pid = json_integer_value(json_object_get(j, "pid"));
  h->pid = pid > 0 && pid < (1 << 30) ? (pid_t)pid : 0;
  json_decref(j);
  if (h->protocol != KV_GATE_PROTOCOL)
    return kv_error(err, errlen,
                    "it runs kevo %s, which speaks gate protocol %lld; this kevo (%s) speaks "
                    "protocol %d: install the same kevo version there",
                    h->version[0] ? h->version : "(unknown)", h->protocol, KEVO_VERSION,
                    KV_GATE_PROTOCOL);
  return 0;
}

int kvx_verdict_parse(const char *json, const char *want_id, json_t **result, int *need_task,
                      char *error, size_t errlen) {
  *result = NULL;
  *need_task = 0;
  json_t *j = json_loads(json ? json : "", 0, NULL);
  const char *id = json_string_value(json_object_get(j, "id"));
  if (!json_is_object(j) || !id) {
    json_decref(j);
    return kv_error(error, errlen, "a malformed verdict frame (no \"id\")");
  }
  if (strcmp(id, want_id)) {
    int rc = kv_error(error, errlen, "a verdict for job \"%.64s\" while job %s was in flight", id,
                      want_id);
    /* A server that could not read the job at all answers with id "". */
    const char *e = json_string_value(json_object_get(j, "error"));
    if (!id[0] && e)
      rc = kv_error(error, errlen, "%s", e);
    json_decref(j);
    return rc;
  }
  json_t *res = json_object_get(j, "result");
  if (json_is_object(res)) {
    *result = json_incref(res);
    json_decref(j);
    return 0;
  }
  const char *e = json_string_value(json_object_get(j, "error"));
  *need_task = json_is_true(json_object_get(j, "need_task"));
  kv_error(error, errlen, "%s", e ? e : "a verdict with neither a result nor an error");
  json_decref(j);
  return 1;
}
