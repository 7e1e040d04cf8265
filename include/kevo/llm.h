/* kevo's LLM layer: a table of providers (openai, anthropic, replay) behind
 * one client that keeps several requests in flight on libcurl's multi
 * interface, retries what is worth retrying, enforces hard budgets, and
 * records every call in the store.
 *
 * API keys are read from the environment at submit time (the variable named
 * by the model's api_key_env) and go nowhere else: not into the config, the
 * store, error messages or recorded requests.
 *
 * Like the rest of the library, nothing here prints or exits: functions return
 * 0 (or a count) on success and a negative KV_LLM_E* code on failure, with a
 * one-line message in the caller's buffer. A client is not thread-safe: one
 * thread submits, polls and completes. */
#ifndef KEVO_LLM_H
#define KEVO_LLM_H

#include <stddef.h>
#include <stdint.h>

struct kv_store;

/* ---- errors ----------------------------------------------------------- */

enum {
  KV_LLM_OK = 0,
  KV_LLM_EUSAGE = -1,       /* bad argument or configuration */
  KV_LLM_ENOKEY = -2,       /* the key's environment variable is not set */
  KV_LLM_EAUTH = -3,        /* the key was rejected (HTTP 401/403) */
  KV_LLM_EBUDGET = -4,      /* the request could break a budget cap: not sent */
  KV_LLM_ETIMEOUT = -5,     /* the call's deadline passed */
  KV_LLM_ENET = -6,         /* network error after every attempt */
  KV_LLM_EHTTP = -7,        /* an HTTP error status (after retries, if due) */
  KV_LLM_EBODY = -8,        /* malformed, empty, truncated or oversized body */
  KV_LLM_ENOTRECORDED = -9, /* replay: this request was never recorded */
  KV_LLM_ESTORE = -10,      /* the store failed */
  KV_LLM_ENOMEM = -11,
};
/* Short name of a code ("ok", "timeout", "not_recorded", ...): the status
 * column of recorded calls. */
const char *kv_llm_code_name(int code);

/* ---- models ----------------------------------------------------------- */

/* Everything needed to talk to one model. kv_llm_model_defaults fills the
 * provider's defaults; the config file and flags override fields. */
struct kv_llm_model {
  char name[64];        /* the config entry it came from ("" if none) */
  char provider[16];    /* "openai" | "anthropic" | "replay" */
  char replay_of[16];   /* replay only: whose recordings ("" = any provider) */
  char base_url[512];   /* openai: includes /v1; anthropic: without /v1 */
  char model[128];      /* the model id sent to the API */
  char api_key_env[64]; /* NAME of the variable holding the key; "" = no key */
  char anthropic_version[32];
  char max_tokens_field[32]; /* openai: "max_tokens" or "max_completion_tokens" */
  double input_usd_per_mtok, output_usd_per_mtok; /* prices per million tokens */
  int concurrency;                                /* requests in flight at most */
  double timeout_s;         /* total deadline of a call, retries and waits included */
  double connect_timeout_s; /* per connection attempt */
  int max_attempts;         /* 1 = no retries */
  double backoff_s;         /* first retry waits about this long (with jitter) */
  double backoff_max_s;     /* exponential backoff stops growing here */
  double retry_after_max_s; /* a server's Retry-After is capped at this */
  size_t max_response_bytes;
  /* sampling defaults: max_tokens > 0 always; temperature/top_p < 0 = unset */
  int max_tokens;
  double temperature, top_p;
};

/* Provider names in the table, in order; NULL-terminated. */
extern const char *const kv_llm_provider_names[];
/* Fills m with the defaults of `provider` (openai when NULL). Returns
 * KV_LLM_EUSAGE for an unknown provider name. */
int kv_llm_model_defaults(struct kv_llm_model *m, const char *provider, char *err, size_t errlen);

