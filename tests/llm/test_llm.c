/* The LLM client against the loopback stand-in server: both APIs, every
 * injected fault, retry timing, budgets, cost arithmetic, recording, replay
 * with the network off, and the key kept out of the store. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kevo/llm.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "standin.h"

/* Internal to lib/llm, tested directly. */
double llm_backoff(const struct kv_llm_model *m, int attempts, double u);

#define KEY_ENV "KEVO_TEST_LLM_KEY"
#define KEY "sk-standin-0123456789-SECRET-abcdef"

static char g_root[512];
static int g_seq;

/* One test's world: a store, a stand-in server, a model pointing at it. */
struct world {
  char db[600];
  struct kv_store *store;
  struct standin *srv;
  struct kv_llm_model m;
  struct kv_llm *c;
  struct kv_llm_budget budget;
  int spend_calls;
  struct kv_llm_spend last_spend;
};

static void on_spend(void *arg, const struct kv_llm_spend *s, const struct kv_llm_result *r) {
  struct world *w = arg;
  assert_non_null(r);
  w->spend_calls++;
  w->last_spend = *s;
}

static void world_open(struct world *w, const char *provider, const char *script) {
  memset(w, 0, sizeof *w);
  char err[1024] = "";
  snprintf(w->db, sizeof w->db, "%s/t%d.db", g_root, ++g_seq);
  assert_int_equal(kv_store_open(w->db, &w->store, err, sizeof err), 0);
  struct standin_opts so = {.key = KEY, .script = script, .max_requests = 32, .lifetime_s = 30};
  w->srv = standin_start(&so, err, sizeof err);
  if (!w->srv)
    fail_msg("standin: %s", err);
  assert_int_equal(kv_llm_model_defaults(&w->m, provider, err, sizeof err), 0);
  if (!strcmp(provider, "openai"))
    snprintf(w->m.base_url, sizeof w->m.base_url, "http://127.0.0.1:%d/v1", standin_port(w->srv));
  else
    snprintf(w->m.base_url, sizeof w->m.base_url, "http://127.0.0.1:%d", standin_port(w->srv));
  snprintf(w->m.model, sizeof w->m.model, "standin-model");
  snprintf(w->m.api_key_env, sizeof w->m.api_key_env, KEY_ENV);
  w->m.backoff_s = 0.05;
  w->m.backoff_max_s = 0.2;
  w->m.timeout_s = 10;
  w->m.max_tokens = 100;
  setenv(KEY_ENV, KEY, 1);
}

static void world_client(struct world *w) {
  char err[1024] = "";
  struct kv_llm_opts o = {.model = &w->m,
                          .store = w->store,
                          .budget = w->budget,
                          .on_spend = on_spend,
                          .on_spend_arg = w,
                          .jitter_seed = 42};
  int rc = kv_llm_new(&o, &w->c, err, sizeof err);
  if (rc != 0)
    fail_msg("kv_llm_new: %s", err);
}

static void world_close(struct world *w) {
  kv_llm_free(w->c);
  standin_stop(w->srv);
  kv_store_close(w->store);
  w->c = NULL;
  w->srv = NULL;
  w->store = NULL;
}

static struct kv_llm_request prompt(const char *text, struct kv_llm_message *msg) {
  struct kv_llm_request r;
  kv_llm_request_init(&r);
  msg->role = "user";
  msg->content = text;
  r.messages = msg;
  r.n_messages = 1;
  return r;
}

/* Asks once; returns the code, leaves the result in *out. */
static int ask(struct world *w, const char *text, struct kv_llm_result *out) {
  struct kv_llm_message msg;
  struct kv_llm_request r = prompt(text, &msg);
  return kv_llm_ask(w->c, &r, out);
}

static struct kv_llm_call_row row_of(struct world *w, int64_t id) {
  struct kv_llm_call_row row;
  char err[1024] = "";
  assert_true(id > 0);
  assert_int_equal(kv_store_get_llm_call(w->store, id, &row, err, sizeof err), 0);
  return row;
}

static double gap(struct world *w, int i) {
  struct standin_request a, b;
  assert_int_equal(standin_get(w->srv, i, &a), 0);
  assert_int_equal(standin_get(w->srv, i + 1, &b), 0);
  return b.t - a.t;
}

/* A port nothing listens on. */
static int closed_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* ---- both APIs, the happy path ------------------------------------------ */

