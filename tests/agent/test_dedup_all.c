/* AdaExplore's duplicate judge (kevo adapt --judge all): each rule, in the
 * order learnt, against every earlier rule kept, one call, through the
 * loopback stand-in; verdicts kept, so a second pass asks nothing. */
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
#include "kevo/rules.h"
#include "kevo/store.h"
#include "standin.h"

static const char *const rules[] = {
    "You cannot call eta_fn: no library defines it.",
    "You cannot call eta_fn since kevo links nothing that provides it.",
    "You cannot write theta_out from two threads in one call.",
    "You cannot write theta_out from several blocks at once.",
    "You cannot launch more than 1024 threads in a block.",
};

/* The stand-in's answers, by the new rule: the second duplicates rule 1,
 * the third none, the fourth the second kept (the third rule), the fifth an
 * answer that is neither a number nor NONE. */
static const char replies[] =
    "=== when A new rule: You cannot call eta_fn since\n1\n"
    "=== when A new rule: You cannot write theta_out from two\nNONE\n"
    "=== when A new rule: You cannot write theta_out from several\n2. They are the same.\n"
    "=== when A new rule: You cannot launch\nPerhaps.\n";

static const struct kv_rule_meta *named(const struct kv_rule_meta *rows, int n, const char *t) {
  for (int i = 0; i < n; i++)
    if (!strcmp(rows[i].text, t))
      return &rows[i];
  return NULL;
}

static void test_judge_all(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-dedup-all-XXXXXX", path[256], err[1024];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/s.db", dir);
  struct kv_store *st = NULL;
  assert_int_equal(kv_store_open(path, &st, err, sizeof err), 0);
  for (int i = 0; i < 5; i++)
    assert_int_equal(kv_rules_add_scoped(st, rules[i], "llm", "cpu", NULL, 1, i + 1, NULL, err,
                                         sizeof err),
                     0);
  struct standin_opts so = {.max_requests = 16, .lifetime_s = 30, .replies = replies};
  struct standin *srv = standin_start(&so, err, sizeof err);
  if (!srv)
    fail_msg("standin: %s", err);
  struct kv_llm_model m;
  assert_int_equal(kv_llm_model_defaults(&m, "openai", err, sizeof err), 0);
  snprintf(m.base_url, sizeof m.base_url, "http://127.0.0.1:%d/v1", standin_port(srv));
  snprintf(m.model, sizeof m.model, "judge");
  m.api_key_env[0] = 0;
  m.timeout_s = 10;
  struct kv_llm *llm;
  struct kv_llm_opts lo = {.model = &m, .store = st};
  assert_int_equal(kv_llm_new(&lo, &llm, err, sizeof err), 0);
  struct kv_rules_dedup_stats ds;
  assert_int_equal(kv_rules_dedup_all(st, llm, 10, &ds, err, sizeof err), 0);
  assert_int_equal(ds.word_merges, 0);
  assert_int_equal(ds.judge_calls, 4); /* one per rule with earlier ones kept */
  assert_int_equal(ds.judge_same, 2);
  assert_int_equal(ds.judge_different, 1);
  assert_int_equal(ds.judge_unclear, 1);
  /* each call listed every earlier rule kept: the fourth's, rules 1 and 3 */
  int saw = 0;
  for (int i = 0; i < standin_count(srv); i++) {
    struct standin_request rq;
    assert_int_equal(standin_get(srv, i, &rq), 0);
    if (rq.body && strstr(rq.body, "A new rule: You cannot write theta_out from several")) {
      saw = 1;
      assert_non_null(strstr(rq.body, "1. You cannot call eta_fn: no library"));
      assert_non_null(strstr(rq.body, "2. You cannot write theta_out from two threads"));
      assert_null(strstr(rq.body, "since kevo links nothing"));
    }
  }
  assert_true(saw);
  struct kv_rule_meta *rows;
  int n;
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(named(rows, n, rules[0])->count, 2); /* the earlier rule keeps its text */
  assert_int_equal(named(rows, n, rules[2])->count, 2);
  assert_non_null(named(rows, n, rules[4]));
  kv_rule_metas_free(rows, n);
  /* A second pass: every verdict is known but the unclear one, asked again. */
  assert_int_equal(kv_rules_dedup_all(st, llm, 10, &ds, err, sizeof err), 0);
  assert_int_equal(ds.judge_calls, 1);
  assert_int_equal(ds.judge_different, 1);
  assert_int_equal(ds.judge_unclear, 1);
  /* judge_max 0: nothing asked, the pairs left counted */
  assert_int_equal(kv_rules_dedup_all(st, llm, 0, &ds, err, sizeof err), 0);
  assert_int_equal(ds.judge_calls, 0);
  assert_int_equal(ds.pairs_left, 2);
  kv_llm_free(llm);
  standin_stop(srv);
  kv_store_close(st);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_judge_all)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
