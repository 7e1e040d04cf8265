/* The client: calls in flight on one curl multi handle, with deadlines,
 * retries, budgets and recording.
 *
 * A call's life: submit (validated, budget reserved, queued) -> started when
 * a slot is free (an attempt: one HTTP request) -> on failure either queued
 * again after a backoff or finished -> finished (spend charged, recorded in
 * the store, on_spend called) -> completed by the caller (freed). Replay calls
 * finish inside submit. Every wait is bounded by the call's deadline.
 *
 * The transfers run on the client's own I/O thread, the only one that
 * touches the curl multi handle: requests go out and replies come in while
 * the caller is busy (judging a kernel for seconds), so a reply that came at
 * once is neither timed out by curl nor given the caller's delay as its
 * latency. The caller's thread keeps everything else (the queue, retries,
 * spend, the store): it asks the I/O thread to add or remove a transfer and
 * takes the finished ones, under c->mu. */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "kevo/store.h"
#include "kevo/util.h"

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

enum { ST_WAIT, ST_ACTIVE, ST_DONE };
/* An oversized response is recorded only up to this much. */
enum { STORED_OVERSIZED_MAX = 64 << 10 };
/* ask() waits this long past a call's deadline before abandoning it. */
#define ASK_SLACK_S 5.0

struct call {
  struct call *next;
  uint64_t handle, done_seq;
  int state;
  CURL *easy;
  struct curl_slist *headers;
  char *body; /* the request JSON: sent, and recorded */
  char url[640];
  char *key; /* kept only to scrub it from what the server sends back */
  struct kv_buf resp;
  int oversized, nomem;
  double t_submit, t_deadline, t_next;
  char role[64];
  char status[24]; /* the recorded status when finer than the code's name */
  int sample;
  int64_t run_id, node_id;
  int max_tokens;
  int64_t est_input;
  double reserved_usd;
  int64_t reserved_tokens;
  char curl_err[CURL_ERROR_SIZE];
  struct kv_llm_result res;
  /* With the I/O thread, under kv_llm.mu: add it, remove it (and say when
   * it is out), its transfer is over (with curl's code, at t_io). */
  int io_add, io_remove, io_out, io_done;
  CURLcode io_cc;
  double t_io, t_end; /* t_end: when the attempt ended (0: now) */
};

struct kv_llm {
  struct kv_llm_model m;
  const struct llm_provider *p;
  struct kv_store *store;
  struct kv_llm_budget budget;
  void (*on_spend)(void *, const struct kv_llm_spend *, const struct kv_llm_result *);
  void *on_spend_arg;
  CURLM *multi;
  struct call *calls; /* submitted and not completed, in submit order */
  uint64_t next_handle, done_seq;
  int active, ready;
  struct kv_llm_spend spend;
  uint64_t rng;
  /* The I/O thread (network providers). */
  pthread_t io;
  int io_on, io_stop;
  pthread_mutex_t mu;
  pthread_cond_t io_cv; /* the I/O thread -> the caller: a transfer is over or out */
};

/* ---- small helpers ------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static double rand01(struct kv_llm *c) {
  return kv_unit01(&c->rng);
}

/* Overwrites every occurrence of key in s with '*'. */
static void redact(char *s, size_t len, const char *key) {
  if (!s || !key)
    return;
  size_t kl = strlen(key);
  if (kl == 0 || kl > len)
    return;
  for (char *p = s; (p = memmem(p, len - (size_t)(p - s), key, kl)) != NULL; p += kl)
    memset(p, '*', kl);
}

static void wipe_slist(struct curl_slist *h) {
  for (struct curl_slist *x = h; x; x = x->next)
    explicit_bzero(x->data, strlen(x->data));
  curl_slist_free_all(h);
}

static void seterr(struct call *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(struct call *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->res.error, sizeof k->res.error, fmt, ap);
  va_end(ap);
}

static void adderr(struct call *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void adderr(struct call *k, const char *fmt, ...) {
  size_t n = strlen(k->res.error);
  if (n + 1 >= sizeof k->res.error)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->res.error + n, sizeof k->res.error - n, fmt, ap);
  va_end(ap);
}

static void io_remove(struct kv_llm *c, struct call *k);
static void *io_main(void *arg);

static void call_free(struct kv_llm *c, struct call *k) {
  if (!k)
    return;
  if (k->easy) {
    if (k->state == ST_ACTIVE)
      io_remove(c, k);
    curl_easy_cleanup(k->easy);
  }
  wipe_slist(k->headers);
  free(k->body);
  if (k->key) {
    explicit_bzero(k->key, strlen(k->key));
    free(k->key);
  }
  kv_buf_release(&k->resp);
  kv_llm_result_release(&k->res);
  free(k);
}

void kv_llm_result_release(struct kv_llm_result *r) {
  if (!r)
    return;
  free(r->text);
  free(r->stop_reason);
  r->text = r->stop_reason = NULL;
}