static void test_openai_ok(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", NULL);
  w.m.input_usd_per_mtok = 3;
  w.m.output_usd_per_mtok = 15;
  w.m.temperature = 0.5;
  world_client(&w);
  struct kv_llm_message msg[2] = {{"user", "first"}, {"user", "hello \"world\"\n"}};
  struct kv_llm_request r;
  kv_llm_request_init(&r);
  r.role = "coder";
  r.system = "be brief";
  r.messages = msg;
  r.n_messages = 2;
  r.run_id = 5;
  r.node_id = 9;
  struct kv_llm_result res;
  assert_int_equal(kv_llm_ask(w.c, &r, &res), KV_LLM_OK);
  assert_string_equal(res.text, "echo 0: hello \"world\"\n");
  assert_string_equal(res.stop_reason, "stop");
  assert_int_equal(res.http_status, 200);
  assert_int_equal(res.attempts, 1);
  assert_int_equal(res.input_tokens, 11);
  assert_int_equal(res.output_tokens, 7);
  assert_float_equal(res.cost_usd, 11 * 3e-6 + 7 * 15e-6, 1e-15);
  assert_string_equal(res.record_error, "");
  assert_int_equal(strlen(res.cache_key), 64);

  /* What the server saw: the path, the Bearer key, the body. */
  assert_int_equal(standin_count(w.srv), 1);
  struct standin_request sr;
  assert_int_equal(standin_get(w.srv, 0, &sr), 0);
  assert_string_equal(sr.path, "/v1/chat/completions");
  assert_string_equal(sr.auth, "Bearer " KEY);
  assert_string_equal(sr.api_key, "");
  assert_non_null(strstr(sr.body, "\"model\":\"standin-model\""));
  assert_non_null(strstr(sr.body, "{\"role\":\"system\",\"content\":\"be brief\"}"));
  assert_non_null(strstr(sr.body, "\"max_tokens\":100"));
  assert_non_null(strstr(sr.body, "\"temperature\":0.5"));
  assert_null(strstr(sr.body, "top_p"));

  /* What the store holds: the body exactly as sent, the reply, the usage. */
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.request_json, sr.body);
  assert_string_equal(row.reply_text, res.text);
  assert_string_equal(row.status, "ok");
  assert_string_equal(row.role, "coder");
  assert_string_equal(row.provider, "openai");
  assert_string_equal(row.model, "standin-model");
  assert_string_equal(row.cache_key, res.cache_key);
  assert_int_equal(row.run_id, 5);
  assert_int_equal(row.node_id, 9);
  assert_int_equal(row.attempts, 1);
  assert_int_equal(row.http_status, 200);
  assert_int_equal(row.input_tokens, 11);
  assert_int_equal(row.output_tokens, 7);
  assert_float_equal(row.cost_usd, res.cost_usd, 1e-15);
  assert_true(row.latency_s >= 0 && row.latency_s < 5);
  assert_non_null(strstr(row.response_body, "chat.completion"));
  assert_null(row.error);
  kv_llm_call_row_release(&row);
  assert_int_equal(w.spend_calls, 1);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_anthropic_ok(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", NULL);
  world_client(&w);
  struct kv_llm_message msg[3] = {{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}};
  struct kv_llm_request r;
  kv_llm_request_init(&r);
  r.system = "sys";
  r.messages = msg;
  r.n_messages = 3;
  r.max_tokens = 33;
  r.top_p = 0.25;
  struct kv_llm_result res;
  assert_int_equal(kv_llm_ask(w.c, &r, &res), KV_LLM_OK);
  assert_string_equal(res.text, "echo 0: q2");
  assert_string_equal(res.stop_reason, "end_turn");
  assert_int_equal(res.input_tokens, 11);
  assert_int_equal(res.output_tokens, 7);
  struct standin_request sr;
  assert_int_equal(standin_get(w.srv, 0, &sr), 0);
  assert_string_equal(sr.path, "/v1/messages");
  assert_string_equal(sr.api_key, KEY);
  assert_string_equal(sr.version, "2023-06-01");
  assert_string_equal(sr.auth, "");
  assert_non_null(strstr(sr.body, "\"system\":\"sys\""));
  assert_non_null(strstr(sr.body, "\"max_tokens\":33"));
  assert_non_null(strstr(sr.body, "\"top_p\":0.25"));
  assert_non_null(strstr(sr.body, "{\"role\":\"assistant\",\"content\":\"a1\"}"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.provider, "anthropic");
  assert_string_equal(row.request_json, sr.body);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

/* ---- retries and their timing ------------------------------------------- */

static void test_429_retry_after(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "429:ra=1,ok");
  w.m.backoff_s = 0.01; /* so that only Retry-After explains a 1 s wait */
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 2);
  assert_int_equal(standin_count(w.srv), 2);
  double g = gap(&w, 0);
  assert_true(g >= 0.98);
  assert_true(g < 1.6);
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_int_equal(row.attempts, 2);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_retry_after_capped(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", "503:ra=3600,ok");
  w.m.retry_after_max_s = 0.2;
  world_client(&w);
  struct kv_llm_result res;
  double t0 = kv_now_s();
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_true(kv_now_s() - t0 < 2);
  double g = gap(&w, 0);
  assert_true(g >= 0.19);
  assert_true(g < 0.8);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_500_then_success_backoff(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "500,502,ok");
  w.m.backoff_s = 0.2;
  w.m.backoff_max_s = 10;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 3);
  assert_int_equal(standin_count(w.srv), 3);
  /* Exponential with jitter in [0.5, 1): 0.1-0.2 s, then 0.2-0.4 s. */
  double g1 = gap(&w, 0), g2 = gap(&w, 1);
  assert_true(g1 >= 0.099 && g1 < 0.2 + 0.25);
  assert_true(g2 >= 0.199 && g2 < 0.4 + 0.25);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_backoff_schedule(void **state) {
  (void)state;
  struct kv_llm_model m;
  char err[256];
  kv_llm_model_defaults(&m, "openai", err, sizeof err);
  m.backoff_s = 1;
  m.backoff_max_s = 6;
  /* Doubling from the base, capped, and the jitter spans [0.5, 1) of it. */
  assert_float_equal(llm_backoff(&m, 1, 0), 0.5, 1e-12);
  assert_float_equal(llm_backoff(&m, 1, 0.999999), 1.0, 1e-5);
  assert_float_equal(llm_backoff(&m, 2, 0), 1.0, 1e-12);
  assert_float_equal(llm_backoff(&m, 3, 0.5), 3.0, 1e-12);
  assert_float_equal(llm_backoff(&m, 4, 0), 3.0, 1e-12);
  assert_float_equal(llm_backoff(&m, 40, 0.999999), 6.0, 1e-5);
  assert_true(llm_backoff(&m, 2, 0.25) != llm_backoff(&m, 2, 0.75));
}

static void test_retries_exhausted(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "500,500,500,500,500");
  w.m.max_attempts = 3;
  w.m.backoff_s = 0.01;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EHTTP);
  assert_int_equal(res.attempts, 3);
  assert_int_equal(standin_count(w.srv), 3);
  assert_non_null(strstr(res.error, "HTTP 500"));
  assert_non_null(strstr(res.error, "standin: injected 500"));
  assert_non_null(strstr(res.error, "gave up after 3 attempts"));
  assert_null(res.text);
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "http");
  assert_int_equal(row.attempts, 3);
  assert_int_equal(row.http_status, 500);
  assert_string_equal(row.error, res.error);
  assert_true(row.cost_usd == 0);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_408_409_retried(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "408,409,ok");
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 3);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_no_retry_on_4xx(void **state) {
  (void)state;
  const char *codes[] = {"400", "404", "422"};
  for (size_t i = 0; i < KV_ARRAY_LEN(codes); i++) {
    struct world w;
    world_open(&w, i == 1 ? "anthropic" : "openai", codes[i]);
    world_client(&w);
    struct kv_llm_result res;
    assert_int_equal(ask(&w, "x", &res), KV_LLM_EHTTP);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(standin_count(w.srv), 1);
    assert_non_null(strstr(res.error, "not retried"));
    assert_non_null(strstr(res.error, "standin: injected"));
    kv_llm_result_release(&res);
    world_close(&w);
  }
}

