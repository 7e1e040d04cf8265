/* KLineage's checks, pure parts: the features kevo observes in code, the
 * audit's citations re-read (lines that do not exist or do not hold the
 * quote fail), the round trip's 0.99x in every trial and its features, the
 * model's preconditions, and retrieval by observed features (a row-reduction
 * skill is not offered to transpose). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"
#include "kevo/util.h"

static const char *src_dir(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  return s ? s : KEVO_SOURCE_DIR;
}

static char *slurp(const char *rel) {
  char path[4096], err[512];
  snprintf(path, sizeof path, "%s/%s", src_dir(), rel);
  char *t = NULL;
  size_t n = 0;
  if (kv_read_file(path, 16 << 20, &t, &n, err, sizeof err) != 0)
    fail_msg("%s", err);
  return t;
}

static uint32_t feats(const char *src) {
  struct kv_features f;
  assert_int_equal(kv_features_scan(src, strlen(src), &f), 0);
  return f.bits;
}

#define HAS(bits, k) (((bits) >> (k)) & 1u)

static void test_features(void **state) {
  (void)state;
  char *good = slurp("examples/tasks/rowsum/good.c");
  uint32_t b = feats(good);
  assert_true(HAS(b, KV_FEAT_OMP_THREADS));
  assert_true(HAS(b, KV_FEAT_MULTI_ACC));
  assert_true(HAS(b, KV_FEAT_REDUCTION));
  assert_false(HAS(b, KV_FEAT_SMEM));
  free(good);
  char *tr = slurp("examples/tasks/transpose/starter.c");
  b = feats(tr);
  assert_false(HAS(b, KV_FEAT_REDUCTION)); /* r0 += TB in a for header is not one */
  assert_false(HAS(b, KV_FEAT_MULTI_ACC));
  free(tr);
  /* CUDA reductions read through __ldg, a vector's components, shuffles */
  assert_true(HAS(feats("s += __ldg(xr + c);"), KV_FEAT_REDUCTION));
  assert_true(HAS(feats("s += (v.x + v.y) + (v.z + v.w);"), KV_FEAT_REDUCTION));
  assert_true(HAS(feats("v += __shfl_xor_sync(0xffffffffu, v, o);"), KV_FEAT_REDUCTION));
  assert_false(HAS(feats("tile[i][tx] = __ldg(x + c); i += blockDim.x;"), KV_FEAT_REDUCTION));
  /* CUDA: PTX in strings counts, a comment does not */
  const char *cu = "// __shared__ float never; atomicAdd in a comment\n"
                   "__global__ void k(const float4 *x, float *y) {\n"
                   "  __shared__ float tile[2][32][33];\n"
                   "  float v = __shfl_down_sync(0xffffffff, 1.0f, 16);\n"
                   "  asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\" :: \"r\"(0), "
                   "\"l\"(x));\n"
                   "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {};\");\n"
                   "  #pragma unroll\n"
                   "  for (int i = threadIdx.x; i < 9; i += blockDim.x * gridDim.x) v += y[i];\n"
                   "  __syncthreads();\n"
                   "}\n";
  b = feats(cu);
  uint32_t want = 1u << KV_FEAT_SMEM | 1u << KV_FEAT_SMEM_DB | 1u << KV_FEAT_VECTOR |
                  1u << KV_FEAT_SHUFFLE | 1u << KV_FEAT_ASYNC | 1u << KV_FEAT_TENSOR |
                  1u << KV_FEAT_UNROLL | 1u << KV_FEAT_GRID_STRIDE | 1u << KV_FEAT_BARRIER |
                  1u << KV_FEAT_REDUCTION;
  char a[400], e[400];
  kv_features_format(b, a, sizeof a);
  kv_features_format(want, e, sizeof e);
  assert_string_equal(a, e); /* no atomics: only the comment named one */
  struct kv_features f;
  kv_features_scan(cu, strlen(cu), &f);
  assert_int_equal(f.line[KV_FEAT_SMEM], 3);
  assert_int_equal(f.line[KV_FEAT_SHUFFLE], 4);
  uint32_t bits;
  assert_int_equal(kv_features_parse("shared_memory, warp_shuffle", &bits, e, sizeof e), 0);
  assert_int_equal(bits, 1u << KV_FEAT_SMEM | 1u << KV_FEAT_SHUFFLE);
  assert_int_equal(kv_features_parse("none", &bits, e, sizeof e), 0);
  assert_int_equal(bits, 0);
  assert_int_equal(kv_features_parse("tiling", &bits, e, sizeof e), -1);
  assert_non_null(strstr(e, "'tiling' is not a feature kevo observes"));
}