static double cost_of(const struct kv_llm_model *m, int64_t in, int64_t out) {
  return (double)in * m->input_usd_per_mtok / 1e6 + (double)out * m->output_usd_per_mtok / 1e6;
}

/* ---- the client --------------------------------------------------------- */

int kv_llm_new(const struct kv_llm_opts *o, struct kv_llm **out, char *err, size_t errlen) {
  if (out)
    *out = NULL;
  if (!o || !o->model || !out)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "llm: no options or model (a bug in the caller)");
  const struct kv_llm_model *m = o->model;
  const struct llm_provider *p = llm_provider_find(m->provider);
  if (!p)
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "provider: '%s' is unknown; use openai, anthropic or replay", m->provider);
  if (!m->model[0])
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "model: no model id for provider %s; pass --model ID or set \"model\" in the "
                    "config's model entry",
                    p->name);
  if (p->network && strncmp(m->base_url, "http://", 7) && strncmp(m->base_url, "https://", 8))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "base_url: '%s' is not an http:// or https:// URL; fix --base-url or "
                    "\"base_url\" in the config",
                    m->base_url);
  if (!p->network && !o->store)
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "replay answers from recorded calls: open a store (--db PATH or KEVO_DB)");
  if (m->concurrency < 1 || m->concurrency > 256)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "concurrency: %d; use 1 to 256", m->concurrency);
  if (!(m->timeout_s > 0) || !(m->connect_timeout_s > 0))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "timeout: %g s, connect_timeout: %g s; both must be positive", m->timeout_s,
                    m->connect_timeout_s);
  if (m->max_attempts < 1)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "max_attempts: %d; use 1 or more", m->max_attempts);
  if (m->max_response_bytes < 1024)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "max_response_bytes: %zu; use 1024 or more",
                    m->max_response_bytes);
  if (m->max_tokens < 1)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "max_tokens: %d; use a positive number",
                    m->max_tokens);
  if (m->input_usd_per_mtok < 0 || m->output_usd_per_mtok < 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "prices: must not be negative");
  if (o->budget.max_usd < 0 || o->budget.max_tokens < 0 || o->budget.max_calls < 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "budget: caps must not be negative (0: no cap)");
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK)
    return llm_fail(KV_LLM_ENET, err, errlen, "libcurl failed to initialize: %s",
                    curl_easy_strerror(curl_init_rc));

  struct kv_llm *c = calloc(1, sizeof *c);
  if (!c)
    return llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: out of memory");
  c->m = *m;
  c->p = p;
  c->store = o->store;
  c->budget = o->budget;
  c->on_spend = o->on_spend;
  c->on_spend_arg = o->on_spend_arg;
  c->rng = o->jitter_seed ? o->jitter_seed : kv_random_u64();
  c->next_handle = 1;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->io_cv, &ca);
  pthread_condattr_destroy(&ca);
  if (p->network) {
    c->multi = curl_multi_init();
    if (!c->multi) {
      kv_llm_free(c);
      return llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: curl_multi_init failed");
    }
    /* The I/O thread takes no signals: they stay the caller's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->io, NULL, io_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
      kv_llm_free(c);
      return llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: cannot start the I/O thread: %s",
                      strerror(rc));
    }
    c->io_on = 1;
  }
  *out = c;
  return 0;
}

void kv_llm_free(struct kv_llm *c) {
  if (!c)
    return;
  if (c->io_on) { /* stopped first: then the multi handle is this thread's */
    pthread_mutex_lock(&c->mu);
    c->io_stop = 1;
    pthread_mutex_unlock(&c->mu);
    curl_multi_wakeup(c->multi);
    pthread_join(c->io, NULL);
    c->io_on = 0;
  }
  while (c->calls) {
    struct call *k = c->calls;
    c->calls = k->next;
    call_free(c, k);
  }
  if (c->multi)
    curl_multi_cleanup(c->multi);
  pthread_cond_destroy(&c->io_cv);
  pthread_mutex_destroy(&c->mu);
  explicit_bzero(c, sizeof *c);
  free(c);
}

const struct kv_llm_model *kv_llm_model_of(const struct kv_llm *c) {
  return c ? &c->m : NULL;
}

void kv_llm_spent(const struct kv_llm *c, struct kv_llm_spend *out) {
  memset(out, 0, sizeof *out);
  if (c) {
    *out = c->spend;
    out->in_flight = kv_llm_pending(c) - c->ready;
  }
}

void kv_llm_budget_of(const struct kv_llm *c, struct kv_llm_budget *out) {
  memset(out, 0, sizeof *out);
  if (c)
    *out = c->budget;
}

int kv_llm_pending(const struct kv_llm *c) {
  int n = 0;
  for (const struct call *k = c ? c->calls : NULL; k; k = k->next)
    n++;
  return n;
}

/* ---- finishing a call --------------------------------------------------- */