static void test_network_error_retried(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", NULL);
  snprintf(w.m.base_url, sizeof w.m.base_url, "http://127.0.0.1:%d/v1", closed_port());
  w.m.max_attempts = 3;
  world_client(&w);
  struct kv_llm_result res;
  double t0 = kv_now_s();
  assert_int_equal(ask(&w, "x", &res), KV_LLM_ENET);
  assert_true(kv_now_s() - t0 < 2);
  assert_int_equal(res.attempts, 3);
  assert_non_null(strstr(res.error, "cannot get a reply"));
  assert_non_null(strstr(res.error, "gave up after 3 attempts"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "network");
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_closed_connection_then_ok(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", "close,ok");
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 2);
  assert_string_equal(res.text, "echo 1: x");
  kv_llm_result_release(&res);
  world_close(&w);
}

/* ---- keys ------------------------------------------------------------- */

static void test_missing_key(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", NULL);
  world_client(&w);
  unsetenv(KEY_ENV);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_ENOKEY);
  assert_non_null(strstr(res.error, "environment variable " KEY_ENV " is not set"));
  assert_non_null(strstr(res.error, "export " KEY_ENV "="));
  setenv(KEY_ENV, "", 1);
  assert_int_equal(ask(&w, "x", &res), KV_LLM_ENOKEY);
  setenv(KEY_ENV, "two\nlines", 1);
  assert_int_equal(ask(&w, "x", &res), KV_LLM_ENOKEY);
  assert_non_null(strstr(res.error, "line break"));
  /* Nothing was sent, nothing recorded, nothing spent. */
  assert_int_equal(standin_count(w.srv), 0);
  assert_int_equal(kv_store_count_llm_calls(w.store), 0);
  struct kv_llm_spend sp;
  kv_llm_spent(w.c, &sp);
  assert_int_equal(sp.calls, 0);
  assert_true(sp.reserved_usd == 0 && sp.reserved_tokens == 0);
  world_close(&w);
}

static void test_rejected_key(void **state) {
  (void)state;
  const char *providers[] = {"openai", "anthropic"};
  for (int i = 0; i < 2; i++) {
    struct world w;
    world_open(&w, providers[i], NULL);
    world_client(&w);
    setenv(KEY_ENV, "sk-wrong-key-WRONGWRONG-999", 1);
    struct kv_llm_result res;
    assert_int_equal(ask(&w, "x", &res), KV_LLM_EAUTH);
    assert_int_equal(res.http_status, 401);
    assert_int_equal(res.attempts, 1);
    assert_int_equal(standin_count(w.srv), 1);
    assert_non_null(strstr(res.error, "HTTP 401"));
    assert_non_null(strstr(res.error, "set " KEY_ENV " to a valid key"));
    /* The server echoed the key it got; kevo scrubbed it. */
    assert_null(strstr(res.error, "WRONGWRONG"));
    struct kv_llm_call_row row = row_of(&w, res.call_id);
    assert_string_equal(row.status, "auth");
    assert_non_null(row.response_body);
    assert_null(strstr(row.response_body, "WRONGWRONG"));
    assert_non_null(strstr(row.response_body, "****"));
    kv_llm_call_row_release(&row);
    kv_llm_result_release(&res);
    world_close(&w);
  }
}

/* Reads a whole file (raw bytes) and says whether needle occurs in it. */
static int file_contains(const char *path, const char *needle) {
  char *data = NULL;
  size_t len = 0;
  char err[256];
  if (kv_read_file(path, 256u << 20, &data, &len, err, sizeof err) < 0)
    return 0;
  int found = memmem(data, len, needle, strlen(needle)) != NULL;
  free(data);
  return found;
}

