/* Shapley values, dividends and interaction indices on games with known
 * values; bootstrap intervals and the permutation test on sampled data. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kevo/analysis.h"
#include "kevo/store.h"
#include "kevo/util.h"

#define EPS 1e-12

static int pc(unsigned x) {
  int c = 0;
  for (; x; x &= x - 1)
    c++;
  return c;
}

static void test_additive(void **state) {
  (void)state;
  const double w[4] = {0.5, -1.25, 2, 0};
  double v[16], phi[4], d[16], I[16];
  for (unsigned S = 0; S < 16; S++) {
    v[S] = 0;
    for (int i = 0; i < 4; i++)
      if (S & (1u << i))
        v[S] += w[i];
  }
  assert_int_equal(kv_shapley(4, v, phi), 0);
  assert_int_equal(kv_harsanyi(4, v, d), 0);
  assert_int_equal(kv_interaction_index(4, v, I), 0);
  for (int i = 0; i < 4; i++) {
    assert_true(fabs(phi[i] - w[i]) < EPS);
    assert_true(fabs(I[1u << i] - w[i]) < EPS); /* I({i}) is phi_i */
  }
  for (unsigned S = 0; S < 16; S++)
    if (pc(S) >= 2) {
      assert_true(fabs(d[S]) < EPS);
      assert_true(fabs(I[S]) < EPS);
    }
}

static void test_unanimity(void **state) {
  (void)state;
  /* u_T with T = {0, 2, 3} among 5 players */
  unsigned T = 1u | 4u | 8u;
  double v[32], phi[5], d[32], I[32];
  for (unsigned S = 0; S < 32; S++)
    v[S] = (S & T) == T;
  kv_shapley(5, v, phi);
  kv_harsanyi(5, v, d);
  kv_interaction_index(5, v, I);
  for (int i = 0; i < 5; i++)
    assert_true(fabs(phi[i] - ((T >> i) & 1 ? 1.0 / 3 : 0)) < EPS);
  for (unsigned S = 0; S < 32; S++) {
    assert_true(fabs(d[S] - (S == T)) < EPS);
    double want = S && (S & T) == S ? 1.0 / (3 - pc(S) + 1) : 0;
    if (S)
      assert_true(fabs(I[S] - want) < EPS);
  }
}

static void test_majority(void **state) {
  (void)state;
  double v[8], phi[3], d[8], I[8];
  for (unsigned S = 0; S < 8; S++)
    v[S] = pc(S) >= 2;
  kv_shapley(3, v, phi);
  kv_harsanyi(3, v, d);
  kv_interaction_index(3, v, I);
  for (int i = 0; i < 3; i++)
    assert_true(fabs(phi[i] - 1.0 / 3) < EPS);
  assert_true(fabs(d[3] - 1) < EPS && fabs(d[5] - 1) < EPS && fabs(d[6] - 1) < EPS);
  assert_true(fabs(d[7] + 2) < EPS);
  assert_true(fabs(I[3]) < EPS && fabs(I[5]) < EPS && fabs(I[6]) < EPS); /* 1 - 2/2 */
  assert_true(fabs(I[7] + 2) < EPS);
}

static void test_efficiency_and_bounds(void **state) {
  (void)state;
  double v[64], phi[6], d[64];
  uint64_t x = 12345;
  for (int S = 0; S < 64; S++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    v[S] = (double)(x >> 40) / (1 << 24);
  }
  kv_shapley(6, v, phi);
  kv_harsanyi(6, v, d);
  double s = 0, back = 0;
  for (int i = 0; i < 6; i++)
    s += phi[i];
  assert_true(fabs(s - (v[63] - v[0])) < 1e-9);
  for (int S = 0; S < 64; S++)
    if ((S & 63) == S)
      back += d[S];
  assert_true(fabs(back - v[63]) < 1e-9); /* v(N) = sum of dividends */
  assert_int_equal(kv_shapley(7, v, phi), -1);
  assert_int_equal(kv_shapley(0, v, phi), -1);
}

/* Sampled data of a deterministic game: intervals collapse on the values, a
 * null player's p is 1, a decisive one's is small. */