static void record(struct kv_llm *c, struct call *k) {
  if (!c->store)
    return;
  const char *body = k->resp.data;
  char *cut = NULL;
  if (k->oversized && k->resp.len > STORED_OVERSIZED_MAX) {
    cut = strndup(k->resp.data, STORED_OVERSIZED_MAX);
    body = cut;
  }
  struct kv_llm_call_record r = {
      .role = k->role,
      .provider = c->m.provider,
      .model = c->m.model,
      .base_url = c->p->network ? c->m.base_url : NULL,
      .cache_key = k->res.cache_key,
      .sample = k->sample,
      .request_json = k->body ? k->body : "{}",
      .response_body = body,
      .reply_text = k->res.text,
      .status = k->status[0] ? k->status : kv_llm_code_name(k->res.code),
      .error = k->res.code ? k->res.error : NULL,
      .http_status = k->res.http_status,
      .attempts = k->res.attempts,
      .latency_s = k->res.latency_s,
      .input_tokens = k->res.input_tokens,
      .output_tokens = k->res.output_tokens,
      .cost_usd = k->res.cost_usd,
      .run_id = k->run_id,
      .node_id = k->node_id,
  };
  int64_t id = 0;
  if (kv_store_add_llm_call(c->store, &r, &id, k->res.record_error, sizeof k->res.record_error) ==
      0)
    k->res.call_id = id;
  free(cut);
}

/* Finishes k with its result code (error text already in k->res.error):
 * charges the spend, records, notifies. */
static void finish(struct kv_llm *c, struct call *k, int code) {
  k->res.code = code;
  if (code == KV_LLM_OK)
    k->res.error[0] = '\0';
  k->res.latency_s = (k->t_end > 0 ? k->t_end : kv_now_s()) - k->t_submit;
  if (k->key) {
    redact(k->res.error, strlen(k->res.error), k->key);
    redact(k->resp.data, k->resp.len, k->key);
    if (k->res.text)
      redact(k->res.text, strlen(k->res.text), k->key);
  }
  c->spend.reserved_usd -= k->reserved_usd;
  c->spend.reserved_tokens -= k->reserved_tokens;
  if (c->spend.reserved_usd < 1e-12)
    c->spend.reserved_usd = 0;
  if (!k->res.replayed) {
    /* A 2xx reply may have been billed even when its usage cannot be read:
     * charge what is unknown at its worst case. */
    int billed = k->res.http_status >= 200 && k->res.http_status < 300;
    int64_t in = k->res.input_tokens >= 0 ? k->res.input_tokens : (billed ? k->est_input : 0);
    int64_t out = k->res.output_tokens >= 0 ? k->res.output_tokens : (billed ? k->max_tokens : 0);
    k->res.cost_usd = cost_of(&c->m, in, out);
    c->spend.input_tokens += in;
    c->spend.output_tokens += out;
  } else {
    c->spend.input_tokens += k->res.input_tokens > 0 ? k->res.input_tokens : 0;
    c->spend.output_tokens += k->res.output_tokens > 0 ? k->res.output_tokens : 0;
  }
  c->spend.usd += k->res.cost_usd;
  record(c, k);
  k->state = ST_DONE;
  k->done_seq = ++c->done_seq;
  c->ready++;
  if (c->on_spend) {
    struct kv_llm_spend s;
    kv_llm_spent(c, &s);
    c->on_spend(c->on_spend_arg, &s, &k->res);
  }
}

/* The attempt failed in a way worth retrying (network error, 408, 409, 429,
 * 5xx): schedule another attempt after a backoff, or finish with `code`.
 * retry_after < 0: the server did not say. */
static void retry_or_finish(struct kv_llm *c, struct call *k, int code, double retry_after) {
  double now = kv_now_s();
  if (k->res.attempts >= c->m.max_attempts) {
    adderr(k, " (gave up after %d attempts)", k->res.attempts);
    finish(c, k, code);
    return;
  }
  double delay;
  if (retry_after >= 0) {
    delay = retry_after < c->m.retry_after_max_s ? retry_after : c->m.retry_after_max_s;
  } else {
    delay = llm_backoff(&c->m, k->res.attempts, rand01(c));
  }
  if (now + delay >= k->t_deadline) {
    adderr(k, " (gave up after %d attempt%s: waiting %.1f s more would pass the call's deadline)",
           k->res.attempts, k->res.attempts == 1 ? "" : "s", delay);
    finish(c, k, code);
    return;
  }
  k->t_next = now + delay;
  k->state = ST_WAIT;
}

double llm_backoff(const struct kv_llm_model *m, int attempts, double u) {
  /* Exponential backoff with jitter: base * 2^(n-1), capped, times [0.5, 1). */
  double d = m->backoff_s * ldexp(1.0, attempts > 1 ? attempts - 1 : 0);
  if (d > m->backoff_max_s)
    d = m->backoff_max_s;
  return d * (0.5 + 0.5 * u);
}