static void test_key_never_stored(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "429:ra=0,ok,401,malformed,500,500,500,500");
  w.m.max_attempts = 2;
  world_client(&w);
  struct kv_llm_result res;
  for (int i = 0; i < 4; i++) {
    ask(&w, "say the key", &res);
    kv_llm_result_release(&res);
  }
  assert_int_equal(kv_store_count_llm_calls(w.store), 4);
  /* The key reached the server every time... */
  for (int i = 0; i < standin_count(w.srv); i++) {
    struct standin_request sr;
    assert_int_equal(standin_get(w.srv, i, &sr), 0);
    assert_string_equal(sr.auth, "Bearer " KEY);
    assert_null(strstr(sr.body, KEY));
  }
  /* ...and never the store: not the database, its WAL or its shared memory
   * (closed first, so that the WAL is checkpointed into the database). */
  kv_llm_free(w.c);
  w.c = NULL;
  kv_store_close(w.store);
  w.store = NULL;
  char p[700];
  assert_false(file_contains(w.db, KEY));
  snprintf(p, sizeof p, "%s-wal", w.db);
  assert_false(file_contains(p, KEY));
  snprintf(p, sizeof p, "%s-shm", w.db);
  assert_false(file_contains(p, KEY));
  /* The scan itself works: what was recorded is found. */
  assert_true(file_contains(w.db, "say the key"));
  assert_true(file_contains(w.db, "echo 1: say the key"));
  world_close(&w);
}

/* ---- bodies ------------------------------------------------------------- */

static void test_malformed_body(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "malformed,ok");
  w.m.input_usd_per_mtok = 1e6; /* $1 per token: the worst case is charged */
  w.m.output_usd_per_mtok = 1e6;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "abc", &res), KV_LLM_EBODY);
  assert_int_equal(res.attempts, 1);
  assert_int_equal(standin_count(w.srv), 1);
  assert_non_null(strstr(res.error, "not JSON"));
  assert_non_null(strstr(res.error, "not retried"));
  /* usage unknown on a 200: charged at worst case (1 input token + 100). */
  assert_float_equal(res.cost_usd, 101.0, 1e-9);
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "malformed");
  assert_non_null(strstr(row.response_body, "half a reply"));
  assert_int_equal(row.input_tokens, -1);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_empty_body(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", "empty");
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EBODY);
  assert_non_null(strstr(res.error, "empty"));
  assert_int_equal(res.attempts, 1);
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "empty");
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_truncated_body(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "truncated,truncated,truncated,ok");
  w.m.max_attempts = 3;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EBODY);
  assert_int_equal(res.attempts, 3);
  assert_non_null(strstr(res.error, "cut short"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "truncated");
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  /* A truncation followed by a good reply is just a retry. */
  assert_int_equal(ask(&w, "y", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 1);
  kv_llm_result_release(&res);
  world_close(&w);

  world_open(&w, "anthropic", "truncated,ok");
  world_client(&w);
  assert_int_equal(ask(&w, "x", &res), KV_LLM_OK);
  assert_int_equal(res.attempts, 2);
  assert_string_equal(res.text, "echo 1: x");
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_oversized_body(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "huge=200000,huge=5000000,stream=300000");
  w.m.max_response_bytes = 65536;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EBODY);
  assert_int_equal(res.attempts, 1);
  assert_non_null(strstr(res.error, "exceeds the cap of 65536 bytes"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "oversized");
  assert_true(row.response_body == NULL || strlen(row.response_body) <= 65536);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  kv_llm_free(w.c);
  /* The default cap, 4 MiB, against 5 MB. */
  char err[256];
  struct kv_llm_model d;
  kv_llm_model_defaults(&d, "openai", err, sizeof err);
  assert_int_equal(d.max_response_bytes, 4u << 20);
  w.m.max_response_bytes = d.max_response_bytes;
  world_client(&w);
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EBODY);
  assert_non_null(strstr(res.error, "exceeds the cap of 4194304 bytes"));
  assert_int_equal(standin_count(w.srv), 2);
  kv_llm_result_release(&res);
  /* Without a Content-Length the cap is enforced as the bytes arrive. */
  kv_llm_free(w.c);
  w.m.max_response_bytes = 65536;
  world_client(&w);
  assert_int_equal(ask(&w, "x", &res), KV_LLM_EBODY);
  assert_non_null(strstr(res.error, "exceeds the cap of 65536 bytes"));
  struct kv_llm_call_row r3 = row_of(&w, res.call_id);
  assert_string_equal(r3.status, "oversized");
  assert_non_null(r3.response_body);
  assert_true(strlen(r3.response_body) <= 65536);
  kv_llm_call_row_release(&r3);
  kv_llm_result_release(&res);
  world_close(&w);
}

static void test_slow_reply_deadline(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", "slow=5,slow=5");
  w.m.timeout_s = 0.4;
  world_client(&w);
  struct kv_llm_result res;
  double t0 = kv_now_s();
  assert_int_equal(ask(&w, "x", &res), KV_LLM_ETIMEOUT);
  double el = kv_now_s() - t0;
  assert_true(el >= 0.39);
  assert_true(el < 1.5);
  assert_int_equal(res.attempts, 1);
  assert_non_null(strstr(res.error, "deadline of 0.4 s"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "timeout");
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&res);
  /* A per-request deadline overrides the model's. */
  kv_llm_free(w.c);
  w.m.timeout_s = 30;
  world_client(&w);
  struct kv_llm_message msg;
  struct kv_llm_request r = prompt("y", &msg);
  r.deadline_s = 0.3;
  t0 = kv_now_s();
  assert_int_equal(kv_llm_ask(w.c, &r, &res), KV_LLM_ETIMEOUT);
  el = kv_now_s() - t0;
  assert_true(el >= 0.29);
  assert_true(el < 1.2);
  world_close(&w);
}

/* ---- usage, cost, budgets ------------------------------------------------ */