/* Hard caps for one client; 0 = no cap. */
struct kv_llm_budget {
  double max_usd;
  int64_t max_tokens; /* input + output */
  int64_t max_calls;
};

/* ---- configuration ---------------------------------------------------- */

/* A JSON file:
 *   {"default": "NAME",
 *    "models": {"NAME": {"provider": "openai", "model": "...", "base_url": "...",
 *                        "api_key_env": "OPENAI_API_KEY", "input_usd_per_mtok": 2.5,
 *                        "output_usd_per_mtok": 10, "concurrency": 4, "timeout": 300,
 *                        "max_tokens": 4096, "temperature": 0.7, ...}},
 *    "budget": {"usd": 5, "tokens": 2000000, "calls": 500}}
 * Layers, later ones overriding earlier ones field by field: the user's file
 * ($XDG_CONFIG_HOME/kevo/config.json, else ~/.config/kevo/config.json), the
 * project's ./kevo.json, and an explicit file (--config). Unknown fields are
 * errors naming the file and the field. */
struct kv_llm_config;

/* user_path / project_path NULL: the defaults above (each skipped when
 * absent); explicit_path NULL: none (when given, it must exist). */
int kv_llm_config_load(const char *user_path, const char *project_path, const char *explicit_path,
                       struct kv_llm_config **out, char *err, size_t errlen);
/* Loads one JSON text as a layer (tests, tools); `origin` names it in errors. */
int kv_llm_config_add_text(struct kv_llm_config *c, const char *origin, const char *text, char *err,
                           size_t errlen);
struct kv_llm_config *kv_llm_config_new(void);
void kv_llm_config_free(struct kv_llm_config *c);
/* $XDG_CONFIG_HOME/kevo/config.json or $HOME/.config/kevo/config.json. */
int kv_llm_config_user_path(char *out, size_t cap);

/* Command-line overrides: NULL strings, max_tokens 0, and negative numbers
 * are "not given" (start from kv_llm_flags_init). */
struct kv_llm_flags {
  const char *provider;
  const char *base_url;
  const char *model; /* a config entry's name, or a model id */
  const char *api_key_env;
  double timeout_s;
  int max_tokens;
  double temperature;
  double max_usd;
};
void kv_llm_flags_init(struct kv_llm_flags *f);

/* Picks the model: the entry named by flags->model if there is one, else the
 * config's "default" entry (unless flags->provider names another provider),
 * else the provider's defaults; then applies the flags. Fills the budget
 * from the config (and flags->max_usd). */
int kv_llm_config_resolve(const struct kv_llm_config *c, const struct kv_llm_flags *f,
                          struct kv_llm_model *m, struct kv_llm_budget *b, char *err,
                          size_t errlen);

/* ---- requests and results --------------------------------------------- */

struct kv_llm_message {
  const char *role; /* "user" | "assistant" */
  const char *content;
};

struct kv_llm_request {
  const char *role;   /* what the call serves: "planner", "coder", "ask", ... */
  const char *system; /* optional system prompt */
  const struct kv_llm_message *messages;
  size_t n_messages;
  int max_tokens;     /* 0: the model's */
  double temperature; /* < 0: the model's */
  double top_p;       /* < 0: the model's */
  int sample;         /* sample index: distinguishes repeated asks in replay */
  int64_t run_id;     /* <= 0: none */
  int64_t node_id;    /* <= 0: none */
  double deadline_s;  /* > 0: overrides the model's timeout for this call */
};
/* A request with every field at "use the model's" (role "ask"). */
void kv_llm_request_init(struct kv_llm_request *r);

