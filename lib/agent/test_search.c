/* The tree search's arithmetic (rewards, UCB, selection, pools) and the rule
 * memory (extraction, similarity, merging, threshold). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/rules.h"

static void test_rewards(void **state) {
  (void)state;
  assert_true(kva_ada_reward(KV_V_COMPILE_ERROR, -1) == 0.0);
  assert_true(kva_ada_reward(-1, -1) == 0.0); /* no code */
  assert_true(fabs(kva_ada_reward(KV_V_WRONG_OUTPUT, -1) - 0.05) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_CRASH, -1) - 0.05) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_OK, 1.0) - 1.0) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_OK, -1) - 1.0) < 1e-12); /* untimed */
  assert_true(fabs(kva_ada_reward(KV_V_OK, 0.01) - 0.4) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_OK, 0.25) - 0.4) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_OK, 4) - 1.6) < 1e-12);
  assert_true(fabs(kva_ada_reward(KV_V_OK, 100) - 1.6) < 1e-12);
  double prev = 0;
  for (double s = 0.25; s <= 4.0; s *= 1.3) {
    double r = kva_ada_reward(KV_V_OK, s);
    assert_true(r > prev);
    prev = r;
  }
}

static void test_ucb(void **state) {
  (void)state;
  assert_true(isinf(kva_ada_ucb(0, 0, 10, 1.0)));
  assert_true(fabs(kva_ada_ucb(3.0, 3, 1, 1.0) - 1.0) < 1e-12); /* ln 1 = 0 */
  double u = kva_ada_ucb(2.0, 4, 20, 1.5);
  assert_true(fabs(u - (0.5 + 1.5 * sqrt(log(20.0) / 4))) < 1e-12);
  /* Fewer visits, same mean: more exploration bonus. */
  assert_true(kva_ada_ucb(1.0, 1, 20, 1.0) > kva_ada_ucb(10.0, 10, 20, 1.0));
  /* No exploration: the mean decides. */
  assert_true(kva_ada_ucb(1.5, 1, 20, 0) > kva_ada_ucb(10.0, 10, 20, 0));
}

/* Builds nodes (parent, reward) and backpropagates each in order. */
static void build(struct kva_ada_node *n, int count, const int *parent, const double *reward) {
  memset(n, 0, (size_t)count * sizeof *n);
  for (int i = 0; i < count; i++) {
    n[i].parent = parent[i];
    n[i].chain = parent[i] < 0 ? i : n[parent[i]].chain;
    n[i].small = parent[i] < 0 ? 0 : n[parent[i]].small + 1;
    n[i].has_code = 1;
    n[i].reward = reward[i];
    kva_ada_backprop(n, i);
  }
}

static void test_backprop_and_select(void **state) {
  (void)state;
  struct kva_ada_node n[6];
  /* Two chains: 0 -> 1 -> 2 (good), 3 -> 4 (bad), plus 5 under 3. */
  int parent[6] = {-1, 0, 1, -1, 3, 3};
  double reward[6] = {1.0, 1.2, 1.5, 0.05, 0.0, 0.05};
  build(n, 6, parent, reward);
  assert_int_equal(n[0].visits, 3);
  assert_true(fabs(n[0].value - 3.7) < 1e-12);
  assert_int_equal(n[3].visits, 3);
  assert_int_equal(n[2].chain, 0);
  assert_int_equal(n[2].small, 2);
  /* Without exploration the search walks the good chain to its best leaf. */
  assert_int_equal(kva_ada_select(n, 6, 0.0), 2);
  /* An unvisited root is tried first. */
  struct kva_ada_node m[7];
  memcpy(m, n, sizeof n);
  m[6] = (struct kva_ada_node){.parent = -1, .chain = 6, .has_code = 1, .reward = 0.05};
  assert_int_equal(kva_ada_select(m, 7, 1.0), 6);
  /* Nodes without code are never selected; nothing with code: -1. */
  for (int i = 0; i < 6; i++)
    n[i].has_code = 0;
  assert_int_equal(kva_ada_select(n, 6, 1.0), -1);
  assert_int_equal(kva_ada_select(n, 0, 1.0), -1);
}