static void test_cost_arithmetic(void **state) {
  (void)state;
  struct world w;
  memset(&w, 0, sizeof w);
  char err[1024];
  snprintf(w.db, sizeof w.db, "%s/t%d.db", g_root, ++g_seq);
  assert_int_equal(kv_store_open(w.db, &w.store, err, sizeof err), 0);
  struct standin_opts so = {.key = KEY, .input_tokens = 1234, .output_tokens = 567};
  w.srv = standin_start(&so, err, sizeof err);
  assert_non_null(w.srv);
  kv_llm_model_defaults(&w.m, "anthropic", err, sizeof err);
  snprintf(w.m.base_url, sizeof w.m.base_url, "http://127.0.0.1:%d", standin_port(w.srv));
  snprintf(w.m.model, sizeof w.m.model, "m");
  snprintf(w.m.api_key_env, sizeof w.m.api_key_env, KEY_ENV);
  setenv(KEY_ENV, KEY, 1);
  w.m.input_usd_per_mtok = 3;
  w.m.output_usd_per_mtok = 15;
  world_client(&w);
  struct kv_llm_result a, b;
  assert_int_equal(ask(&w, "one", &a), KV_LLM_OK);
  /* 1234 * 3 / 1e6 + 567 * 15 / 1e6 = 0.003702 + 0.008505 */
  assert_float_equal(a.cost_usd, 0.012207, 1e-12);
  assert_int_equal(w.spend_calls, 1);
  assert_float_equal(w.last_spend.usd, 0.012207, 1e-12);
  assert_int_equal(ask(&w, "two", &b), KV_LLM_OK);
  struct kv_llm_spend sp;
  kv_llm_spent(w.c, &sp);
  assert_float_equal(sp.usd, 0.024414, 1e-12);
  assert_int_equal(sp.input_tokens, 2468);
  assert_int_equal(sp.output_tokens, 1134);
  assert_int_equal(sp.calls, 2);
  assert_true(sp.reserved_usd == 0 && sp.reserved_tokens == 0);
  assert_int_equal(w.spend_calls, 2);
  assert_float_equal(w.last_spend.usd, 0.024414, 1e-12);
  struct kv_llm_call_row row = row_of(&w, b.call_id);
  assert_float_equal(row.cost_usd, 0.012207, 1e-12);
  kv_llm_call_row_release(&row);
  kv_llm_result_release(&a);
  kv_llm_result_release(&b);
  world_close(&w);
}