static const char richer[] = "void f(const float *x, float *y, int n) {\n"    /* 1 */
                             "#pragma omp parallel for\n"                     /* 2 */
                             "  for (int i = 0; i < n; i++)\n"                /* 3 */
                             "    y[i] = 2 * x[i]; // threads: #pragma omp\n" /* 4 */
                             "}\n";                                           /* 5 */
static const char simpler[] = "void f(const float *x, float *y, int n) {\n"   /* 1 */
                              "  for (int i = 0; i < n; i++)\n"               /* 2 */
                              "    y[i] = 2 * x[i];\n"                        /* 3 */
                              "}\n";                                          /* 4 */

static int audit(const char *reply, char *why) {
  struct kv_audit a;
  int ok = kv_audit_check(reply, richer, simpler, &a);
  strcpy(why, a.why);
  assert_non_null(a.json);
  free(a.json);
  return ok;
}

static void test_audit_citations(void **state) {
  (void)state;
  char why[512];
  assert_int_equal(audit("Verdict: removed\nPresent: L2-L3 `#pragma omp parallel for`\n"
                         "Absent: L2 `for (int i = 0; i < n; i++)`\nReason: the pragma is gone.\n",
                         why),
                   1);
  /* lines that do not exist */
  assert_int_equal(audit("Verdict: removed\nPresent: L40-L41 `#pragma omp parallel for`\n"
                         "Absent: L2 `for`\nReason: x\n",
                         why),
                   0);
  assert_non_null(strstr(why, "L40-L41 is outside the kernel (5 lines)"));
  /* lines that do not hold the quote */
  assert_int_equal(audit("Verdict: removed\nPresent: L4 `#pragma omp parallel for`\n"
                         "Absent: L2 `for`\nReason: x\n",
                         why),
                   0);
  assert_non_null(strstr(why, "L4-L4 does not hold `#pragma omp parallel for`"));
  /* a comment that names the mechanism is not the mechanism */
  assert_int_equal(audit("Verdict: removed\nPresent: L4 `threads: #pragma omp`\n"
                         "Absent: L2 `for`\nReason: x\n",
                         why),
                   0);
  assert_non_null(strstr(why, "only in a comment; a comment proves nothing"));
  /* a "present" quote the simpler kernel still has is not what was removed */
  assert_int_equal(audit("Verdict: removed\nPresent: L4 `y[i] = 2 * x[i];`\nAbsent: L2 `for`\n"
                         "Reason: x\n",
                         why),
                   0);
  assert_non_null(strstr(why, "still in the simpler kernel"));
  assert_int_equal(
      audit("Verdict: kept\nPresent: L2 `#pragma omp`\nAbsent: L2 `for`\nReason: x\n", why), 0);
  assert_non_null(strstr(why, "verdict is 'kept'"));
  assert_int_equal(audit("Verdict: removed\nPresent: L2 `#pragma omp`\nReason: x\n", why), 0);
  assert_non_null(strstr(why, "no absent citation"));
  assert_int_equal(audit("Verdict: removed\nPresent: L2 omp\nAbsent: L2 `for`\nReason: x\n", why),
                   0);
  assert_non_null(strstr(why, "is not 'L<a>-L<b> `quote`'"));
  assert_int_equal(audit("Verdict: removed\nPresent: L2 `#pragma omp`\nAbsent: L2 `for`\n", why),
                   0);
  assert_non_null(strstr(why, "no reason"));
  /* more than 4 citations */
  assert_int_equal(audit("Verdict: removed\nPresent: L2 `omp`\nPresent: L2 `omp`\nPresent: L2 "
                         "`omp`\nPresent: L2 `omp`\nPresent: L2 `omp`\nAbsent: L2 `for`\n"
                         "Reason: x\n",
                         why),
                   0);
  assert_non_null(strstr(why, "more than 4 present citations"));
}