static void test_pool(void **state) {
  (void)state;
  struct kva_ada_node n[7];
  int parent[7] = {-1, 0, 0, -1, 3, -1, -1};
  double reward[7] = {1.0, 1.6, 0.05, 0.4, 0.05, 0.0, 1.2};
  build(n, 7, parent, reward);
  n[5].has_code = 0; /* a reply without code: its chain has nothing to offer */
  uint64_t rng = 42;
  int hits[7] = {0}, chains_seen[7] = {0};
  for (int trial = 0; trial < 2000; trial++) {
    int out[8];
    int k = kva_ada_pool(n, 7, 3, &rng, out);
    assert_int_equal(k, 3); /* chains 0, 3, 6 have code */
    int per_chain[7] = {0};
    for (int i = 0; i < k; i++) {
      assert_true(n[out[i]].has_code);
      per_chain[n[out[i]].chain]++;
      hits[out[i]]++;
      chains_seen[n[out[i]].chain]++;
    }
    for (int c = 0; c < 7; c++)
      assert_true(per_chain[c] <= 1); /* at most one per chain */
  }
  assert_int_equal(hits[5], 0);
  /* Within chain 0, sampled by reward: 1.6 > 1.0 > 0.05. */
  assert_true(hits[1] > hits[0]);
  assert_true(hits[0] > hits[2] * 5);
  /* Fewer chains than asked: one each. */
  int out[8];
  assert_int_equal(kva_ada_pool(n, 7, 8, &rng, out), 3);
  assert_int_equal(kva_ada_pool(n, 7, 2, &rng, out), 2);
  assert_int_equal(kva_ada_pool(n, 0, 2, &rng, out), 0);
}

static void test_rules_from_log_and_reply(void **state) {
  (void)state;
  char out[4][KV_RULE_MAX];
  const char *gcc = "candidate.c: In function 'rowsum':\n"
                    "candidate.c:3:5: error: \xe2\x80\x98"
                    "acc\xe2\x80\x99 undeclared (first use in this function)\n"
                    "candidate.c:1:10: fatal error: immintrin_x.h: No such file or directory\n"
                    "candidate.c:4:6: error: conflicting types for 'rowsum'; have 'void(int)'\n"
                    "candidate.c:5:3: warning: implicit declaration of function 'fast_sum'\n";
  int n = kv_rules_from_log(gcc, "rowsum", out, 4);
  assert_int_equal(n, 4);
  assert_non_null(strstr(out[0], "You cannot use acc without declaring it"));
  assert_string_equal(out[1], "You cannot include immintrin_x.h: that header is not available.");
  assert_non_null(strstr(out[2], "You cannot change the signature of rowsum"));
  assert_non_null(strstr(out[3], "You cannot call fast_sum without including"));
  assert_int_equal(kv_rules_from_log(gcc, "rowsum", out, 2), 2); /* capped */
  const char *clang = "x.c:2:3: error: use of undeclared identifier 'tmp'\n";
  assert_int_equal(kv_rules_from_log(clang, "rowsum", out, 4), 1);
  assert_non_null(strstr(out[0], "You cannot use tmp"));
  assert_int_equal(kv_rules_from_log(NULL, "rowsum", out, 4), 0);
  const char *reply = "Here are the rules:\n- You cannot read x past cols.\n"
                      "  * you cannot assume rows is even\nsomething else\n"
                      "- You cannot read x past cols.\n";
  n = kv_rules_from_reply(reply, out, 4);
  assert_int_equal(n, 2);
  assert_string_equal(out[0], "You cannot read x past cols.");
  assert_string_equal(out[1], "you cannot assume rows is even");
}

/* A loader's "undefined symbol: ENTRY" is the kernel not defining its entry
 * point (a misnamed or mangled function): learnt as a definition to write,
 * never as "You cannot call softmax" (issue 17); another undefined symbol
 * is still a call to avoid. */