static void test_budget_usd_stops_next(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", NULL);
  /* $0.001 per token. "abcdef" is estimated at 2 tokens, so the worst case
   * is (2 + 100) tokens = $0.102; a reply costs 18 tokens = $0.018. */
  w.m.input_usd_per_mtok = 1000;
  w.m.output_usd_per_mtok = 1000;
  w.budget.max_usd = 0.12;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_OK);
  assert_float_equal(res.cost_usd, 0.018, 1e-12);
  kv_llm_result_release(&res);
  /* 0.018 + 0.102 = 0.120 fits exactly... */
  assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  /* ...0.036 + 0.102 does not: not sent. */
  assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_EBUDGET);
  assert_non_null(strstr(res.error, "budget:"));
  assert_non_null(strstr(res.error, "not sent"));
  assert_non_null(strstr(res.error, "$0.120000 cap"));
  assert_int_equal(standin_count(w.srv), 2);
  assert_int_equal(kv_store_count_llm_calls(w.store), 2);
  /* A smaller max_tokens fits. */
  struct kv_llm_message msg;
  struct kv_llm_request r = prompt("abcdef", &msg);
  r.max_tokens = 50;
  assert_int_equal(kv_llm_ask(w.c, &r, &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  assert_int_equal(standin_count(w.srv), 3);
  world_close(&w);
}

static void test_budget_tokens_and_calls(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", NULL);
  w.budget.max_tokens = 150; /* worst 2 + 100; each reply uses 18 */
  world_client(&w);
  struct kv_llm_result res;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_OK);
    kv_llm_result_release(&res);
  }
  /* 54 used + 102 > 150 */
  assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_EBUDGET);
  assert_non_null(strstr(res.error, "budget.tokens"));
  assert_int_equal(standin_count(w.srv), 3);
  kv_llm_free(w.c);

  w.budget.max_tokens = 0;
  w.budget.max_calls = 2;
  world_client(&w);
  assert_int_equal(ask(&w, "a", &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  assert_int_equal(ask(&w, "b", &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  assert_int_equal(ask(&w, "c", &res), KV_LLM_EBUDGET);
  assert_non_null(strstr(res.error, "budget.calls"));
  assert_int_equal(standin_count(w.srv), 5);
  world_close(&w);
}

/* Calls in flight reserve their worst case: a second one that could break
 * the cap is refused before the first finishes. */
static void test_budget_reserves_in_flight(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "slow=0.2");
  w.m.input_usd_per_mtok = 1000;
  w.m.output_usd_per_mtok = 1000;
  w.budget.max_usd = 0.15;
  world_client(&w);
  struct kv_llm_message msg;
  struct kv_llm_request r = prompt("abcdef", &msg);
  uint64_t h1 = 0, h2 = 0;
  char err[1024] = "";
  assert_int_equal(kv_llm_submit(w.c, &r, &h1, err, sizeof err), 0);
  struct kv_llm_spend sp;
  kv_llm_spent(w.c, &sp);
  assert_float_equal(sp.reserved_usd, 0.102, 1e-12);
  assert_int_equal(sp.in_flight, 1);
  assert_int_equal(kv_llm_submit(w.c, &r, &h2, err, sizeof err), KV_LLM_EBUDGET);
  assert_int_equal(h2, 0);
  struct kv_llm_result res;
  assert_int_equal(kv_llm_wait(w.c, h1, 10, &res, err, sizeof err), 1);
  assert_int_equal(res.code, KV_LLM_OK);
  kv_llm_result_release(&res);
  kv_llm_spent(w.c, &sp);
  assert_true(sp.reserved_usd == 0);
  assert_float_equal(sp.usd, 0.018, 1e-12);
  world_close(&w);
}

static void test_missing_usage_charged_worst_case(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "nousage");
  w.m.input_usd_per_mtok = 1000;
  w.m.output_usd_per_mtok = 1000;
  world_client(&w);
  struct kv_llm_result res;
  assert_int_equal(ask(&w, "abcdef", &res), KV_LLM_OK);
  assert_int_equal(res.input_tokens, -1);
  assert_float_equal(res.cost_usd, 0.102, 1e-12);
  kv_llm_result_release(&res);
  world_close(&w);
}

/* ---- several in flight ---------------------------------------------------- */

static void run_three(struct world *w, double *elapsed) {
  struct kv_llm_message msg[3] = {{"user", "a"}, {"user", "b"}, {"user", "c"}};
  uint64_t h[3];
  char err[1024] = "";
  double t0 = kv_now_s();
  for (int i = 0; i < 3; i++) {
    struct kv_llm_request r;
    kv_llm_request_init(&r);
    r.messages = &msg[i];
    r.n_messages = 1;
    assert_int_equal(kv_llm_submit(w->c, &r, &h[i], err, sizeof err), 0);
  }
  assert_int_equal(kv_llm_pending(w->c), 3);
  int got = 0, seen[3] = {0};
  while (got < 3) {
    assert_true(kv_now_s() - t0 < 10);
    int n = kv_llm_poll(w->c, 1.0, err, sizeof err);
    assert_true(n >= 0);
    struct kv_llm_result res;
    while (kv_llm_complete(w->c, 0, &res) == 1) {
      assert_int_equal(res.code, KV_LLM_OK);
      for (int i = 0; i < 3; i++)
        if (res.handle == h[i]) {
          seen[i]++;
          char want[32];
          snprintf(want, sizeof want, ": %c", 'a' + i);
          assert_non_null(strstr(res.text, want));
        }
      kv_llm_result_release(&res);
      got++;
    }
  }
  *elapsed = kv_now_s() - t0;
  assert_int_equal(seen[0] + seen[1] + seen[2], 3);
  assert_int_equal(kv_llm_pending(w->c), 0);
}

static void test_concurrent_requests(void **state) {
  (void)state;
  struct world w;
  double el;
  world_open(&w, "openai", "slow=0.4,slow=0.4,slow=0.4");
  w.m.concurrency = 3;
  world_client(&w);
  run_three(&w, &el);
  assert_true(el >= 0.39);
  assert_true(el < 1.0);
  assert_int_equal(standin_max_concurrent(w.srv), 3);
  world_close(&w);

  world_open(&w, "anthropic", "slow=0.3,slow=0.3,slow=0.3");
  w.m.concurrency = 1;
  world_client(&w);
  run_three(&w, &el);
  assert_true(el >= 0.89);
  assert_int_equal(standin_max_concurrent(w.srv), 1);
  world_close(&w);
}

static void test_poll_and_wait(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "slow=0.3,ok");
  world_client(&w);
  struct kv_llm_message m1, m2;
  struct kv_llm_request r1 = prompt("slow one", &m1), r2 = prompt("fast one", &m2);
  uint64_t h1, h2;
  char err[1024] = "";
  assert_int_equal(kv_llm_submit(w.c, &r1, &h1, err, sizeof err), 0);
  /* Make sure the slow one is the first request the server sees. */
  double t0 = kv_now_s();
  while (standin_count(w.srv) < 1 && kv_now_s() - t0 < 5)
    kv_llm_poll(w.c, 0.01, err, sizeof err);
  assert_int_equal(kv_llm_submit(w.c, &r2, &h2, err, sizeof err), 0);
  assert_true(h1 > 0 && h2 > h1);
  struct kv_llm_result res;
  assert_int_equal(kv_llm_complete(w.c, 0, &res), 0);
  /* Waiting on the slow one while the fast one finishes first. */
  assert_int_equal(kv_llm_wait(w.c, h1, 0.05, &res, err, sizeof err), 0);
  assert_int_equal(kv_llm_wait(w.c, h1, 10, &res, err, sizeof err), 1);
  assert_int_equal(res.handle, h1);
  assert_string_equal(res.text, "echo 0: slow one");
  kv_llm_result_release(&res);
  assert_int_equal(kv_llm_complete(w.c, h2, &res), 1);
  assert_string_equal(res.text, "echo 1: fast one");
  kv_llm_result_release(&res);
  assert_int_equal(kv_llm_pending(w.c), 0);
  assert_true(kv_llm_wait(w.c, h1, 0.1, &res, err, sizeof err) < 0);
  assert_non_null(strstr(err, "no call with handle"));
  /* A client freed with calls in flight frees them (ASan checks). */
  assert_int_equal(kv_llm_submit(w.c, &r1, &h1, err, sizeof err), 0);
  kv_llm_poll(w.c, 0.05, err, sizeof err);
  world_close(&w);
}