/* Seconds in a Retry-After header (delta-seconds form), or -1. */
static double retry_after_of(CURL *easy) {
  struct curl_header *h = NULL;
  if (curl_easy_header(easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h ||
      !h->value)
    return -1;
  const char *s = h->value;
  while (*s == ' ' || *s == '\t')
    s++;
  if (*s < '0' || *s > '9')
    return -1; /* an HTTP date: fall back to our own backoff */
  double v = 0;
  while (*s >= '0' && *s <= '9' && v < 1e7)
    v = v * 10 + (*s++ - '0');
  while (*s == ' ' || *s == '\t')
    s++;
  return *s ? -1 : v;
}

static const char *key_hint(const struct kv_llm *c) {
  return c->m.api_key_env[0] ? c->m.api_key_env : NULL;
}

/* One attempt is over: decide what it means. */
static void attempt_done(struct kv_llm *c, struct call *k, CURLcode cc) {
  long http = 0;
  curl_easy_getinfo(k->easy, CURLINFO_RESPONSE_CODE, &http);
  k->res.http_status = (int)http;
  const char *pn = c->p->name;
  const char *url = k->url;
  double now = k->t_end > 0 ? k->t_end : kv_now_s(); /* when the attempt ended */
  k->status[0] = '\0';

  if (k->nomem) {
    seterr(k, "%s: out of memory receiving the response from %s", pn, url);
    finish(c, k, KV_LLM_ENOMEM);
    return;
  }
  if (k->oversized || cc == CURLE_FILESIZE_EXCEEDED) {
    k->oversized = 1;
    snprintf(k->status, sizeof k->status, "oversized");
    seterr(k,
           "%s: the response from %s exceeds the cap of %zu bytes (max_response_bytes); not "
           "retried",
           pn, url, c->m.max_response_bytes);
    finish(c, k, KV_LLM_EBODY);
    return;
  }
  if (cc != CURLE_OK) {
    const char *why = k->curl_err[0] ? k->curl_err : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
      if (now >= k->t_deadline - 0.01) {
        seterr(k,
               "%s: no complete reply from %s within the call's deadline of %.3g s; raise "
               "\"timeout\" in the config or pass --timeout",
               pn, url, k->t_deadline - k->t_submit);
        finish(c, k, KV_LLM_ETIMEOUT);
        return;
      }
      seterr(k, "%s: cannot connect to %s: %s", pn, url, why);
      retry_or_finish(c, k, KV_LLM_ENET, -1);
      return;
    case CURLE_PARTIAL_FILE:
      snprintf(k->status, sizeof k->status, "truncated");
      seterr(k, "%s: the response from %s was cut short: %s", pn, url, why);
      retry_or_finish(c, k, KV_LLM_EBODY, -1);
      return;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      seterr(k, "%s: cannot get a reply from %s: %s", pn, url, why);
      retry_or_finish(c, k, KV_LLM_ENET, -1);
      return;
    default:
      seterr(k, "%s: request to %s failed: %s; not retried", pn, url, why);
      finish(c, k, KV_LLM_ENET);
      return;
    }
  }

  char api[256];
  llm_error_text(k->resp.data, k->resp.len, api, sizeof api);
  if (http == 401 || http == 403) {
    if (key_hint(c))
      seterr(k,
             "%s: HTTP %ld from %s%s%s: the key in %s was rejected; set %s to a valid key for "
             "this server",
             pn, http, url, api[0] ? ": " : "", api, key_hint(c), key_hint(c));
    else
      seterr(k,
             "%s: HTTP %ld from %s%s%s: the server wants a key; put it in an environment "
             "variable and name that variable with api_key_env (--api-key-env)",
             pn, http, url, api[0] ? ": " : "", api);
    finish(c, k, KV_LLM_EAUTH);
    return;
  }
  if (http == 408 || http == 409 || http == 429 || (http >= 500 && http <= 599)) {
    double ra = retry_after_of(k->easy);
    seterr(k, "%s: HTTP %ld from %s%s%s", pn, http, url, api[0] ? ": " : "", api);
    retry_or_finish(c, k, KV_LLM_EHTTP, ra);
    return;
  }
  if (http < 200 || http > 299) {
    char snippet[160] = "";
    if (!api[0] && k->resp.data) {
      size_t j = 0;
      for (size_t i = 0; i < k->resp.len && j + 1 < sizeof snippet; i++)
        snippet[j++] = (unsigned char)k->resp.data[i] < 0x20 ? ' ' : k->resp.data[i];
      snippet[j] = '\0';
    }
    seterr(k, "%s: HTTP %ld from %s: %s; not retried (the server refused the request itself)", pn,
           http, url,
           api[0]       ? api
           : snippet[0] ? snippet
                        : "(no message)");
    finish(c, k, KV_LLM_EHTTP);
    return;
  }
  struct llm_reply rep;
  char perr[512];
  int rc = c->p->parse(k->resp.data, k->resp.len, &rep, perr, sizeof perr);
  if (rc < 0) {
    snprintf(k->status, sizeof k->status, "%s",
             k->resp.len == 0                  ? "empty"
             : strstr(perr, "is not JSON")     ? "malformed"
             : strstr(perr, "JSON but not an") ? "malformed"
                                               : "bad_reply");
    seterr(k, "%s: HTTP %ld from %s, but %s; not retried", pn, http, url, perr);
    finish(c, k, rc);
    return;
  }
  k->res.text = rep.text;
  k->res.stop_reason = rep.stop_reason;
  k->res.input_tokens = rep.input_tokens;
  k->res.output_tokens = rep.output_tokens;
  finish(c, k, KV_LLM_OK);
}