static void test_sampled_deterministic(void **state) {
  (void)state;
  int n = 2, nodes = 3, k = 4, ns = 4;
  double y[3 * 4 * 4];
  for (int a = 0; a < nodes; a++)
    for (int S = 0; S < ns; S++)
      for (int j = 0; j < k; j++)
        y[(a * ns + S) * k + j] = (S & 1) ? 1 : 0; /* player 0 decides; player 1 does nothing */
  struct kv_an_data d = {n, nodes, k, y};
  struct kv_an_attr *at = calloc(1, sizeof *at);
  char err[256];
  assert_int_equal(kv_an_attribute(&d, 200, 200, 7, at, err, sizeof err), 0);
  assert_true(fabs(at->phi[0] - 1) < EPS && fabs(at->phi[1]) < EPS);
  assert_true(fabs(at->phi_lo[0] - 1) < EPS && fabs(at->phi_hi[0] - 1) < EPS);
  assert_true(at->phi_p[0] < 0.01);
  assert_true(fabs(at->phi_p[1] - 1) < EPS);
  free(at);
}

/* Noisy data: the interval holds the value and has width. */
static void test_sampled_noisy(void **state) {
  (void)state;
  int n = 1, nodes = 20, k = 10, ns = 2;
  double *y = calloc((size_t)nodes * ns * k, sizeof *y);
  uint64_t x = 99;
  for (int a = 0; a < nodes; a++)
    for (int S = 0; S < ns; S++)
      for (int j = 0; j < k; j++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) / 9007199254740992.0;
        y[(a * ns + S) * k + j] = u < (S ? 0.7 : 0.3);
      }
  struct kv_an_data d = {n, nodes, k, y};
  struct kv_an_attr *at = calloc(1, sizeof *at);
  char err[256];
  assert_int_equal(kv_an_attribute(&d, 500, 300, 3, at, err, sizeof err), 0);
  assert_true(at->phi_lo[0] <= at->phi[0] && at->phi[0] <= at->phi_hi[0]);
  assert_true(at->phi_hi[0] - at->phi_lo[0] > 0.05);
  assert_true(at->phi_lo[0] > 0.2 && at->phi_hi[0] < 0.6);
  assert_true(at->phi_p[0] < 0.01);
  /* deterministic in the seed */
  struct kv_an_attr *b = calloc(1, sizeof *b);
  kv_an_attribute(&d, 500, 300, 3, b, err, sizeof err);
  assert_true(b->phi_lo[0] == at->phi_lo[0] && b->phi_p[0] == at->phi_p[0]);
  free(b);
  free(at);
  free(y);
}

static void test_plan_tags(void **state) {
  (void)state;
  unsigned t = kv_an_plan_tags("1. Unroll the loop.\n2. Use eight float LANES to accumulate.");
  char buf[64];
  for (int i = 0; i < KV_AN_NTAGS; i++) {
    const char *nm = kv_an_tag_name(i);
    int want = !strcmp(nm, "unroll") || !strcmp(nm, "accumulators");
    assert_int_equal((t >> i) & 1, want);
  }
  assert_int_equal(kv_an_plan_tags(NULL), 0);
  assert_string_equal(kv_an_metric_name(KV_AN_M_PASS, buf, sizeof buf), "pass_rate");
}

/* kv_an_load: an analysis read back from the store alone. Two players a
 * and b at three nodes, two samples each; it passes iff both are on, so
 * phi = 1/2 each and I({a,b}) = 1; an unfinished one loads as such; a
 * damaged config is an error naming the field. */
