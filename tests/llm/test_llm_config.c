/* Model configuration: provider defaults, layered files, flags, and errors
 * that name the file, the field and the fix. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/llm.h"
#include "kevo/util.h"

static char g_root[512];

static void write_file(const char *rel, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", g_root, rel);
  char dir[600], err[512];
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  assert_int_equal(kv_mkdirs(dir, 0700, err, sizeof err), 0);
  assert_int_equal(kv_write_file(path, text, strlen(text), err, sizeof err), 0);
}

/* Resolves one layer of text with flags; returns the code, err filled. */
static int resolve_text(const char *text, const struct kv_llm_flags *f, struct kv_llm_model *m,
                        struct kv_llm_budget *b, char *err, size_t errlen) {
  struct kv_llm_config *c = kv_llm_config_new();
  assert_non_null(c);
  int rc = text ? kv_llm_config_add_text(c, "test.json", text, err, errlen) : 0;
  if (rc == 0)
    rc = kv_llm_config_resolve(c, f, m, b, err, errlen);
  kv_llm_config_free(c);
  return rc;
}

static void test_defaults(void **state) {
  (void)state;
  struct kv_llm_model m;
  char err[512];
  assert_int_equal(kv_llm_model_defaults(&m, "openai", err, sizeof err), 0);
  assert_string_equal(m.base_url, "https://api.openai.com/v1");
  assert_string_equal(m.api_key_env, "OPENAI_API_KEY");
  assert_string_equal(m.max_tokens_field, "max_tokens");
  assert_int_equal(m.max_response_bytes, 4u << 20);
  assert_true(m.temperature < 0 && m.top_p < 0);
  assert_int_equal(kv_llm_model_defaults(&m, "anthropic", err, sizeof err), 0);
  assert_string_equal(m.base_url, "https://api.anthropic.com");
  assert_string_equal(m.api_key_env, "ANTHROPIC_API_KEY");
  assert_string_equal(m.anthropic_version, "2023-06-01");
  assert_int_equal(kv_llm_model_defaults(&m, NULL, err, sizeof err), 0);
  assert_string_equal(m.provider, "openai");
  assert_int_equal(kv_llm_model_defaults(&m, "gemini", err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "'gemini' is unknown; use openai, anthropic or replay"));
}

static void test_flags_only(void **state) {
  (void)state;
  struct kv_llm_model m;
  struct kv_llm_budget b;
  struct kv_llm_flags f;
  char err[1024];
  kv_llm_flags_init(&f);
  /* No model anywhere: the error says how to name one. */
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "pass --model ID"));
  f.provider = "anthropic";
  f.model = "claude-x";
  f.base_url = "http://127.0.0.1:9";
  f.timeout_s = 7;
  f.max_tokens = 55;
  f.temperature = 0;
  f.max_usd = 1.5;
  f.api_key_env = "MY_KEY";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.provider, "anthropic");
  assert_string_equal(m.model, "claude-x");
  assert_string_equal(m.base_url, "http://127.0.0.1:9");
  assert_string_equal(m.api_key_env, "MY_KEY");
  assert_true(m.timeout_s == 7);
  assert_int_equal(m.max_tokens, 55);
  assert_true(m.temperature == 0);
  assert_true(b.max_usd == 1.5);
  f.provider = "gemini";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "--provider gemini: not a provider"));
  f.provider = NULL;
  f.base_url = "api.openai.com";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "--base-url api.openai.com: not an http://"));
  /* Credentials in the URL would be stored with every call: refused, and
   * the error does not repeat them. */
  f.base_url = "https://user:hunter2@api.example.com/v1";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "user:password@"));
  assert_null(strstr(err, "hunter2"));
  f.base_url = "https://api.example.com/v1?api-version=2&key=AIzaSECRET";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_null(strstr(err, "AIzaSECRET"));
  f.base_url = "https://api.example.com/v1?api-version=2"; /* not a key */
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  /* A key over plain http to another host: refused; loopback, https or no
   * key: fine. */
  setenv("KEVO_TEST_CFG_KEY", "sk-test", 1);
  f.api_key_env = "KEVO_TEST_CFG_KEY";
  f.base_url = "http://10.1.2.3:8000/v1";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "unencrypted"));
  f.base_url = "http://localhost.example.com/v1"; /* not this machine */
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  f.base_url = "http://127.0.0.1:8000/v1";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  f.base_url = "http://localhost:8000/v1";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  f.base_url = "https://10.1.2.3:8000/v1";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  f.base_url = "http://10.1.2.3:8000/v1";
  f.api_key_env = "";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), 0);
  unsetenv("KEVO_TEST_CFG_KEY");
  f.base_url = NULL;
  f.api_key_env = "sk-abc123";
  assert_int_equal(resolve_text(NULL, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "never the key"));
  assert_null(strstr(err, "sk-abc123"));
}