/* ---- transfers ---------------------------------------------------------- */

static size_t on_data(char *p, size_t size, size_t n, void *arg) {
  struct call *k = arg;
  size_t len = size * n;
  if (len > k->resp.max - k->resp.len) {
    k->oversized = 1;
    return 0; /* not len: curl aborts the transfer */
  }
  if (kv_buf_append(&k->resp, p, len) < 0) {
    k->nomem = 1;
    return 0;
  }
  return len;
}

static long ms_of(double s) {
  double ms = ceil(s * 1000.0);
  return ms < 1 ? 1 : ms > 1e9 ? 1000000000L : (long)ms;
}

static void start_attempt(struct kv_llm *c, struct call *k, double now) {
  double left = k->t_deadline - now;
  kv_buf_reset(&k->resp);
  k->oversized = k->nomem = 0;
  k->curl_err[0] = '\0';
  double conn = c->m.connect_timeout_s < left ? c->m.connect_timeout_s : left;
  k->t_end = 0;
  curl_easy_setopt(k->easy, CURLOPT_TIMEOUT_MS, ms_of(left));
  curl_easy_setopt(k->easy, CURLOPT_CONNECTTIMEOUT_MS, ms_of(conn));
  pthread_mutex_lock(&c->mu);
  k->io_add = 1;
  k->io_done = k->io_out = 0;
  pthread_mutex_unlock(&c->mu);
  curl_multi_wakeup(c->multi);
  k->res.attempts++;
  k->state = ST_ACTIVE;
  c->active++;
}

/* Starts the queued calls whose time has come while slots are free; finishes
 * those whose deadline passed while they waited. */
static void start_due(struct kv_llm *c) {
  double now = kv_now_s();
  for (struct call *k = c->calls; k; k = k->next) {
    if (k->state != ST_WAIT)
      continue;
    if (now >= k->t_deadline) {
      if (k->res.attempts == 0)
        seterr(k,
               "%s: the call's deadline of %.3g s passed while it waited for a free slot "
               "(concurrency %d)",
               c->p->name, k->t_deadline - k->t_submit, c->m.concurrency);
      else
        adderr(k, " (the call's deadline passed before the next attempt)");
      finish(c, k, KV_LLM_ETIMEOUT);
      continue;
    }
    if (k->t_next <= now && c->active < c->m.concurrency)
      start_attempt(c, k, now);
  }
}

/* The I/O thread: adds and removes transfers as the caller asks, runs them,
 * and marks each one that is over (with curl's code and the time). The only
 * thread that touches the multi handle while it runs. */
