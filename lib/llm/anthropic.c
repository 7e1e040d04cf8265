/* Anthropic's Messages API: POST {base_url}/v1/messages with x-api-key and
 * anthropic-version headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/util.h"

static int anthropic_url(const struct kv_llm_model *m, char *out, size_t cap, char *err,
                         size_t errlen) {
  size_t n = strlen(m->base_url);
  while (n > 0 && m->base_url[n - 1] == '/')
    n--;
  int w = snprintf(out, cap, "%.*s/v1/messages", (int)n, m->base_url);
  if (w < 0 || (size_t)w >= cap)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "base_url: '%s' is too long", m->base_url);
  return 0;
}

static char *anthropic_body(const struct kv_llm_model *m, const struct llm_req *r) {
  json_t *msgs = json_array();
  for (size_t i = 0; i < r->n_messages; i++)
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", r->messages[i].role, "content",
                                          r->messages[i].content));
  json_t *o = json_pack("{s:s, s:i, s:o}", "model", m->model, "max_tokens", r->max_tokens,
                        "messages", msgs);
  if (!o)
    return NULL;
  if (r->system)
    json_object_set_new(o, "system", json_string(r->system));
  if (r->temperature >= 0)
    json_object_set_new(o, "temperature", json_real(r->temperature));
  if (r->top_p >= 0)
    json_object_set_new(o, "top_p", json_real(r->top_p));
  char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
  json_decref(o);
  return s;
}

static struct curl_slist *anthropic_headers(const struct kv_llm_model *m, const char *key,
                                            struct curl_slist *h) {
  h = llm_header(h, "anthropic-version",
                 m->anthropic_version[0] ? m->anthropic_version : "2023-06-01");
  if (h && key)
    h = llm_header(h, "x-api-key", key);
  return h;
}

static int anthropic_parse(const char *body, size_t len, struct llm_reply *out, char *err,
                           size_t errlen) {
  memset(out, 0, sizeof *out);
  out->input_tokens = out->output_tokens = -1;
  json_t *o = llm_parse_object(body, len, err, errlen);
  if (!o)
    return KV_LLM_EBODY;
  int rc = 0;
  json_t *content = json_object_get(o, "content");
  if (!json_is_array(content)) {
    char api[256];
    llm_error_text(body, len, api, sizeof api);
    if (api[0])
      rc = llm_fail(KV_LLM_EBODY, err, errlen, "the reply is an error: %s", api);
    else
      rc = llm_fail(KV_LLM_EBODY, err, errlen, "the reply has no content array");
    goto out;
  }
  /* The reply text: every text block, in order. */
  struct kv_buf b;
  kv_buf_init(&b, len + 1);
  size_t i, texts = 0;
  json_t *block;
  json_array_foreach(content, i, block) {
    json_t *type = json_object_get(block, "type");
    json_t *text = json_object_get(block, "text");
    if (json_is_string(type) && !strcmp(json_string_value(type), "text") && json_is_string(text)) {
      texts++;
      if (kv_buf_append(&b, json_string_value(text), json_string_length(text)) < 0) {
        kv_buf_release(&b);
        rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "out of memory reading the reply");
        goto out;
      }
    }
  }
  if (texts == 0) {
    kv_buf_release(&b);
    rc = llm_fail(KV_LLM_EBODY, err, errlen, "the reply has no text block in content[]");
    goto out;
  }
  out->text = kv_buf_detach(&b);
  out->stop_reason = llm_json_strdup(o, "stop_reason");
  json_t *usage = json_object_get(o, "usage");
  out->input_tokens = llm_json_count(usage, "input_tokens");
  out->output_tokens = llm_json_count(usage, "output_tokens");
  /* Prompt caching bills its tokens separately; they are input all the same. */
  int64_t cw = llm_json_count(usage, "cache_creation_input_tokens");
  int64_t cr = llm_json_count(usage, "cache_read_input_tokens");
  if (out->input_tokens >= 0) {
    if (cw > 0)
      out->input_tokens += cw;
    if (cr > 0)
      out->input_tokens += cr;
  }
  if (!out->text)
    rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "out of memory reading the reply");
out:
  json_decref(o);
  if (rc < 0)
    llm_reply_release(out);
  return rc;
}

const struct llm_provider llm_anthropic = {
    .name = "anthropic",
    .default_base_url = "https://api.anthropic.com",
    .default_key_env = "ANTHROPIC_API_KEY",
    .network = 1,
    .url = anthropic_url,
    .body = anthropic_body,
    .headers = anthropic_headers,
    .parse = anthropic_parse,
};