static void test_roundtrip(void **state) {
  (void)state;
  struct kv_roundtrip rt;
  double rich[6] = {10, 10, 10, 10, 10, 10}, ok[6] = {10, 9.95, 10.05, 10, 10.08, 9.9};
  for (int every = 0; every < 2; every++) {
    memset(&rt, 0, sizeof rt);
    kv_roundtrip_speed(rich, ok, 6, 0, every, 1, &rt);
    assert_int_equal(rt.passed, 1);
  }
  /* one trial at 0.985x: KLineage's rule wants 0.99x in EVERY trial */
  double one_slow[6] = {10, 10, 10, 10.15, 10, 10};
  memset(&rt, 0, sizeof rt);
  kv_roundtrip_speed(rich, one_slow, 6, 0.99, 1, 1, &rt);
  assert_int_equal(rt.passed, 0);
  assert_non_null(strstr(rt.why, "in trial 4 of 6"));
  assert_true(rt.overall >= 0.99); /* the median alone would have passed it */
  /* kevo's rule: one slow trial of six does not show the kernel slower */
  memset(&rt, 0, sizeof rt);
  kv_roundtrip_speed(rich, one_slow, 6, 0.99, 0, 1, &rt);
  assert_int_equal(rt.passed, 1);
  assert_true(rt.ci_hi >= 0.99);
  /* a re-derivation 10% slower in every trial fails both rules */
  double slow[6] = {11.1, 11, 11.2, 10.9, 11.1, 11};
  for (int every = 0; every < 2; every++) {
    memset(&rt, 0, sizeof rt);
    kv_roundtrip_speed(rich, slow, 6, 0.99, every, 1, &rt);
    assert_int_equal(rt.passed, 0);
    assert_non_null(strstr(rt.why, "speed not restored"));
  }
  memset(&rt, 0, sizeof rt);
  kv_roundtrip_features(1u << KV_FEAT_OMP_THREADS | 1u << KV_FEAT_MULTI_ACC | 1u << KV_FEAT_UNROLL,
                        1u << KV_FEAT_OMP_THREADS, &rt);
  assert_int_equal(rt.missing, 1u << KV_FEAT_MULTI_ACC); /* unroll is support, not strategy */
  assert_int_equal(rt.extra, 0);
  assert_true(kv_sources_same("int  a;\n\n b", "int a; b"));
  assert_false(kv_sources_same("int a;", "int b;"));
}