static void *io_main(void *arg) {
  struct kv_llm *c = arg;
  pthread_mutex_lock(&c->mu);
  while (!c->io_stop) {
    for (struct call *k = c->calls; k; k = k->next) {
      if (k->io_add) {
        k->io_add = 0;
        CURLMcode mc = curl_multi_add_handle(c->multi, k->easy);
        if (mc != CURLM_OK) {
          snprintf(k->curl_err, sizeof k->curl_err, "cannot start the request: %s",
                   curl_multi_strerror(mc));
          k->io_cc = CURLE_FAILED_INIT;
          k->t_io = kv_now_s();
          k->io_done = 1;
          pthread_cond_broadcast(&c->io_cv);
        }
      }
      if (k->io_remove) {
        k->io_remove = 0;
        curl_multi_remove_handle(c->multi, k->easy);
        k->io_out = 1;
        pthread_cond_broadcast(&c->io_cv);
      }
    }
    pthread_mutex_unlock(&c->mu);
    int running = 0;
    curl_multi_perform(c->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      char *priv = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      CURLcode cc = msg->data.result;
      curl_multi_remove_handle(c->multi, msg->easy_handle);
      struct call *k = (struct call *)priv;
      if (!k)
        continue;
      double t = kv_now_s();
      pthread_mutex_lock(&c->mu);
      k->io_cc = cc;
      k->t_io = t;
      k->io_done = 1;
      pthread_cond_broadcast(&c->io_cv);
      pthread_mutex_unlock(&c->mu);
    }
    /* until a socket is ready, curl's timer, or the caller's wake-up */
    curl_multi_poll(c->multi, NULL, 0, 1000, NULL);
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* Takes k's transfer out of the multi handle (the caller's side): through the
 * I/O thread while it runs, which answers within one of its turns. */
static void io_remove(struct kv_llm *c, struct call *k) {
  if (!c->io_on) {
    curl_multi_remove_handle(c->multi, k->easy);
    return;
  }
  pthread_mutex_lock(&c->mu);
  k->io_add = k->io_out = 0;
  k->io_remove = 1;
  curl_multi_wakeup(c->multi);
  while (!k->io_out)
    pthread_cond_wait(&c->io_cv, &c->mu);
  k->io_done = 0;
  pthread_mutex_unlock(&c->mu);
}

/* The transfers the I/O thread finished: each attempt decided, at the time
 * it ended. */
static void reap(struct kv_llm *c) {
  for (;;) {
    struct call *k;
    pthread_mutex_lock(&c->mu);
    for (k = c->calls; k && !k->io_done; k = k->next)
      ;
    if (k)
      k->io_done = 0;
    pthread_mutex_unlock(&c->mu);
    if (!k)
      return;
    c->active--;
    k->state = ST_WAIT; /* until attempt_done decides */
    k->t_end = k->t_io;
    attempt_done(c, k, k->io_cc);
  }
}

/* A finished transfer not yet reaped (the caller holds c->mu). */
static int io_any_done(const struct kv_llm *c) {
  for (const struct call *k = c->calls; k; k = k->next)
    if (k->io_done)
      return 1;
  return 0;
}

static struct call *find(struct kv_llm *c, uint64_t handle) {
  for (struct call *k = c->calls; k; k = k->next)
    if (k->handle == handle)
      return k;
  return NULL;
}

static int is_done(struct kv_llm *c, uint64_t handle) {
  if (handle == 0)
    return c->ready > 0;
  struct call *k = find(c, handle);
  return k && k->state == ST_DONE;
}

/* Takes what the I/O thread finished and starts what is due until `handle`
 * is done (0: any result is ready), nothing is in flight, or `end`
 * (monotonic seconds) passes. 1 done, 0 not. */
static int drive(struct kv_llm *c, double end, uint64_t handle) {
  for (;;) {
    if (c->multi) {
      reap(c);
      start_due(c);
    }
    if (is_done(c, handle))
      return 1;
    if (kv_llm_pending(c) == c->ready || !c->multi)
      return 0;
    double now = kv_now_s();
    if (now >= end)
      return 0;
    double wake = end;
    for (struct call *k = c->calls; k; k = k->next) {
      if (k->state != ST_WAIT)
        continue;
      if (k->t_next > now && k->t_next < wake)
        wake = k->t_next;
      if (k->t_deadline < wake)
        wake = k->t_deadline;
    }
    if (wake > now + 1.0)
      wake = now + 1.0;
    /* wake up on the clock kevo's times are on (the condition's is
     * CLOCK_MONOTONIC, as kv_now_s) */
    struct timespec ts;
    double w = wake > now ? wake : now;
    ts.tv_sec = (time_t)w;
    ts.tv_nsec = (long)((w - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->mu);
    if (!io_any_done(c))
      pthread_cond_timedwait(&c->io_cv, &c->mu, &ts);
    pthread_mutex_unlock(&c->mu);
  }
}

/* ---- submit / poll / complete ------------------------------------------- */

static int check_budget(struct kv_llm *c, int64_t est_in, int max_tokens, char *err,
                        size_t errlen) {
  const struct kv_llm_budget *b = &c->budget;
  const struct kv_llm_spend *s = &c->spend;
  if (b->max_calls > 0 && s->calls + 1 > b->max_calls)
    return llm_fail(KV_LLM_EBUDGET, err, errlen,
                    "budget: %lld of the cap of %lld calls made; not sent (raise budget.calls)",
                    (long long)s->calls, (long long)b->max_calls);
  int64_t worst_tokens = est_in + max_tokens;
  int64_t used = s->input_tokens + s->output_tokens + s->reserved_tokens;
  if (b->max_tokens > 0 && used + worst_tokens > b->max_tokens)
    return llm_fail(KV_LLM_EBUDGET, err, errlen,
                    "budget: this request could use %lld tokens (about %lld in + max_tokens %d) "
                    "and %lld of the cap of %lld are used or reserved; not sent (lower "
                    "max_tokens or raise budget.tokens)",
                    (long long)worst_tokens, (long long)est_in, max_tokens, (long long)used,
                    (long long)b->max_tokens);
  double worst_usd = cost_of(&c->m, est_in, max_tokens);
  double spent = s->usd + s->reserved_usd;
  if (b->max_usd > 0 && spent + worst_usd > b->max_usd * (1 + 1e-12))
    return llm_fail(KV_LLM_EBUDGET, err, errlen,
                    "budget: this request could cost $%.6f (about %lld input tokens + "
                    "max_tokens %d) and $%.6f of the $%.6f cap is spent or reserved; not sent "
                    "(lower max_tokens or raise budget.usd / --max-usd)",
                    worst_usd, (long long)est_in, max_tokens, spent, b->max_usd);
  return 0;
}

static int64_t estimate_input(const struct llm_req *r) {
  size_t bytes = r->system ? strlen(r->system) : 0;
  for (size_t i = 0; i < r->n_messages; i++)
    bytes += strlen(r->messages[i].content);
  return (int64_t)((bytes + 2) / 3);
}

static struct call *new_call(struct kv_llm *c, const struct kv_llm_request *req,
                             const struct llm_req *r) {
  struct call *k = calloc(1, sizeof *k);
  if (!k)
    return NULL;
  k->handle = c->next_handle++;
  k->res.handle = k->handle;
  k->res.input_tokens = k->res.output_tokens = -1;
  k->t_submit = kv_now_s();
  k->t_deadline = k->t_submit + (req->deadline_s > 0 ? req->deadline_s : c->m.timeout_s);
  snprintf(k->role, sizeof k->role, "%s", req->role && *req->role ? req->role : "ask");
  k->sample = r->sample;
  k->run_id = req->run_id;
  k->node_id = req->node_id;
  k->max_tokens = r->max_tokens;
  k->est_input = estimate_input(r);
  kv_buf_init(&k->resp, c->m.max_response_bytes);
  return k;
}

static void enqueue(struct kv_llm *c, struct call *k) {
  pthread_mutex_lock(&c->mu); /* the I/O thread walks the list */
  struct call **pp = &c->calls;
  while (*pp)
    pp = &(*pp)->next;
  *pp = k;
  pthread_mutex_unlock(&c->mu);
}

/* Answers k from the store at once (hit or miss, it finishes here). */
static void submit_replay(struct kv_llm *c, struct call *k, const struct llm_req *r) {
  struct kv_llm_call_row row;
  char lerr[sizeof k->res.error];
  const char *as = NULL;
  int rc = llm_replay_lookup(c->store, &c->m, r, &row, k->res.cache_key, &as, lerr, sizeof lerr);
  /* What is recorded as the request: the key material, as it was looked up. */
  k->body = llm_key_json(as ? as : "", c->m.model, r);
  c->spend.calls++;
  enqueue(c, k);
  if (rc == 1) {
    k->res.replayed = 1;
    k->res.text = row.reply_text ? strdup(row.reply_text) : strdup("");
    k->res.stop_reason = NULL;
    k->res.input_tokens = row.input_tokens;
    k->res.output_tokens = row.output_tokens;
    k->res.cost_usd = row.cost_usd > 0 ? row.cost_usd : 0;
    k->res.http_status = 0;
    kv_llm_call_row_release(&row);
    if (!k->res.text) {
      seterr(k, "replay: out of memory");
      finish(c, k, KV_LLM_ENOMEM);
    } else {
      finish(c, k, KV_LLM_OK);
    }
    return;
  }
  snprintf(k->res.error, sizeof k->res.error, "%s", lerr);
  finish(c, k, rc < 0 ? rc : KV_LLM_ENOTRECORDED);
}

int kv_llm_submit(struct kv_llm *c, const struct kv_llm_request *req, uint64_t *handle, char *err,
                  size_t errlen) {
  if (handle)
    *handle = 0;
  if (!c)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "llm: no client (a bug in the caller)");
  struct llm_req r;
  int rc = llm_req_resolve(&c->m, req, &r, err, errlen);
  if (rc < 0)
    return rc;

  /* The key: from the environment, checked before anything is sent. */
  const char *key = NULL;
  if (c->p->network && c->m.api_key_env[0]) {
    key = getenv(c->m.api_key_env);
    if (!key || !*key)
      return llm_fail(KV_LLM_ENOKEY, err, errlen,
                      "%s: the environment variable %s is not set; export %s=<your key> (model "
                      "'%s' names it with api_key_env; for a server that needs no key, set "
                      "api_key_env to \"\" or pass --api-key-env \"\")",
                      c->p->name, c->m.api_key_env, c->m.api_key_env,
                      c->m.name[0] ? c->m.name : c->m.model);
    if (strpbrk(key, "\r\n"))
      return llm_fail(KV_LLM_ENOKEY, err, errlen,
                      "%s: the environment variable %s holds a line break; set it to the key "
                      "alone",
                      c->p->name, c->m.api_key_env);
  }

  int64_t est = estimate_input(&r);
  rc = check_budget(c, est, r.max_tokens, err, errlen);
  if (rc < 0)
    return rc;

  struct call *k = new_call(c, req, &r);
  if (!k)
    return llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: out of memory");
  k->reserved_tokens = est + r.max_tokens;
  k->reserved_usd = cost_of(&c->m, est, r.max_tokens);
  c->spend.reserved_tokens += k->reserved_tokens;
  c->spend.reserved_usd += k->reserved_usd;

  if (!c->p->network) {
    submit_replay(c, k, &r);
    if (handle)
      *handle = k->handle;
    return 0;
  }

  llm_key_of(c->p->name, c->m.model, &r, k->res.cache_key);
  k->body = c->p->body(&c->m, &r);
  rc = c->p->url(&c->m, k->url, sizeof k->url, err, errlen);
  if (rc < 0 || !k->body)
    goto fail;
  if (key && !(k->key = strdup(key)))
    goto nomem;
  struct curl_slist *h = NULL;
  h = llm_header(h, "Content-Type", "application/json");
  if (h)
    h = llm_header(h, "Accept", "application/json");
  if (h)
    h = curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
  if (h)
    h = c->p->headers(&c->m, key, h);
  if (!h)
    goto nomem;
  k->headers = h;
  k->easy = curl_easy_init();
  if (!k->easy)
    goto nomem;
  CURL *e = k->easy;
  curl_easy_setopt(e, CURLOPT_URL, k->url);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L); /* never carry the key elsewhere */
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, k->body);
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(k->body));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, k->headers);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "kevo/" KEVO_VERSION);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->m.max_response_bytes);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, k->curl_err);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)k);
  k->state = ST_WAIT;
  k->t_next = k->t_submit;
  c->spend.calls++;
  enqueue(c, k);
  if (handle)
    *handle = k->handle;
  start_due(c); /* sent now, not at the caller's next poll */
  return 0;