static void test_load(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-test-anload-XXXXXX", db[64], err[1024];
  assert_non_null(mkdtemp(dir));
  snprintf(db, sizeof db, "%s/k.db", dir);
  struct kv_store *s;
  assert_int_equal(kv_store_open(db, &s, err, sizeof err), 0);
  int64_t task, run, node[3], an, an2, bad;
  assert_int_equal(kv_store_put_task(s, "t", "/t", "h", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(s, task, "greedy", "{}", &run, err, sizeof err), 0);
  assert_int_equal(
      kv_store_put_source(s, "0000000000000000000000000000000000000000000000000000000000000000",
                          "x", 1, err, sizeof err),
      0);
  for (int i = 0; i < 3; i++) {
    struct kv_node_record nr = {0};
    nr.run_id = run;
    nr.step = 2 - i + 10; /* ids and steps in opposite orders */
    nr.action = "refine";
    nr.source_hash = "0000000000000000000000000000000000000000000000000000000000000000";
    nr.verdict = "ok";
    nr.speedup = -1;
    nr.reward = -1;
    int rc = kv_store_node_add(s, &nr, &node[i], err, sizeof err);
    if (rc)
      fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
  }
  const char *cfg = "{\"fast_threshold\":1.5,\"players\":[\"a\",\"b\"],\"samples\":2,"
                    "\"timing\":false,\"label\":\"m\",\"model\":\"m\",\"provider\":\"openai\"}";
  int created;
  assert_int_equal(
      kv_store_analysis_open(s, run, "shapley", cfg, 1, &an, &created, err, sizeof err), 0);
  assert_int_equal(
      kv_store_analysis_open(s, run, "shapley", cfg, 1, &an2, &created, err, sizeof err), 0);
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < 4; c++)
      for (int j = 0; j < 2; j++) {
        struct kv_analysis_sample a = {0};
        a.node_id = node[i];
        a.cond = c;
        a.sample = j;
        a.verdict = c == 3 ? "ok" : "wrong_output";
        a.speedup = -1;
        a.analysis_id = an;
        assert_int_equal(kv_store_analysis_sample_put(s, &a, err, sizeof err), 0);
        if (i < 2) { /* the second analysis stops before its last node */
          a.analysis_id = an2;
          assert_int_equal(kv_store_analysis_sample_put(s, &a, err, sizeof err), 0);
        }
      }
  assert_int_equal(kv_store_analysis_set_status(s, an, "done", err, sizeof err), 0);
  struct kv_an_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  assert_int_equal(kv_an_load(s, an, 100, r, err, sizeof err), 0);
  assert_int_equal(r->complete, 1);
  assert_string_equal(r->experiment, "shapley");
  assert_int_equal(r->n, 2);
  assert_string_equal(r->names[1], "b");
  assert_int_equal(r->nnodes, 3);
  assert_int_equal(r->k, 2);
  assert_int_equal(r->node_steps[0], 10); /* step order */
  assert_int_equal(r->node_steps[2], 12);
  assert_true(fabs(r->fast_threshold - 1.5) < EPS);
  assert_int_equal(r->timed, 0);
  assert_true(fabs(r->attr[KV_AN_M_PASS].phi[0] - 0.5) < EPS);
  assert_true(fabs(r->attr[KV_AN_M_PASS].phi[1] - 0.5) < EPS);
  assert_true(fabs(r->attr[KV_AN_M_PASS].I[3] - 1) < EPS);
  assert_true(fabs(r->attr[KV_AN_M_COMPILE].phi[0]) < EPS); /* every sample compiled */
  kv_an_result_free(r);
  /* the latest (an2): unfinished, nothing attributed */
  assert_int_equal(kv_an_load(s, 0, 100, r, err, sizeof err), 0);
  assert_int_equal(r->analysis_id, an2);
  assert_int_equal(r->complete, 0);
  assert_int_equal(r->nnodes, 2);
  kv_an_result_free(r);
  /* damaged: a config with no players */
  assert_int_equal(kv_store_analysis_open(s, run, "shapley", "{\"samples\":2}", 1, &bad, &created,
                                          err, sizeof err),
                   0);
  assert_int_equal(kv_an_load(s, bad, 100, r, err, sizeof err), -1);
  assert_non_null(strstr(err, "analyses.config_json has 0 players"));
  assert_int_equal(kv_an_load(s, 999, 100, r, err, sizeof err), -1);
  assert_non_null(strstr(err, "analysis 999 is not in"));
  free(r);
  kv_store_close(s);
  kv_rmtree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_additive),
      cmocka_unit_test(test_unanimity),
      cmocka_unit_test(test_majority),
      cmocka_unit_test(test_efficiency_and_bounds),
      cmocka_unit_test(test_sampled_deterministic),
      cmocka_unit_test(test_sampled_noisy),
      cmocka_unit_test(test_plan_tags),
      cmocka_unit_test(test_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
