/* The OpenAI chat completions API, as spoken by OpenAI and by most servers
 * that call themselves OpenAI-compatible (vLLM, SGLang, llama.cpp, Ollama,
 * OpenRouter, DeepSeek): POST {base_url}/chat/completions with a Bearer key.
 * The base URL includes the version (/v1), as the official SDKs have it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int openai_url(const struct kv_llm_model *m, char *out, size_t cap, char *err,
                      size_t errlen) {
  size_t n = strlen(m->base_url);
  while (n > 0 && m->base_url[n - 1] == '/')
    n--;
  int w = snprintf(out, cap, "%.*s/chat/completions", (int)n, m->base_url);
  if (w < 0 || (size_t)w >= cap)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "base_url: '%s' is too long", m->base_url);
  return 0;
}

static char *openai_body(const struct kv_llm_model *m, const struct llm_req *r) {
  json_t *msgs = json_array();
  if (r->system)
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", r->system));
  for (size_t i = 0; i < r->n_messages; i++)
    json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", r->messages[i].role, "content",
                                          r->messages[i].content));
  json_t *o = json_pack("{s:s, s:o}", "model", m->model, "messages", msgs);
  if (!o)
    return NULL;
  json_object_set_new(o, m->max_tokens_field[0] ? m->max_tokens_field : "max_tokens",
                      json_integer(r->max_tokens));
  if (r->temperature >= 0)
    json_object_set_new(o, "temperature", json_real(r->temperature));
  if (r->top_p >= 0)
    json_object_set_new(o, "top_p", json_real(r->top_p));
  char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
  json_decref(o);
  return s;
}

static struct curl_slist *openai_headers(const struct kv_llm_model *m, const char *key,
                                         struct curl_slist *h) {
  (void)m;
  if (!key)
    return h;
  size_t n = strlen(key) + 8;
  char *v = malloc(n);
  if (!v) {
    curl_slist_free_all(h);
    return NULL;
  }
  snprintf(v, n, "Bearer %s", key);
  h = llm_header(h, "Authorization", v);
  explicit_bzero(v, n);
  free(v);
  return h;
}

static int openai_parse(const char *body, size_t len, struct llm_reply *out, char *err,
                        size_t errlen) {
  memset(out, 0, sizeof *out);
  out->input_tokens = out->output_tokens = -1;
  json_t *o = llm_parse_object(body, len, err, errlen);
  if (!o)
    return KV_LLM_EBODY;
  int rc = 0;
  json_t *choice = json_array_get(json_object_get(o, "choices"), 0);
  json_t *msg = json_object_get(choice, "message");
  json_t *content = json_object_get(msg, "content");
  if (!json_is_string(content)) {
    char api[256];
    llm_error_text(body, len, api, sizeof api);
    if (api[0])
      rc = llm_fail(KV_LLM_EBODY, err, errlen, "the reply is an error: %s", api);
    else if (!choice)
      rc = llm_fail(KV_LLM_EBODY, err, errlen, "the reply has no choices[0]");
    else
      rc = llm_fail(KV_LLM_EBODY, err, errlen,
                    "the reply has no text at choices[0].message.content");
    goto out;
  }
  out->text = strdup(json_string_value(content));
  out->stop_reason = llm_json_strdup(choice, "finish_reason");
  json_t *usage = json_object_get(o, "usage");
  out->input_tokens = llm_json_count(usage, "prompt_tokens");
  out->output_tokens = llm_json_count(usage, "completion_tokens");
  if (!out->text)
    rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "out of memory reading the reply");
out:
  json_decref(o);
  if (rc < 0)
    llm_reply_release(out);
  return rc;
}

const struct llm_provider llm_openai = {
    .name = "openai",
    .default_base_url = "https://api.openai.com/v1",
    .default_key_env = "OPENAI_API_KEY",
    .network = 1,
    .url = openai_url,
    .body = openai_body,
    .headers = openai_headers,
    .parse = openai_parse,
};