static const char *CONFIG =
    "{\"default\": \"fast\",\n"
    " \"models\": {\n"
    "  \"fast\": {\"provider\": \"openai\", \"model\": \"gpt-small\", \"base_url\": "
    "\"http://localhost:8000/v1\", \"api_key_env\": \"\", \"input_usd_per_mtok\": 0.15, "
    "\"output_usd_per_mtok\": 0.6, \"concurrency\": 8, \"timeout\": 60, \"connect_timeout\": 2, "
    "\"max_tokens\": 2048, \"temperature\": 0.7, \"top_p\": 0.9, \"max_attempts\": 5, "
    "\"backoff\": 0.5, \"backoff_max\": 8, \"retry_after_max\": 20, \"max_response_bytes\": "
    "1048576, \"max_tokens_field\": \"max_completion_tokens\"},\n"
    "  \"claude\": {\"provider\": \"anthropic\", \"model\": \"claude-big\", "
    "\"anthropic_version\": \"2024-01-01\", \"input_usd_per_mtok\": 3, \"output_usd_per_mtok\": "
    "15}\n"
    " },\n"
    " \"budget\": {\"usd\": 2.5, \"tokens\": 1000000, \"calls\": 50}}\n";

static void test_entries_and_default(void **state) {
  (void)state;
  struct kv_llm_model m;
  struct kv_llm_budget b;
  struct kv_llm_flags f;
  char err[1024];
  kv_llm_flags_init(&f);
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.name, "fast");
  assert_string_equal(m.provider, "openai");
  assert_string_equal(m.model, "gpt-small");
  assert_string_equal(m.base_url, "http://localhost:8000/v1");
  assert_string_equal(m.api_key_env, "");
  assert_string_equal(m.max_tokens_field, "max_completion_tokens");
  assert_true(m.input_usd_per_mtok == 0.15 && m.output_usd_per_mtok == 0.6);
  assert_int_equal(m.concurrency, 8);
  assert_true(m.timeout_s == 60 && m.connect_timeout_s == 2);
  assert_int_equal(m.max_tokens, 2048);
  assert_true(m.temperature == 0.7 && m.top_p == 0.9);
  assert_int_equal(m.max_attempts, 5);
  assert_true(m.backoff_s == 0.5 && m.backoff_max_s == 8 && m.retry_after_max_s == 20);
  assert_int_equal(m.max_response_bytes, 1048576);
  assert_true(b.max_usd == 2.5);
  assert_int_equal(b.max_tokens, 1000000);
  assert_int_equal(b.max_calls, 50);

  /* --model NAME picks an entry; its provider's defaults fill the rest. */
  f.model = "claude";
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.provider, "anthropic");
  assert_string_equal(m.model, "claude-big");
  assert_string_equal(m.base_url, "https://api.anthropic.com");
  assert_string_equal(m.api_key_env, "ANTHROPIC_API_KEY");
  assert_string_equal(m.anthropic_version, "2024-01-01");
  assert_int_equal(m.max_tokens, 4096);

  /* --model ID (not an entry) overrides the default entry's model id. */
  f.model = "gpt-other";
  f.max_tokens = 10;
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.name, "fast");
  assert_string_equal(m.model, "gpt-other");
  assert_int_equal(m.max_tokens, 10);

  /* --provider other than the default entry's: that provider's defaults. */
  kv_llm_flags_init(&f);
  f.provider = "anthropic";
  f.model = "claude-y";
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.name, "");
  assert_string_equal(m.base_url, "https://api.anthropic.com");
  assert_true(m.input_usd_per_mtok == 0);
  /* ...but contradicting a named entry is an error. */
  f.model = "claude";
  f.provider = "openai";
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), KV_LLM_EUSAGE);
  assert_non_null(strstr(err, "--provider openai contradicts model 'claude'"));
  assert_non_null(strstr(err, "test.json"));
  /* --provider replay over an entry replays what that entry recorded. */
  f.provider = "replay";
  assert_int_equal(resolve_text(CONFIG, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.provider, "replay");
  assert_string_equal(m.replay_of, "anthropic");
  assert_string_equal(m.model, "claude-big");
}