nomem:
  rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: out of memory preparing the request");
  goto undo;
fail:
  if (rc >= 0)
    rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "llm: out of memory building the request body");
undo:
  c->spend.reserved_tokens -= k->reserved_tokens;
  c->spend.reserved_usd -= k->reserved_usd;
  call_free(c, k);
  return rc;
}

int kv_llm_poll(struct kv_llm *c, double wait_s, char *err, size_t errlen) {
  if (!c)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "llm: no client (a bug in the caller)");
  double end = kv_now_s() + (wait_s > 0 ? wait_s : 0);
  drive(c, end, 0);
  return c->ready;
}

int kv_llm_complete(struct kv_llm *c, uint64_t handle, struct kv_llm_result *out) {
  if (!c || !out)
    return 0;
  struct call **best = NULL;
  for (struct call **pp = &c->calls; *pp; pp = &(*pp)->next) {
    struct call *k = *pp;
    if (k->state != ST_DONE || (handle && k->handle != handle))
      continue;
    if (!best || k->done_seq < (*best)->done_seq)
      best = pp;
  }
  if (!best)
    return 0;
  struct call *k = *best;
  pthread_mutex_lock(&c->mu);
  *best = k->next;
  pthread_mutex_unlock(&c->mu);
  *out = k->res;
  memset(&k->res, 0, sizeof k->res); /* ownership of text moved to out */
  c->ready--;
  call_free(c, k);
  return 1;
}

