/* Online attribution's arithmetic and decisions (kevo/attrib.h): the
 * least-squares Shapley estimate on games with known values, the decision
 * to turn a player off (and only when it costs more than it adds), the
 * masks drawn, and a step's params written and read back. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kevo/attrib.h"
#include "kevo/prompt.h"

#define PERF 0 /* players of a mask holding performance and history */
#define HIST 1

static void init2(struct kv_attr *a, double price) {
  struct kv_attr_opts o = {1.0, price, 3};
  kv_attr_init(a, (1u << KV_PB_PERFORMANCE) | (1u << KV_PB_HISTORY) | (1u << KV_PB_TASK), &o, 7);
}

/* y = 0.2 + 1.0 [history] - 0.3 [performance], exactly: phi = the
 * coefficients, se 0, and performance (below any cost) is turned off after
 * `patience` steps once the fit has enough steps; history never is. */
static void test_additive_game(void **state) {
  (void)state;
  struct kv_attr a;
  init2(&a, 0.05);
  assert_int_equal(a.n, 2);
  assert_string_equal(kv_attr_player_name(&a, PERF), "performance");
  assert_string_equal(kv_attr_player_name(&a, HIST), "history");
  kv_attr_cost_seen(&a, PERF, 300); /* 100 tokens: a cost of 0.005 */
  kv_attr_cost_seen(&a, HIST, 600);
  int off = -1, at = -1;
  char note[512];
  for (int k = 0; k < 16 && off < 0; k++) {
    unsigned m = (unsigned)(k & 3);
    double y = 0.2 + 1.0 * ((m >> HIST) & 1) - 0.3 * ((m >> PERF) & 1);
    off = kv_attr_observe(&a, m, y, k, note, sizeof note);
    at = k;
    struct kv_attr_estimate e;
    kv_attr_estimate(&a, &e);
    if (e.ok) {
      assert_true(fabs(e.phi[HIST] - 1.0) < 1e-9);
      assert_true(fabs(e.phi[PERF] + 0.3) < 1e-9);
      assert_true(e.se[HIST] < 1e-6);
      assert_true(fabs(e.cost[PERF] - 0.005) < 1e-12);
    }
  }
  assert_int_equal(off, PERF);
  assert_int_equal(at, 9); /* the fit from 8 steps, then 3 below in a row */
  assert_non_null(strstr(note, "performance off from step 10"));
  assert_non_null(strstr(note, "Shapley estimate -0.300"));
  assert_int_equal(a.off[PERF], 1);
  assert_int_equal(a.off[HIST], 0);
  /* Once off, a player is never drawn again. */
  for (int k = 0; k < 50; k++) {
    int r;
    assert_int_equal(kv_attr_draw(&a, &r) & (1u << PERF), 0);
  }
  kv_attr_free(&a);
}

/* Resume: the same observations replayed decide nothing (live, they came in
 * the order they were judged, which the rows do not keep); the recorded
 * decision is applied where its note stands. */
static void test_replay(void **state) {
  (void)state;
  struct kv_attr a;
  init2(&a, 0.05);
  kv_attr_cost_seen(&a, PERF, 300);
  kv_attr_cost_seen(&a, HIST, 600);
  a.replay = 1;
  for (int k = 0; k < 16; k++) {
    unsigned m = (unsigned)(k & 3);
    double y = 0.2 + 1.0 * ((m >> HIST) & 1) - 0.3 * ((m >> PERF) & 1);
    assert_int_equal(kv_attr_observe(&a, m, y, k, NULL, 0), -1);
  }
  assert_int_equal(a.off[PERF], 0); /* without replay: off at step 10 */
  assert_int_equal(kv_attr_apply_note(&a, "attr=x online attribution: performance off from step "
                                          "10: its Shapley estimate -0.300"),
                   PERF);
  assert_int_equal(a.off[PERF], 1);
  assert_int_equal(kv_attr_apply_note(&a, "attr=performance:1:100"), -1);
  assert_int_equal(kv_attr_apply_note(&a, "online attribution: frob off"), -1);
  assert_int_equal(a.off[HIST], 0);
  kv_attr_free(&a);
}

/* A player that adds more than it costs, or whose block costs nothing, is
 * kept however long the run. */
static void test_kept(void **state) {
  (void)state;
  struct kv_attr a;
  init2(&a, 0.05);
  kv_attr_cost_seen(&a, PERF, 0); /* adds nothing to prompts: free */
  kv_attr_cost_seen(&a, HIST, 600);
  for (int k = 0; k < 64; k++) {
    unsigned m = (unsigned)(k & 3);
    assert_int_equal(kv_attr_observe(&a, m, 0.5 * ((m >> HIST) & 1), k, NULL, 0), -1);
  }
  kv_attr_free(&a);
}

/* Randomised steps come at the share asked, each player on about half. */
static void test_draw(void **state) {
  (void)state;
  struct kv_attr a;
  struct kv_attr_opts o = {0.25, 0.05, 3};
  kv_attr_init(&a, KV_PB_ALL, &o, 11);
  assert_int_equal(a.n, 5); /* performance, profile, rules, history, static */
  int nr = 0, on[5] = {0};
  for (int k = 0; k < 4000; k++) {
    int r;
    unsigned m = kv_attr_draw(&a, &r);
    if (!r) {
      assert_int_equal(m, 31); /* every player */
      continue;
    }
    nr++;
    for (int i = 0; i < 5; i++)
      on[i] += (m >> i) & 1;
  }
  assert_true(nr > 850 && nr < 1150);
  for (int i = 0; i < 5; i++)
    assert_true(on[i] > nr * 0.4 && on[i] < nr * 0.6);
  unsigned pm = kv_attr_prompt_mask(&a, KV_PB_ALL, 1u << 3); /* history only */
  assert_int_equal(pm & (1u << KV_PB_HISTORY), 1u << KV_PB_HISTORY);
  assert_int_equal(pm & (1u << KV_PB_PERFORMANCE), 0);
  assert_int_equal(pm & (1u << KV_PB_TASK), 1u << KV_PB_TASK);
  kv_attr_free(&a);
}

static void test_params(void **state) {
  (void)state;
  struct kv_attr a, b;
  init2(&a, 0.05);
  init2(&b, 0.05);
  size_t bytes[KV_ATTR_MAX] = {120, 300};
  char t[200];
  kv_attr_params(&a, 1u << HIST, 1, bytes, t, sizeof t);
  assert_string_equal(t, "attr=performance:0:40,history:1:100");
  unsigned m = 0;
  char params[300];
  snprintf(params, sizeof params, "parent=3 %s | online attribution: ...", t);
  assert_int_equal(kv_attr_params_read(&b, params, &m), 1);
  assert_int_equal(m, 1u << HIST);
  assert_int_equal(b.measures[HIST], 1);
  assert_true(fabs(b.tokens[HIST] - 100) < 1e-9);
  assert_int_equal(kv_attr_params_read(&b, "parent=3 pool=1,2", &m), 0);
  assert_int_equal(kv_attr_params_read(&b, NULL, &m), 0);
  a.off[PERF] = 1;
  kv_attr_params(&a, 1u << HIST, 0, NULL, t, sizeof t);
  assert_string_equal(t, "off=performance");
  kv_attr_params(&a, 1u << HIST, 1, bytes, t, sizeof t);
  assert_string_equal(t, "attr=history:1:100");
  kv_attr_free(&a);
  kv_attr_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_additive_game), cmocka_unit_test(test_kept),
      cmocka_unit_test(test_replay),        cmocka_unit_test(test_draw),
      cmocka_unit_test(test_params),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