/* The caller busy for 4 s (judging a kernel) right after submitting three
 * calls with a 2 s timeout to a server that answers at once: the requests go
 * out and the replies come in meanwhile, so none times out and each latency
 * is the server's, not the caller's delay (issue 17: with the transfers
 * driven only by the caller's polls, three of four such calls timed out). */
static void test_busy_caller(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", "ok,ok,ok");
  w.m.concurrency = 3;
  w.m.timeout_s = 2;
  world_client(&w);
  struct kv_llm_message m[3];
  struct kv_llm_request r[3] = {prompt("a", &m[0]), prompt("b", &m[1]), prompt("c", &m[2])};
  uint64_t h[3];
  char err[1024] = "";
  for (int i = 0; i < 3; i++)
    assert_int_equal(kv_llm_submit(w.c, &r[i], &h[i], err, sizeof err), 0);
  double t0 = kv_now_s();
  while (kv_now_s() - t0 < 4.0) /* busy, no poll */
    usleep(50000);
  assert_int_equal(standin_count(w.srv), 3); /* sent while the caller was busy */
  for (int i = 0; i < 3; i++) {
    struct kv_llm_result res;
    assert_int_equal(kv_llm_wait(w.c, h[i], 5, &res, err, sizeof err), 1);
    if (res.code != KV_LLM_OK)
      fail_msg("call %d: %s: %s", i, kv_llm_code_name(res.code), res.error);
    assert_true(res.latency_s < 1.5);
    struct kv_llm_call_row row = row_of(&w, res.call_id);
    assert_true(row.latency_s < 1.5); /* what the store keeps too */
    kv_llm_call_row_release(&row);
    kv_llm_result_release(&res);
  }
  world_close(&w);
}

/* ---- replay ------------------------------------------------------------- */

static void test_replay_network_off(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "anthropic", NULL);
  w.m.input_usd_per_mtok = 3;
  w.m.output_usd_per_mtok = 15;
  world_client(&w);
  struct kv_llm_message msg;
  struct kv_llm_request r = prompt("tell me", &msg);
  r.system = "s";
  struct kv_llm_result live[2];
  for (int i = 0; i < 2; i++) {
    r.sample = i;
    assert_int_equal(kv_llm_ask(w.c, &r, &live[i]), KV_LLM_OK);
  }
  assert_string_equal(live[0].text, "echo 0: tell me");
  assert_string_equal(live[1].text, "echo 1: tell me");
  assert_string_not_equal(live[0].cache_key, live[1].cache_key);
  /* The network goes away. */
  kv_llm_free(w.c);
  w.c = NULL;
  standin_stop(w.srv);
  w.srv = NULL;

  struct kv_llm_model rm = w.m;
  snprintf(rm.provider, sizeof rm.provider, "replay");
  snprintf(rm.base_url, sizeof rm.base_url, "http://127.0.0.1:%d", closed_port());
  rm.api_key_env[0] = '\0';
  unsetenv(KEY_ENV);
  struct kv_llm *rc = NULL;
  char err[1024] = "";
  struct kv_llm_opts o = {.model = &rm, .store = w.store, .jitter_seed = 1};
  assert_int_equal(kv_llm_new(&o, &rc, err, sizeof err), 0);
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 1; i >= 0; i--) {
      struct kv_llm_result res;
      r.sample = i;
      assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_OK);
      assert_string_equal(res.text, live[i].text);
      assert_string_equal(res.cache_key, live[i].cache_key);
      assert_int_equal(res.replayed, 1);
      assert_int_equal(res.attempts, 0);
      assert_int_equal(res.input_tokens, 11);
      assert_float_equal(res.cost_usd, live[i].cost_usd, 1e-15);
      struct kv_llm_call_row row = row_of(&w, res.call_id);
      assert_string_equal(row.provider, "replay");
      assert_string_equal(row.status, "ok");
      kv_llm_call_row_release(&row);
      kv_llm_result_release(&res);
    }
  }
  /* What was never recorded is an error that says so. */
  struct kv_llm_result res;
  r.sample = 2;
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_ENOTRECORDED);
  assert_non_null(strstr(res.error, "never recorded"));
  assert_non_null(strstr(res.error, "sample 2"));
  struct kv_llm_call_row row = row_of(&w, res.call_id);
  assert_string_equal(row.status, "not_recorded");
  kv_llm_call_row_release(&row);
  r.sample = 0;
  r.temperature = 0.9; /* sampling parameters are part of the key */
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_ENOTRECORDED);
  r.temperature = -1;
  msg.content = "tell me!";
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_ENOTRECORDED);
  msg.content = "tell me";
  kv_llm_free(rc);

  /* replay_of narrows the lookup to one provider's recordings. */
  snprintf(rm.replay_of, sizeof rm.replay_of, "openai");
  assert_int_equal(kv_llm_new(&o, &rc, err, sizeof err), 0);
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_ENOTRECORDED);
  assert_non_null(strstr(res.error, "as openai"));
  kv_llm_free(rc);
  snprintf(rm.replay_of, sizeof rm.replay_of, "anthropic");
  assert_int_equal(kv_llm_new(&o, &rc, err, sizeof err), 0);
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  kv_llm_free(rc);

  /* Replay spends the recorded cost, so budgets stop a replayed run where
   * they stopped the recorded one. */
  o.budget.max_calls = 1;
  assert_int_equal(kv_llm_new(&o, &rc, err, sizeof err), 0);
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_OK);
  kv_llm_result_release(&res);
  assert_int_equal(kv_llm_ask(rc, &r, &res), KV_LLM_EBUDGET);
  kv_llm_free(rc);

  /* Replay without a store is refused up front. */
  o.store = NULL;
  assert_true(kv_llm_new(&o, &rc, err, sizeof err) < 0);
  assert_non_null(strstr(err, "--db"));
  kv_llm_result_release(&live[0]);
  kv_llm_result_release(&live[1]);
  world_close(&w);
}

