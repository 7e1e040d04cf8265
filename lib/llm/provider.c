/* The provider table, request resolution, cache keys and the helpers the
 * providers share. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/util.h"

const struct llm_provider *const llm_providers[] = {&llm_openai, &llm_anthropic, &llm_replay, NULL};
const char *const kv_llm_provider_names[] = {"openai", "anthropic", "replay", NULL};

const struct llm_provider *llm_provider_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; llm_providers[i]; i++)
    if (!strcmp(llm_providers[i]->name, name))
      return llm_providers[i];
  return NULL;
}

const char *kv_llm_code_name(int code) {
  switch (code) {
  case KV_LLM_OK:
    return "ok";
  case KV_LLM_EUSAGE:
    return "usage";
  case KV_LLM_ENOKEY:
    return "no_key";
  case KV_LLM_EAUTH:
    return "auth";
  case KV_LLM_EBUDGET:
    return "budget";
  case KV_LLM_ETIMEOUT:
    return "timeout";
  case KV_LLM_ENET:
    return "network";
  case KV_LLM_EHTTP:
    return "http";
  case KV_LLM_EBODY:
    return "bad_body";
  case KV_LLM_ENOTRECORDED:
    return "not_recorded";
  case KV_LLM_ESTORE:
    return "store";
  case KV_LLM_ENOMEM:
    return "no_memory";
  default:
    return "error";
  }
}

int llm_fail(int code, char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

static void copy(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

int kv_llm_model_defaults(struct kv_llm_model *m, const char *provider, char *err, size_t errlen) {
  const struct llm_provider *p = llm_provider_find(provider ? provider : "openai");
  memset(m, 0, sizeof *m);
  if (!p)
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "provider '%s' is unknown; use openai, anthropic or replay", provider);
  copy(m->provider, sizeof m->provider, p->name);
  copy(m->base_url, sizeof m->base_url, p->default_base_url);
  copy(m->api_key_env, sizeof m->api_key_env, p->default_key_env);
  copy(m->anthropic_version, sizeof m->anthropic_version, "2023-06-01");
  copy(m->max_tokens_field, sizeof m->max_tokens_field, "max_tokens");
  m->concurrency = 4;
  m->timeout_s = 300;
  m->connect_timeout_s = 10;
  m->max_attempts = 4;
  m->backoff_s = 1.0;
  m->backoff_max_s = 30;
  m->retry_after_max_s = 60;
  m->max_response_bytes = 4u << 20;
  m->max_tokens = 4096;
  m->temperature = -1;
  m->top_p = -1;
  return 0;
}

void kv_llm_request_init(struct kv_llm_request *r) {
  memset(r, 0, sizeof *r);
  r->role = "ask";
  r->temperature = -1;
  r->top_p = -1;
}

enum { PROMPT_MAX_BYTES = 8 << 20 };

int llm_req_resolve(const struct kv_llm_model *m, const struct kv_llm_request *req,
                    struct llm_req *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!req)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "request: NULL (a bug in the caller)");
  if (!req->messages || req->n_messages == 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "request: no messages; give at least one user message");
  size_t bytes = req->system ? strlen(req->system) : 0;
  for (size_t i = 0; i < req->n_messages; i++) {
    const struct kv_llm_message *msg = &req->messages[i];
    if (!msg->role || (strcmp(msg->role, "user") && strcmp(msg->role, "assistant")))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "request: messages[%zu].role is '%s'; use \"user\" or \"assistant\" (the "
                      "system prompt goes in the request's system field)",
                      i, msg->role ? msg->role : "(null)");
    if (!msg->content)
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "request: messages[%zu].content is NULL; give the text", i);
    bytes += strlen(msg->content);
    if (bytes > PROMPT_MAX_BYTES)
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "request: the prompt exceeds %d MiB; shorten it",
                      PROMPT_MAX_BYTES >> 20);
  }
  if (req->max_tokens < 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "request: max_tokens is %d; give a positive number (0: the "
                    "model's default)",
                    req->max_tokens);
  if (req->sample < 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "request: sample is %d; sample indices start at 0",
                    req->sample);
  out->system = req->system && *req->system ? req->system : NULL;
  out->messages = req->messages;
  out->n_messages = req->n_messages;
  out->max_tokens = req->max_tokens > 0 ? req->max_tokens : m->max_tokens;
  out->temperature = req->temperature >= 0 ? req->temperature : m->temperature;
  out->top_p = req->top_p >= 0 ? req->top_p : m->top_p;
  out->sample = req->sample;
  return 0;
}

/* ---- cache keys --------------------------------------------------------- */