static void test_rules_missing_entry(void **state) {
  (void)state;
  char path[] = "/tmp/kevo-rules-entry-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  struct kv_store *st = NULL;
  char err[512];
  assert_int_equal(kv_store_open(path, &st, err, sizeof err), 0);
  const char *spec = "{\"name\":\"softmax\",\"entry\":\"softmax\",\"params\":["
                     "{\"name\":\"x\",\"role\":\"in\",\"dtype\":\"f32\",\"shape\":[\"n\"]},"
                     "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f32\",\"shape\":[\"n\"]},"
                     "{\"name\":\"n\",\"role\":\"size\"}],\"check\":[{\"n\":3}]}";
  struct kv_task *t = NULL;
  assert_int_equal(kv_task_parse(spec, strlen(spec), "task.json", &t, err, sizeof err), 0);
  struct kv_gate_result r;
  memset(&r, 0, sizeof r);
  r.verdict = KV_V_LOAD_ERROR;
  snprintf(r.detail, sizeof r.detail, "%s",
           "/tmp/kc/obj/ab.so: undefined symbol: softmax (the kernel does not load)");
  assert_int_equal(kv_rules_learn(st, t, NULL, &r, "void soft_max(void) {}", "cpu", 0, NULL, 0, 0,
                                  err, sizeof err),
                   1);
  snprintf(r.detail, sizeof r.detail, "%s", "/tmp/kc/obj/cd.so: undefined symbol: fast_exp");
  assert_int_equal(kv_rules_learn(st, t, NULL, &r, "float fast_exp(float);", "cpu", 0, NULL, 0, 0,
                                  err, sizeof err),
                   1);
  struct kv_rule_row *rows = NULL;
  int n = 0;
  assert_int_equal(kv_store_rules(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  int define = 0, call = 0;
  for (int i = 0; i < n; i++) {
    assert_null(strstr(rows[i].text, "cannot call softmax"));
    define += strstr(rows[i].text, "You must define softmax yourself") != NULL;
    call += strstr(rows[i].text, "You cannot call fast_exp") != NULL;
  }
  assert_int_equal(define, 1);
  assert_int_equal(call, 1);
  kv_rule_rows_free(rows, n);
  kv_task_free(t);
  kv_store_close(st);
  unlink(path);
}

static void test_similarity(void **state) {
  (void)state;
  assert_true(kv_rules_similarity("You cannot call malloc.", "you cannot call MALLOC") == 1.0);
  assert_true(kv_rules_similarity("You cannot call malloc in a kernel.",
                                  "You cannot call malloc inside a kernel.") >= 0.6);
  assert_true(kv_rules_similarity("You cannot call malloc.", "You cannot use __syncthreads in a "
                                                             "divergent branch.") < 0.2);
}

static void test_rule_merging(void **state) {
  (void)state;
  char path[] = "/tmp/kevo-rules-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  unlink(path);
  struct kv_store *st = NULL;
  char err[512];
  assert_int_equal(kv_store_open(path, &st, err, sizeof err), 0);
  int64_t a = 0, b = 0, c = 0, d = 0;
  assert_int_equal(
      kv_rules_add(st, "You cannot call malloc in the kernel.", "llm", 1, 5, &a, err, sizeof err),
      0);
  /* Differently worded, same words: merged. */
  assert_int_equal(kv_rules_add(st, "you cannot call MALLOC in the kernel", "compiler", 1, 6, &b,
                                err, sizeof err),
                   0);
  assert_int_equal(a, b);
  /* A near-duplicate (one word more) merges too; another rule does not. */
  assert_int_equal(kv_rules_add(st, "You cannot call malloc in the kernel ever.", "llm", 1, 7, &c,
                                err, sizeof err),
                   0);
  assert_int_equal(c, a);
  assert_int_equal(
      kv_rules_add(st, "You cannot read past the end of x.", "llm", 1, 8, &d, err, sizeof err), 0);
  assert_true(d != a);
  struct kv_rule_row *rows = NULL;
  int n = 0;
  assert_int_equal(kv_store_rules(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(rows[0].count, 3);
  assert_string_equal(rows[0].evals, "5 6 7");
  assert_string_equal(rows[0].text, "You cannot call malloc in the kernel.");
  kv_rule_rows_free(rows, n);
  /* Threshold: only rules seen that often are active, most frequent first. */
  char **texts = NULL;
  assert_int_equal(kv_rules_active(st, 2, &texts, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_string_equal(texts[0], "You cannot call malloc in the kernel.");
  kv_rules_free(texts, n);
  assert_int_equal(kv_rules_active(st, 1, &texts, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(texts[1], "You cannot read past the end of x.");
  kv_rules_free(texts, n);
  kv_store_close(st);
  unlink(path);
  char side[600];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rewards),
      cmocka_unit_test(test_ucb),
      cmocka_unit_test(test_backprop_and_select),
      cmocka_unit_test(test_pool),
      cmocka_unit_test(test_rules_from_log_and_reply),
      cmocka_unit_test(test_similarity),
      cmocka_unit_test(test_rules_missing_entry),
      cmocka_unit_test(test_rule_merging),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