struct kv_llm_result {
  uint64_t handle;
  int code;                            /* KV_LLM_OK or a KV_LLM_E* code */
  char error[768];                     /* one line when code != 0 */
  char *text;                          /* the reply (malloc'd), NULL on failure */
  char *stop_reason;                   /* "stop", "end_turn", "length", ... (malloc'd or NULL) */
  int http_status;                     /* of the last attempt; 0 when none */
  int attempts;                        /* HTTP attempts made (0 for replay) */
  double latency_s;                    /* submit to completion */
  int64_t input_tokens, output_tokens; /* -1 when unknown */
  double cost_usd;                     /* what this call added to the spend */
  int replayed;
  char cache_key[65];
  int64_t call_id;        /* row in the store's llm_calls; 0 if not recorded */
  char record_error[256]; /* why recording failed, "" when it did not */
};
void kv_llm_result_release(struct kv_llm_result *r);

/* Spend so far (completed calls), and what in-flight calls have reserved. */
struct kv_llm_spend {
  double usd;
  int64_t input_tokens, output_tokens;
  int64_t calls;       /* requests accepted (sent or replayed) */
  double reserved_usd; /* worst case of calls still in flight */
  int64_t reserved_tokens;
  int in_flight;
};

/* ---- the client ------------------------------------------------------- */

struct kv_llm;

struct kv_llm_opts {
  const struct kv_llm_model *model; /* copied */
  struct kv_store *store;           /* where calls are recorded; required for replay */
  struct kv_llm_budget budget;
  /* Called after each call finishes (success or not), with the spend so far;
   * it must not call back into the client. */
  void (*on_spend)(void *arg, const struct kv_llm_spend *spend, const struct kv_llm_result *r);
  void *on_spend_arg;
  uint64_t jitter_seed; /* 0: random */
};

int kv_llm_new(const struct kv_llm_opts *o, struct kv_llm **out, char *err, size_t errlen);
/* Abandons calls still in flight (not recorded) and frees everything. */
void kv_llm_free(struct kv_llm *c);

/* Queues one request and returns its handle (> 0) in *handle. Fails at once,
 * sending nothing, when the key is missing, the request is invalid, or its
 * worst case (input estimated at one token per 3 bytes, plus max_tokens)
 * would break a budget cap. */
int kv_llm_submit(struct kv_llm *c, const struct kv_llm_request *req, uint64_t *handle, char *err,
                  size_t errlen);
/* Drives transfers for at most wait_s seconds, returning as soon as a result
 * is ready. Returns the number of results ready to complete, or < 0 when the
 * client itself failed. */
int kv_llm_poll(struct kv_llm *c, double wait_s, char *err, size_t errlen);
/* Takes a finished result: handle 0 = any. Returns 1 when *out was filled
 * (release it with kv_llm_result_release), 0 when none is ready. */
int kv_llm_complete(struct kv_llm *c, uint64_t handle, struct kv_llm_result *out);
/* Polls until `handle` finishes or wait_s passes: 1 filled, 0 not yet, < 0
 * client failure. */
int kv_llm_wait(struct kv_llm *c, uint64_t handle, double wait_s, struct kv_llm_result *out,
                char *err, size_t errlen);
/* Submitted and not yet completed. */
int kv_llm_pending(const struct kv_llm *c);
void kv_llm_spent(const struct kv_llm *c, struct kv_llm_spend *out);
/* The caps the client was made with (kevo adapt --jobs shares what is left
 * of them among its workers' clients). */
void kv_llm_budget_of(const struct kv_llm *c, struct kv_llm_budget *out);
const struct kv_llm_model *kv_llm_model_of(const struct kv_llm *c);

/* Blocking: submit, wait (bounded by the call's deadline), complete. Returns
 * out->code; out is always filled (release it). */
int kv_llm_ask(struct kv_llm *c, const struct kv_llm_request *req, struct kv_llm_result *out);

/* The replay key of a request for a model: sha256 over provider, model id,
 * system prompt, messages, max_tokens, temperature, top_p and the sample
 * index, as 64 hex digits. `provider` NULL: the model's. */
int kv_llm_cache_key(const struct kv_llm_model *m, const char *provider,
                     const struct kv_llm_request *req, char out[65], char *err, size_t errlen);

#endif