static json_t *num_or_null(double v) {
  return v < 0 ? json_null() : json_real(v);
}

char *llm_key_json(const char *provider, const char *model, const struct llm_req *r) {
  json_t *msgs = json_array();
  for (size_t i = 0; i < r->n_messages; i++)
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", r->messages[i].role, "content",
                                          r->messages[i].content));
  json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:o, s:i, s:o, s:o, s:i}", "kevo_key", 1, "provider",
                        provider, "model", model, "system",
                        r->system ? json_string(r->system) : json_null(), "messages", msgs,
                        "max_tokens", r->max_tokens, "temperature", num_or_null(r->temperature),
                        "top_p", num_or_null(r->top_p), "sample", r->sample);
  if (!o)
    return NULL;
  char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  json_decref(o);
  return s;
}

void llm_key_of(const char *provider, const char *model, const struct llm_req *r, char out[65]) {
  char *s = llm_key_json(provider, model, r);
  kv_sha256_hex(s ? s : "", s ? strlen(s) : 0, out);
  free(s);
}

int kv_llm_cache_key(const struct kv_llm_model *m, const char *provider,
                     const struct kv_llm_request *req, char out[65], char *err, size_t errlen) {
  struct llm_req r;
  int rc = llm_req_resolve(m, req, &r, err, errlen);
  if (rc < 0)
    return rc;
  llm_key_of(provider ? provider : m->provider, m->model, &r, out);
  return 0;
}

/* ---- shared helpers ----------------------------------------------------- */

void llm_reply_release(struct llm_reply *r) {
  if (!r)
    return;
  free(r->text);
  free(r->stop_reason);
  memset(r, 0, sizeof *r);
}

struct curl_slist *llm_header(struct curl_slist *h, const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 3;
  char *line = malloc(n);
  if (!line) {
    curl_slist_free_all(h);
    return NULL;
  }
  snprintf(line, n, "%s: %s", name, value);
  struct curl_slist *next = curl_slist_append(h, line);
  explicit_bzero(line, n);
  free(line);
  if (!next) {
    curl_slist_free_all(h);
    return NULL;
  }
  return next;
}

char *llm_json_strdup(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

int64_t llm_json_count(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return -1;
  return (int64_t)json_integer_value(v);
}

/* Copies at most cap-1 bytes, turning control characters into spaces so that
 * the message stays on one line. */
static void printable(char *out, size_t cap, const char *s) {
  size_t j = 0;
  for (size_t i = 0; s[i] && j + 1 < cap; i++)
    out[j++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
  out[j] = '\0';
}

void llm_error_text(const char *body, size_t len, char *out, size_t cap) {
  out[0] = '\0';
  if (!body || len == 0)
    return;
  json_t *o = json_loadb(body, len, 0, NULL);
  if (!o)
    return;
  json_t *e = json_object_get(o, "error");
  const char *msg = NULL;
  if (json_is_string(e))
    msg = json_string_value(e);
  else if (json_is_object(e) && json_is_string(json_object_get(e, "message")))
    msg = json_string_value(json_object_get(e, "message"));
  if (msg)
    printable(out, cap, msg);
  json_decref(o);
}

json_t *llm_parse_object(const char *body, size_t len, char *err, size_t errlen) {
  if (!body || len == 0) {
    kv_error(err, errlen, "the response body is empty");
    return NULL;
  }
  json_error_t je;
  json_t *o = json_loadb(body, len, 0, &je);
  if (!o) {
    kv_error(err, errlen, "the response body is not JSON (line %d, column %d: %s)", je.line,
             je.column, je.text);
    return NULL;
  }
  if (!json_is_object(o)) {
    json_decref(o);
    kv_error(err, errlen, "the response body is JSON but not an object");
    return NULL;
  }
  return o;
}