static void test_layers(void **state) {
  (void)state;
  char user[700], project[700], explicit[700], err[1024];
  write_file("xdg/kevo/config.json", CONFIG, user, sizeof user);
  write_file("proj/kevo.json",
             "{\"models\": {\"fast\": {\"model\": \"gpt-project\", \"concurrency\": 2}}, "
             "\"budget\": {\"usd\": 1}}",
             project, sizeof project);
  write_file("other.json", "{\"default\": \"claude\", \"budget\": {\"calls\": 3}}", explicit,
             sizeof explicit);
  /* The user path follows XDG_CONFIG_HOME, then HOME. */
  char xdg[700], got[700];
  snprintf(xdg, sizeof xdg, "%s/xdg", g_root);
  setenv("XDG_CONFIG_HOME", xdg, 1);
  assert_int_equal(kv_llm_config_user_path(got, sizeof got), 0);
  assert_string_equal(got, user);
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", "/home/someone", 1);
  assert_int_equal(kv_llm_config_user_path(got, sizeof got), 0);
  assert_string_equal(got, "/home/someone/.config/kevo/config.json");

  struct kv_llm_config *c;
  struct kv_llm_model m;
  struct kv_llm_budget b;
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  assert_int_equal(kv_llm_config_load(user, project, NULL, &c, err, sizeof err), 0);
  assert_int_equal(kv_llm_config_resolve(c, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.model, "gpt-project"); /* project overrides */
  assert_int_equal(m.concurrency, 2);          /* project overrides */
  assert_true(m.input_usd_per_mtok == 0.15);   /* user's stays */
  assert_true(b.max_usd == 1 && b.max_calls == 50);
  kv_llm_config_free(c);

  assert_int_equal(kv_llm_config_load(user, project, explicit, &c, err, sizeof err), 0);
  assert_int_equal(kv_llm_config_resolve(c, &f, &m, &b, err, sizeof err), 0);
  assert_string_equal(m.name, "claude");
  assert_int_equal(b.max_calls, 3);
  f.max_usd = 0.25;
  assert_int_equal(kv_llm_config_resolve(c, &f, &m, &b, err, sizeof err), 0);
  assert_true(b.max_usd == 0.25);
  kv_llm_config_free(c);

  /* Absent user and project files are fine; an absent --config is not. */
  char nope[700];
  snprintf(nope, sizeof nope, "%s/nope.json", g_root);
  assert_int_equal(kv_llm_config_load(nope, nope, NULL, &c, err, sizeof err), 0);
  kv_llm_config_free(c);
  assert_true(kv_llm_config_load(nope, nope, nope, &c, err, sizeof err) < 0);
  assert_null(c);
  assert_non_null(strstr(err, "nope.json"));
}

static void expect_error(const char *text, const char *want) {
  struct kv_llm_model m;
  struct kv_llm_budget b;
  struct kv_llm_flags f;
  char err[1024] = "";
  kv_llm_flags_init(&f);
  f.model = "x";
  int rc = resolve_text(text, &f, &m, &b, err, sizeof err);
  if (rc != KV_LLM_EUSAGE || !strstr(err, want))
    fail_msg("config %s\n  gave %d '%s'\n  wanted '%s'", text, rc, err, want);
}

static void test_errors_name_file_and_field(void **state) {
  (void)state;
  expect_error("{\"models\": {\"a\": {\"model\": \"m\",}}}", "test.json: not valid JSON (line 1");
  expect_error("[]", "test.json: must be a JSON object");
  expect_error("{\"modles\": {}}", "test.json: modles: unknown field; known fields: default");
  expect_error("{\"models\": {\"a\": {\"timout\": 5}}}",
               "test.json: models.a.timout: unknown field; known fields: provider");
  expect_error("{\"models\": {\"a\": {\"api_key\": \"sk-live-123\"}}}",
               "test.json: models.a.api_key: kevo never reads keys from files");
  expect_error("{\"models\": {\"a\": {\"api_key_env\": \"sk-live-123\"}}}",
               "models.a.api_key_env: 'sk-live-123...' is not a variable name");
  expect_error("{\"models\": {\"a\": {\"provider\": \"gemini\"}}}",
               "models.a.provider: 'gemini' is not a provider");
  expect_error("{\"models\": {\"a\": {\"replay_of\": \"replay\"}}}",
               "models.a.replay_of: 'replay' is not a provider; use openai or anthropic");
  expect_error("{\"models\": {\"a\": {\"base_url\": \"localhost:8000\"}}}",
               "models.a.base_url: 'localhost:8000' is not an http:// or https:// URL");
  expect_error("{\"models\": {\"a\": {\"base_url\": \"https://u:p@h/v1\"}}}",
               "models.a.base_url: the URL carries a credential (a user:password@ part)");
  expect_error("{\"models\": {\"a\": {\"timeout\": \"60\"}}}",
               "models.a.timeout: must be a number (seconds)");
  expect_error("{\"models\": {\"a\": {\"concurrency\": 0}}}",
               "models.a.concurrency: 0 is out of range; use 1 to 256");
  expect_error("{\"models\": {\"a\": {\"max_tokens\": 1.5}}}",
               "models.a.max_tokens: must be an integer");
  expect_error("{\"models\": {\"a\": {\"temperature\": 3}}}", "models.a.temperature: 3 is out");
  expect_error("{\"models\": {\"a\": {\"max_tokens_field\": \"tokens\"}}}",
               "models.a.max_tokens_field: 'tokens' is not");
  expect_error("{\"models\": {\"a\": 5}}", "models.a: must be an object");
  expect_error("{\"models\": {\"a\": {\"model\": \"m\", \"model\": \"n\"}}}", "duplicate");
  expect_error("{\"budget\": {\"dollars\": 5}}", "budget.dollars: unknown field");
  expect_error("{\"budget\": {\"usd\": -1}}", "budget.usd: must not be negative");
  expect_error("{\"budget\": {\"calls\": 2.5}}", "budget.calls: must be an integer");
  expect_error("{\"default\": \"zz\", \"models\": {}}",
               "test.json: default: 'zz' is not an entry in models");
}

static int group_setup(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/kevo-test-llmcfg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  return mkdtemp(g_root) ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return kv_rmtree(g_root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_flags_only),
      cmocka_unit_test(test_entries_and_default),
      cmocka_unit_test(test_layers),
      cmocka_unit_test(test_errors_name_file_and_field),
  };
  return cmocka_run_group_tests_name("llm_config", tests, group_setup, group_teardown);
}
