/* Inside the LLM layer: the provider table and what providers share. */
#ifndef KEVO_LLM_INTERNAL_H
#define KEVO_LLM_INTERNAL_H

#include <curl/curl.h>
#include <jansson.h>

#include "kevo/llm.h"

/* A request with the model's defaults filled in: what is sent and hashed. */
struct llm_req {
  const char *system; /* NULL: none */
  const struct kv_llm_message *messages;
  size_t n_messages;
  int max_tokens;
  double temperature; /* < 0: not sent */
  double top_p;       /* < 0: not sent */
  int sample;
};

/* What a provider read from a successful reply. */
struct llm_reply {
  char *text;                          /* malloc'd */
  char *stop_reason;                   /* malloc'd or NULL */
  int64_t input_tokens, output_tokens; /* -1 when the reply did not say */
};
void llm_reply_release(struct llm_reply *r);

/* A provider: a const table of functions, like curl's TLS backends. The
 * network ones build a request and parse a reply; replay (network == 0) has
 * none of these and is served from the store by the client. */
struct llm_provider {
  const char *name;
  const char *default_base_url;
  const char *default_key_env;
  int network;
  /* base_url + the API's path. */
  int (*url)(const struct kv_llm_model *m, char *out, size_t cap, char *err, size_t errlen);
  /* The JSON body, which is also what gets recorded: no credentials here. */
  char *(*body)(const struct kv_llm_model *m, const struct llm_req *r);
  /* Appends the provider's headers; `key` (NULL: none) goes only here. */
  struct curl_slist *(*headers)(const struct kv_llm_model *m, const char *key,
                                struct curl_slist *h);
  /* Parses a 2xx body; a negative return names what is wrong in err. */
  int (*parse)(const char *body, size_t len, struct llm_reply *out, char *err, size_t errlen);
};

extern const struct llm_provider llm_openai, llm_anthropic, llm_replay;
/* NULL when unknown. */
const struct llm_provider *llm_provider_find(const char *name);
/* The table, NULL-terminated. */
extern const struct llm_provider *const llm_providers[];

/* Resolves req against the model's defaults; checks roles and sizes. */
int llm_req_resolve(const struct kv_llm_model *m, const struct kv_llm_request *req,
                    struct llm_req *out, char *err, size_t errlen);
/* The canonical JSON that the cache key hashes (malloc'd). */
char *llm_key_json(const char *provider, const char *model, const struct llm_req *r);
void llm_key_of(const char *provider, const char *model, const struct llm_req *r, char out[65]);

/* Writes the message into err and returns code. */
int llm_fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Looks a request up in the store: 1 found (*row filled, key = its cache
 * key, *as = the provider that recorded it), KV_LLM_ENOTRECORDED (key = the
 * first key tried), or another error. */
struct kv_store;
struct kv_llm_call_row;
int llm_replay_lookup(struct kv_store *st, const struct kv_llm_model *m, const struct llm_req *r,
                      struct kv_llm_call_row *row, char key[65], const char **as, char *err,
                      size_t errlen);

/* The wait before the next attempt after `attempts` failed ones, when the
 * server gave no Retry-After: backoff * 2^(attempts-1), at most backoff_max,
 * scaled by 0.5 + 0.5 u for jitter (u uniform in [0, 1)). */
double llm_backoff(const struct kv_llm_model *m, int attempts, double u);

/* Shared helpers for the providers. */
/* Appends a header line "name: value" built in a scratch buffer that is wiped. */
struct curl_slist *llm_header(struct curl_slist *h, const char *name, const char *value);
/* Copies the JSON string at obj[key] (or NULL). */
char *llm_json_strdup(json_t *obj, const char *key);
/* A non-negative integer at obj[key], or -1. */
int64_t llm_json_count(json_t *obj, const char *key);
/* The API's error message in a body ({"error": {"message": ...}} or
 * {"error": "..."}), "" when there is none; printable, capped. */
void llm_error_text(const char *body, size_t len, char *out, size_t cap);
/* Parses body as a JSON object, naming what is wrong ("empty", "not JSON at
 * line L column C: ...", "not an object"). */
json_t *llm_parse_object(const char *body, size_t len, char *err, size_t errlen);

#endif