static struct kv_task *rowsum(void) {
  char dir[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/examples/tasks/rowsum", src_dir());
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    fail_msg("%s", err);
  return t;
}

static int pre(const struct kv_task *t, const char *reply, int all, char *err) {
  struct kv_mech m;
  memset(&m, 0, sizeof m);
  uint32_t req, conf, simple = 1u << KV_FEAT_REDUCTION | 1u << KV_FEAT_OMP_THREADS;
  return kv_precond_read(reply, t, "x86_64", simple, all, &m, &req, &conf, err, 1024);
}

static void test_preconditions(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  char err[1024];
  const char *good = "Dtypes: f32\nLayout: row-major\nStorage: global, registers\nPipeline: none\n"
                     "Hardware: x86_64\nScope: rowsum, softmax\nRequires: reduction\n"
                     "Conflicts: warp_shuffle\n";
  assert_int_equal(pre(t, good, 1, err), 0);
  struct {
    const char *reply, *expect;
  } bad[] = {
      {"Dtypes: float\n", "Dtypes: 'float' is not a dtype"},
      {"Dtypes: f64\n", "leaves out f32"},
      {"Layout: column-major\n", "measured on row-major"},
      {"Layout: diagonal\n", "'diagonal' is not one of"},
      {"Hardware: sm_80+\n", "leaves out x86_64"},
      {"Hardware: tpu\n", "is not hardware kevo knows"},
      {"Scope: softmax\n", "leaves out rowsum"},
      {"Requires: shared_memory\n", "Requires: shared_memory, which the simpler kernel's code"},
      {"Requires: tiling\n", "'tiling' is not a feature"},
      {"Conflicts: omp_threads\n", "Conflicts: omp_threads, which the simpler kernel's code"},
      {"Storage: disk\n", "'disk' is not one of"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(pre(t, bad[i].reply, 0, err), -1);
    if (!strstr(err, bad[i].expect))
      fail_msg("%s: got '%s'", bad[i].reply, err);
  }
  /* missing lines: kevo's defaults, unless every precondition is required */
  assert_int_equal(pre(t, "Dtypes: f32\n", 0, err), 0);
  assert_int_equal(pre(t, "Dtypes: f32\n", 1, err), -1);
  assert_non_null(strstr(err, "Layout: missing"));
  kv_task_free(t);
}

static struct kv_task *load_task(const char *name) {
  char dir[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/examples/tasks/%s", src_dir(), name);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    fail_msg("%s", err);
  return t;
}

static const char card_text[] =
    "{\"id\": \"rowsum/cpu/x86_64/LANES@1\", \"name\": \"LANES\", \"intent\": \"accumulators\", "
    "\"anchor\": {\"words\": \"w\", \"pattern\": \"acc[l] += xr[c + l];\"}, "
    "\"carrier\": {\"diff\": \"\"}, \"preconditions\": {\"dtypes\": [\"f32\"], \"layout\": "
    "[\"row-major\"]}, \"effect\": {\"speedup\": 4.0, \"ci\": [3.5, 4.5]}, "
    "\"scope\": {\"surface\": \"cpu\", \"arch\": \"x86_64\", \"task\": \"rowsum\", \"cases\": "
    "[\"*\"]}, \"requires\": [], \"provides\": [\"LANES\"], \"conflicts\": [], "
    "\"contract\": {\"requires\": [\"reduction\"], \"provides\": [\"multi_accumulator\"], "
    "\"conflicts\": [\"warp_shuffle\"]}, \"status\": \"admitted\"}";

static int match1(const char *task, const char *cand_rel, const char *cand_text, char *why) {
  struct kv_task *t = load_task(task);
  json_error_t je;
  json_t *card = json_loads(card_text, 0, &je), *cards = json_array();
  assert_non_null(card);
  json_array_append_new(cards, card);
  char *cand = cand_rel ? slurp(cand_rel) : NULL;
  struct kv_match_opts o = {.surface = "cpu", .arch = "x86_64"};
  o.candidate_src = cand ? cand : cand_text;
  struct kv_match m[4];
  int n = 0, nm = kv_skills_match(t, cards, &o, m, 4, &n);
  strcpy(why, m[0].why);
  free(cand);
  json_decref(cards);
  kv_task_free(t);
  return nm;
}

static void test_retrieval_by_features(void **state) {
  (void)state;
  char why[600];
  /* a row reduction: offered */
  if (match1("rowsum", "examples/tasks/rowsum/reference.c", NULL, why) != 1)
    fail_msg("rowsum: %s", why);
  /* transpose: the same dtypes, layout and sizes, but no reduction in its code */
  assert_int_equal(match1("transpose", "examples/tasks/transpose/starter.c", NULL, why), 0);
  assert_non_null(strstr(why, "requires reduction, which the candidate's code does not show"));
  /* what it provides is already there */
  assert_int_equal(match1("rowsum", NULL,
                          "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                          "  float a[4];\n  for (int c = 0; c < cols; c++) a[c & 3] += x[c];\n}\n",
                          why),
                   0);
  assert_non_null(strstr(why, "already provided: the candidate's code shows multi_accumulator"));
  /* a conflict observed in the code */
  assert_int_equal(match1("rowsum", NULL,
                          "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                          "  float s = 0; for (int c = 0; c < cols; c++) s += x[c];\n"
                          "  s = __shfl_down_sync(0xffffffffu, s, 1);\n}\n",
                          why),
                   0);
  assert_non_null(strstr(why, "conflicts with warp_shuffle"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_features),
      cmocka_unit_test(test_audit_citations),
      cmocka_unit_test(test_roundtrip),
      cmocka_unit_test(test_preconditions),
      cmocka_unit_test(test_retrieval_by_features),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