/* ---- requests and keys ---------------------------------------------------- */

static void test_request_validation(void **state) {
  (void)state;
  struct world w;
  world_open(&w, "openai", NULL);
  world_client(&w);
  char err[1024] = "";
  uint64_t h;
  struct kv_llm_request r;
  kv_llm_request_init(&r);
  assert_int_equal(kv_llm_submit(w.c, &r, &h, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "no messages"));
  struct kv_llm_message bad = {"system", "x"};
  r.messages = &bad;
  r.n_messages = 1;
  assert_int_equal(kv_llm_submit(w.c, &r, &h, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "messages[0].role is 'system'"));
  bad.role = "user";
  bad.content = NULL;
  assert_int_equal(kv_llm_submit(w.c, &r, &h, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "messages[0].content"));
  assert_int_equal(standin_count(w.srv), 0);
  kv_llm_free(w.c);
  w.c = NULL;

  /* Clients refuse bad models, naming the field. */
  struct kv_llm_opts o = {.model = &w.m, .store = w.store};
  struct kv_llm *c;
  struct kv_llm_model m = w.m;
  o.model = &m;
  snprintf(m.base_url, sizeof m.base_url, "ftp://x");
  assert_int_equal(kv_llm_new(&o, &c, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "base_url"));
  m = w.m;
  m.model[0] = '\0';
  assert_int_equal(kv_llm_new(&o, &c, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "--model"));
  m = w.m;
  snprintf(m.provider, sizeof m.provider, "frob");
  assert_int_equal(kv_llm_new(&o, &c, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "'frob' is unknown"));
  world_close(&w);
}

static void test_cache_key(void **state) {
  (void)state;
  char err[256], base[65], k[65];
  struct kv_llm_model m;
  kv_llm_model_defaults(&m, "openai", err, sizeof err);
  snprintf(m.model, sizeof m.model, "gpt-x");
  struct kv_llm_message msg = {"user", "hi"};
  struct kv_llm_request r;
  kv_llm_request_init(&r);
  r.messages = &msg;
  r.n_messages = 1;
  assert_int_equal(kv_llm_cache_key(&m, NULL, &r, base, err, sizeof err), 0);
  assert_int_equal(strlen(base), 64);
  assert_int_equal(kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err), 0);
  assert_string_equal(k, base);
  /* The base URL, role, run and deadline are not part of the key. */
  snprintf(m.base_url, sizeof m.base_url, "http://elsewhere/v1");
  r.role = "planner";
  r.run_id = 3;
  r.deadline_s = 9;
  assert_int_equal(kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err), 0);
  assert_string_equal(k, base);
  /* Each of these is. */
  assert_int_equal(kv_llm_cache_key(&m, "anthropic", &r, k, err, sizeof err), 0);
  assert_string_not_equal(k, base);
  r.sample = 1;
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  r.sample = 0;
  r.temperature = 0;
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  r.temperature = -1;
  r.top_p = 0.5;
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  r.top_p = -1;
  r.max_tokens = 7;
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  r.max_tokens = 0;
  r.system = "s";
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  r.system = NULL;
  msg.content = "hi ";
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  msg.content = "hi";
  msg.role = "assistant";
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  msg.role = "user";
  snprintf(m.model, sizeof m.model, "gpt-y");
  kv_llm_cache_key(&m, NULL, &r, k, err, sizeof err);
  assert_string_not_equal(k, base);
  assert_string_equal(kv_llm_code_name(KV_LLM_ENOTRECORDED), "not_recorded");
}

static int group_setup(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/kevo-test-llm-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(g_root) ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return kv_rmtree(g_root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_openai_ok),
      cmocka_unit_test(test_anthropic_ok),
      cmocka_unit_test(test_429_retry_after),
      cmocka_unit_test(test_retry_after_capped),
      cmocka_unit_test(test_500_then_success_backoff),
      cmocka_unit_test(test_backoff_schedule),
      cmocka_unit_test(test_retries_exhausted),
      cmocka_unit_test(test_408_409_retried),
      cmocka_unit_test(test_no_retry_on_4xx),
      cmocka_unit_test(test_network_error_retried),
      cmocka_unit_test(test_closed_connection_then_ok),
      cmocka_unit_test(test_missing_key),
      cmocka_unit_test(test_rejected_key),
      cmocka_unit_test(test_key_never_stored),
      cmocka_unit_test(test_malformed_body),
      cmocka_unit_test(test_empty_body),
      cmocka_unit_test(test_truncated_body),
      cmocka_unit_test(test_oversized_body),
      cmocka_unit_test(test_slow_reply_deadline),
      cmocka_unit_test(test_cost_arithmetic),
      cmocka_unit_test(test_budget_usd_stops_next),
      cmocka_unit_test(test_budget_tokens_and_calls),
      cmocka_unit_test(test_budget_reserves_in_flight),
      cmocka_unit_test(test_missing_usage_charged_worst_case),
      cmocka_unit_test(test_concurrent_requests),
      cmocka_unit_test(test_poll_and_wait),
      cmocka_unit_test(test_busy_caller),
      cmocka_unit_test(test_replay_network_off),
      cmocka_unit_test(test_request_validation),
      cmocka_unit_test(test_cache_key),
  };
  return cmocka_run_group_tests_name("llm", tests, group_setup, group_teardown);
}