int kv_llm_wait(struct kv_llm *c, uint64_t handle, double wait_s, struct kv_llm_result *out,
                char *err, size_t errlen) {
  if (!c || !out)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "llm: no client or result (a bug in the caller)");
  if (handle && !find(c, handle))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "llm: no call with handle %llu is pending (completed already?)",
                    (unsigned long long)handle);
  double end = kv_now_s() + (wait_s > 0 ? wait_s : 0);
  drive(c, end, handle);
  return kv_llm_complete(c, handle, out);
}

int kv_llm_ask(struct kv_llm *c, const struct kv_llm_request *req, struct kv_llm_result *out) {
  memset(out, 0, sizeof *out);
  out->input_tokens = out->output_tokens = -1;
  uint64_t h = 0;
  int rc = kv_llm_submit(c, req, &h, out->error, sizeof out->error);
  if (rc < 0) {
    out->code = rc;
    return rc;
  }
  struct call *k = find(c, h);
  double wait = k ? k->t_deadline - kv_now_s() + ASK_SLACK_S : ASK_SLACK_S;
  rc = kv_llm_wait(c, h, wait, out, out->error, sizeof out->error);
  if (rc == 1)
    return out->code;
  /* Not finished past its deadline (a bug) or the client failed: abandon it. */
  k = find(c, h);
  if (k && k->state != ST_DONE) {
    if (k->state == ST_ACTIVE) {
      io_remove(c, k);
      c->active--;
      k->state = ST_WAIT;
    }
    if (rc == 0)
      seterr(k, "%s: abandoned: no result %.0f s past the call's deadline", c->p->name,
             ASK_SLACK_S);
    else
      seterr(k, "%s", out->error);
    finish(c, k, rc < 0 ? rc : KV_LLM_ETIMEOUT);
  }
  kv_llm_complete(c, h, out);
  return out->code;
}
