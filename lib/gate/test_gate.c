/* Unit tests of the gate's parts that need no worker: comparison, poison,
 * perturbation, statistics in the JSON, verdict names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/gate/internal.h"
#include "../task/gen_core.h"
#include "kevo/runtime.h"

static const char *spec =
    "{\"name\":\"t\",\"entry\":\"f\",\"params\":["
    "{\"name\":\"x\",\"role\":\"in\",\"dtype\":\"f32\",\"shape\":[\"r\",\"c\"]},"
    "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f32\",\"shape\":[\"r\",\"c\"]},"
    "{\"name\":\"k\",\"role\":\"out\",\"dtype\":\"i32\",\"shape\":[\"r\"]},"
    "{\"name\":\"r\",\"role\":\"size\"},{\"name\":\"c\",\"role\":\"size\"}],"
    "\"check\":[{\"r\":3,\"c\":4}],\"tolerance\":{\"atol\":0.01,\"rtol\":0.1}}";

static struct kv_task *load(void) {
  struct kv_task *t;
  char err[512];
  int rc = kv_task_parse(spec, strlen(spec), "task.json", &t, err, sizeof err);
  if (rc != 0)
    fail_msg("%s", err);
  return t;
}

/* The table of surfaces is the one source: find, at, names and what each
 * surface is agree with it. */
static void test_surface_table(void **state) {
  (void)state;
  const struct kv_surface *cpu = kv_surface_find("cpu"), *cuda = kv_surface_find("cuda");
  assert_non_null(cpu);
  assert_non_null(cuda);
  assert_ptr_equal(kv_surface_find(NULL), cpu);
  assert_null(kv_surface_find("")); /* not a name; NULL is the default */
  assert_null(kv_surface_find("CUDA"));
  assert_null(kv_surface_find("rocm"));
  assert_ptr_equal(kv_surface_at(0), cpu);
  assert_ptr_equal(kv_surface_at(1), cuda);
  const struct kv_surface *torch = kv_surface_find("torch");
  assert_ptr_equal(kv_surface_at(2), torch);
  assert_null(kv_surface_at(3));
  assert_string_equal(kv_surface_ext(torch), "py");
  assert_int_equal(kv_surface_lang(torch), KV_LANG_PYTHON);
  assert_string_equal(kv_surface_lang_name(torch), "python");
  assert_false(kv_surface_gpu(torch)); /* on the CPU until its GPU timing (issue 28's IPC) */
  char names[256] = "";
  for (size_t i = 0; kv_surface_at(i); i++) {
    const struct kv_surface *sf = kv_surface_at(i);
    assert_ptr_equal(kv_surface_find(kv_surface_name(sf)), sf);
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             kv_surface_name(sf));
    /* a GPU surface is the one whose worker names the device */
    assert_int_equal(kv_surface_gpu(sf), sf->device_in_worker);
  }
  assert_string_equal(kv_surface_names(), names);
  assert_string_equal(kv_surface_ext(cpu), "c");
  assert_string_equal(kv_surface_ext(cuda), "cu");
  assert_int_equal(kv_surface_lang(cpu), KV_LANG_C);
  assert_int_equal(kv_surface_lang(cuda), KV_LANG_CUDA);
  assert_string_equal(kv_surface_lang_name(cpu), "c");
  assert_string_equal(kv_surface_lang_name(cuda), "cuda");
  assert_false(kv_surface_analyzed(cpu));
  assert_true(kv_surface_analyzed(cuda));
  assert_false(kv_surface_gpu(cpu));
  assert_true(kv_surface_gpu(cuda));
  /* NULL (an unknown name's lookup) answers as the default */
  assert_string_equal(kv_surface_name(NULL), "cpu");
  assert_string_equal(kv_surface_ext(NULL), "c");
  assert_false(kv_surface_gpu(NULL));
}

static void test_close_rule(void **state) {
  (void)state;
  struct kv_task *t = load();
  assert_true(kv_close(t, KV_F32, 1.0, 1.0 + 0.01 + 0.1 - 1e-9));
  assert_false(kv_close(t, KV_F32, 1.0, 1.0 + 0.01 + 0.1 + 1e-6));
  assert_true(kv_close(t, KV_F32, NAN, NAN));
  assert_false(kv_close(t, KV_F32, 1.0, NAN));
  assert_false(kv_close(t, KV_F32, NAN, 1.0));
  assert_true(kv_close(t, KV_F32, INFINITY, INFINITY));
  assert_false(kv_close(t, KV_F32, INFINITY, -INFINITY));
  assert_false(kv_close(t, KV_F32, 1e30, INFINITY));
  assert_true(kv_close(t, KV_I32, 5, 5));
  assert_false(kv_close(t, KV_I32, 5, 6)); /* integers are exact whatever the tolerance */
  kv_task_free(t);
}

static void test_compare_names_first_failure(void **state) {
  (void)state;
  struct kv_task *t = load();
  float exp[12], got[12];
  for (int i = 0; i < 12; i++)
    exp[i] = got[i] = (float)i;
  struct kv_cmp c;
  kv_compare(t, &t->check[0], 1, exp, got, 12, 0, &c);
  assert_int_equal(c.verdict, KV_V_OK);
  got[6] = 100; /* row 1, column 2 */
  got[9] = -3;
  kv_compare(t, &t->check[0], 1, exp, got, 12, 0, &c);
  assert_int_equal(c.verdict, KV_V_WRONG_OUTPUT);
  assert_int_equal(c.first_bad, 6);
  assert_non_null(strstr(c.detail, "y[1,2]: expected 6, got 100"));
  assert_non_null(strstr(c.detail, "2 of 12 elements differ"));
  /* Poison left anywhere beats a wrong value elsewhere: unwritten. */
  kv_poison_fill(KV_F32, &got[11], 1, 0);
  kv_compare(t, &t->check[0], 1, exp, got, 12, 0, &c);
  assert_int_equal(c.verdict, KV_V_UNWRITTEN_OUTPUT);
  assert_non_null(strstr(c.detail, "y[2,3] was never written"));
  /* The other poison pattern is just a wrong NaN. */
  kv_compare(t, &t->check[0], 1, exp, got, 12, 1, &c);
  assert_int_equal(c.verdict, KV_V_WRONG_OUTPUT);
  kv_task_free(t);
}

/* Outputs of millions of elements are scanned in chunks on several
 * threads: the same verdict, the first failure by index, the counts and the
 * largest differences as one pass would give, f32 and f64 alike. */
static void test_compare_large_in_chunks(void **state) {
  (void)state;
  struct kv_task *t = load();
  const int64_t n = 3 << 20; /* 48 chunks of 64K and more */
  float *exp = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
  double *e64 = malloc(sizeof(double) * (size_t)n), *g64 = malloc(sizeof(double) * (size_t)n);
  assert_true(exp && got && e64 && g64);
  for (int64_t i = 0; i < n; i++) {
    exp[i] = got[i] = (float)(i % 977) * 0.25f + 1.0f;
    e64[i] = g64[i] = exp[i];
  }
  struct kv_cmp c;
  kv_compare(t, &t->check[0], 1, exp, got, n, 0, &c);
  assert_int_equal(c.verdict, KV_V_OK);
  assert_true(c.max_abs == 0);
  /* Within tolerance everywhere (rtol 0.1): ok, the largest difference kept. */
  got[n - 5] = exp[n - 5] * 1.05f;
  kv_compare(t, &t->check[0], 1, exp, got, n, 0, &c);
  assert_int_equal(c.verdict, KV_V_OK);
  assert_true(c.max_rel > 0.04 && c.max_rel < 0.06);
  /* Wrong in a late chunk and an early one: the early one is named. */
  got[n - 100] = -1000;
  got[70000] = 500;
  kv_compare(t, &t->check[0], 1, exp, got, n, 0, &c);
  assert_int_equal(c.verdict, KV_V_WRONG_OUTPUT);
  assert_int_equal(c.first_bad, 70000);
  char want[64];
  snprintf(want, sizeof want, "2 of %lld elements differ", (long long)n);
  assert_non_null(strstr(c.detail, want));
  assert_true(c.max_abs >= 1000);
  /* Poison in the last chunk beats the wrong values: unwritten, counted. */
  kv_poison_fill(KV_F32, &got[n - 1], 1, 1);
  kv_poison_fill(KV_F32, &got[n - 2], 1, 1);
  kv_compare(t, &t->check[0], 1, exp, got, n, 1, &c);
  assert_int_equal(c.verdict, KV_V_UNWRITTEN_OUTPUT);
  assert_int_equal(c.first_bad, n - 2);
  assert_non_null(strstr(c.detail, "2 of"));
  /* f64 (the generic path) on the same chunks. */
  struct kv_task *t64;
  char err[512];
  const char *spec64 = "{\"name\":\"t\",\"entry\":\"f\",\"params\":["
                       "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f64\",\"shape\":[\"n\"]},"
                       "{\"name\":\"n\",\"role\":\"size\"}],\"check\":[{\"n\":8}]}";
  assert_int_equal(kv_task_parse(spec64, strlen(spec64), "t.json", &t64, err, sizeof err), 0);
  g64[n / 2] = 7e9;
  g64[n - 3] = -2;
  kv_compare(t64, &t64->check[0], 0, e64, g64, n, 0, &c);
  assert_int_equal(c.verdict, KV_V_WRONG_OUTPUT);
  assert_int_equal(c.first_bad, n / 2);
  kv_task_free(t64);
  free(exp);
  free(got);
  free(e64);
  free(g64);
  kv_task_free(t);
}

/* The sample of a validated timed call: whole below KV_SAMPLE_ELEMS; above,
 * one index per stratum (ascending, in range, the same for a seed, another
 * for another seed or param), and a skipped share of 1e-4 of an output, put
 * where a cheater likes, is seen by the sampled judge, which names the real
 * element. */
static void test_sample_catches_skipped_elements(void **state) {
  (void)state;
  assert_int_equal(kv_sample_count(10), 10);
  assert_int_equal(kv_sample_count(KV_SAMPLE_ELEMS), KV_SAMPLE_ELEMS);
  assert_int_equal(kv_sample_count(3 * (int64_t)KV_SAMPLE_ELEMS + 7), KV_SAMPLE_ELEMS);
  int64_t small[10];
  kv_sample_indices(42, 1, 10, small);
  for (int i = 0; i < 10; i++)
    assert_int_equal(small[i], i);
  int64_t n = 3 * (int64_t)KV_SAMPLE_ELEMS + 12345, k = KV_SAMPLE_ELEMS;
  int64_t *a = malloc((size_t)k * sizeof *a), *b = malloc((size_t)k * sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  kv_sample_indices(7, 1, n, a);
  for (int64_t i = 0; i < k; i++) {
    assert_true(a[i] >= i * n / k && a[i] < (i + 1) * n / k + 1 && a[i] < n);
    if (i)
      assert_true(a[i] > a[i - 1]);
  }
  kv_sample_indices(7, 1, n, b);
  assert_memory_equal(a, b, (size_t)k * sizeof *a);
  /* The host's walk picks what the GPU's per-index arithmetic picks
   * (gen_core.h), for counts just over the sample, odd ones, and past 2^33. */
  const int64_t ns[] = {k + 1, n, 7 * k + k - 1, ((int64_t)1 << 33) + 12345};
  for (size_t m = 0; m < sizeof ns / sizeof ns[0]; m++) {
    kv_sample_indices(99 + m, 2, ns[m], b);
    for (int64_t i = 0; i < k; i++)
      if ((uint64_t)b[i] != kvg_sample_index(99 + m, 2, (uint64_t)ns[m], (uint64_t)k, (uint64_t)i))
        fail_msg("n %lld: index %lld: the walk gives %lld, the formula %llu", (long long)ns[m],
                 (long long)i, (long long)b[i],
                 (unsigned long long)kvg_sample_index(99 + m, 2, (uint64_t)ns[m], (uint64_t)k,
                                                      (uint64_t)i));
  }
  kv_sample_indices(8, 1, n, b);
  assert_memory_not_equal(a, b, (size_t)k * sizeof *a);
  kv_sample_indices(7, 2, n, b);
  assert_memory_not_equal(a, b, (size_t)k * sizeof *a);
  free(b);

  /* A task whose output y has n elements: the candidate leaves a run of
   * n / 10000 of them stale (holding the last call's answers), at the end,
   * where a fixed-size block sample might not look. */
  struct kv_task *t = load();
  int64_t nelem[KV_MAX_PARAMS] = {0}, snelem[KV_MAX_PARAMS];
  nelem[0] = nelem[1] = n;
  nelem[2] = 3;
  kv_sample_layout(t, nelem, snelem);
  assert_int_equal(snelem[1], k);
  assert_int_equal(snelem[2], 3);
  float *exp = malloc((size_t)n * sizeof *exp), *got = malloc((size_t)n * sizeof *got);
  int32_t kexp[3] = {1, 2, 3}, kgot[3] = {1, 2, 3};
  assert_non_null(exp);
  assert_non_null(got);
  for (int64_t i = 0; i < n; i++)
    exp[i] = got[i] = (float)(i % 1000) * 0.5f;
  int64_t skip = n / 10000;
  for (int64_t i = n - skip; i < n; i++)
    got[i] = exp[i] + 100;
  size_t ob = kv_call_bytes(t, snelem, 0);
  uint8_t *se = malloc(ob), *sg = malloc(ob);
  assert_non_null(se);
  assert_non_null(sg);
  void *eb[KV_MAX_PARAMS] = {NULL, exp, kexp}, *gb[KV_MAX_PARAMS] = {NULL, got, kgot};
  int caught = 0;
  for (uint64_t seed = 1; seed <= 20; seed++) {
    assert_int_equal(kv_pack_sample(t, nelem, eb, 0, seed, se), 0);
    assert_int_equal(kv_pack_sample(t, nelem, gb, 0, seed, sg), 0);
    struct kv_sample_of smp = {nelem, seed};
    struct kv_cmp c;
    kv_judge_call(t, &t->check[0], se, sg, NULL, NULL, snelem, 0, 0, &smp, &c);
    if (c.verdict == KV_V_WRONG_OUTPUT) {
      caught++;
      assert_true(c.first_bad >= n - skip && c.first_bad < n);
      assert_non_null(strstr(c.detail, "sampled (of"));
    }
  }
  /* (1 - 1e-4)^262144 = e^-26 per validation: every seed sees it. */
  assert_int_equal(caught, 20);
  /* An honest output passes the sampled judge. */
  for (int64_t i = n - skip; i < n; i++)
    got[i] = exp[i];
  assert_int_equal(kv_pack_sample(t, nelem, gb, 0, 3, sg), 0);
  assert_int_equal(kv_pack_sample(t, nelem, eb, 0, 3, se), 0);
  struct kv_sample_of smp = {nelem, 3};
  struct kv_cmp c;
  kv_judge_call(t, &t->check[0], se, sg, NULL, NULL, snelem, 0, 0, &smp, &c);
  assert_int_equal(c.verdict, KV_V_OK);
  free(se);
  free(sg);
  free(exp);
  free(got);
  free(a);
  kv_task_free(t);
}

static void test_compare_nan_expected(void **state) {
  (void)state;
  struct kv_task *t = load();
  float exp[3] = {NAN, 1, 2}, got[3] = {NAN, 1, 2};
  struct kv_cmp c;
  kv_compare(t, &t->check[0], 1, exp, got, 3, 0, &c);
  assert_int_equal(c.verdict, KV_V_OK);
  got[0] = 0;
  kv_compare(t, &t->check[0], 1, exp, got, 3, 0, &c);
  assert_int_equal(c.verdict, KV_V_WRONG_OUTPUT);
  kv_task_free(t);
}

static void test_perturb_roundtrip(void **state) {
  (void)state;
  struct kv_task *t = load();
  int64_t nelem[KV_MAX_PARAMS];
  char err[256];
  assert_int_equal(kv_layout(t, &t->check[0], nelem, err, sizeof err), 0);
  assert_int_equal(nelem[0], 12);
  assert_int_equal(nelem[2], 3);
  float x[12], orig[12];
  void *bufs[KV_MAX_PARAMS] = {x};
  kv_fill_inputs(t, nelem, bufs, 7);
  memcpy(orig, x, sizeof x);
  uint8_t saved[KV_MAX_PARAMS * KV_PERTURB_POINTS * 8];
  kv_perturb(t, nelem, bufs, 7, 3, saved);
  assert_memory_not_equal(orig, x, sizeof x);
  float pert[12];
  memcpy(pert, x, sizeof x);
  kv_unperturb(t, nelem, bufs, 7, 3, saved);
  assert_memory_equal(orig, x, sizeof x);
  /* Reproducible without the saved values: the parent rebuilds it. */
  kv_perturb(t, nelem, bufs, 7, 3, NULL);
  assert_memory_equal(pert, x, sizeof x);
  /* Another iteration perturbs differently. */
  memcpy(x, orig, sizeof x);
  kv_perturb(t, nelem, bufs, 7, 4, NULL);
  assert_memory_not_equal(pert, x, sizeof x);
  kv_task_free(t);
}

static void test_verdict_names(void **state) {
  (void)state;
  const char *order[] = {"policy_violation", "compile_error",    "load_error",   "crash",
                         "timeout",          "unwritten_output", "wrong_output", "input_mutated",
                         "stale_output",     "implausible",      "interference", "ok"};
  for (int i = 0; i < KV_V_COUNT; i++) {
    assert_string_equal(kv_verdict_name((enum kv_verdict)i), order[i]);
    assert_int_equal(kv_verdict_from_name(order[i]), i);
  }
  assert_int_equal(kv_verdict_from_name("nope"), -1);
}

static void test_result_json_survives_binary_output(void **state) {
  (void)state;
  struct kv_gate_result r;
  memset(&r, 0, sizeof r);
  r.verdict = KV_V_OK;
  r.cand_stdout = strdup("bytes \xff\xfe not utf-8");
  r.compile_log = strdup("fine");
  r.timed = 1;
  r.timing.cand.median_us = 10;
  r.timing.ref.median_us = 40;
  r.timing.speedup = 4;
  char *js = kv_gate_result_json(&r);
  assert_non_null(js);
  json_t *j = json_loads(js, 0, NULL);
  assert_non_null(j);
  assert_string_equal(json_string_value(json_object_get(j, "verdict")), "ok");
  assert_non_null(strstr(json_string_value(json_object_get(j, "stdout")), "not utf-8"));
  json_t *tj = json_object_get(j, "timing");
  assert_true(json_real_value(json_object_get(tj, "speedup")) == 4.0);
  assert_true(json_real_value(json_object_get(tj, "reference_median_us")) == 40.0);
  assert_true(json_is_false(json_object_get(tj, "reference_from_alone")));
  assert_true(json_real_value(json_object_get(tj, "reference_beside_median_us")) == 40.0);
  json_decref(j);
  free(js);
  /* The speedup taken against the reference alone: said, with the
   * interleaved median, and read back. */
  r.timing.ref_from_alone = 1;
  r.timing.ref_beside_us = 95;
  js = kv_gate_result_json(&r);
  assert_non_null(js);
  struct kv_gate_result back;
  memset(&back, 0, sizeof back);
  char err[256];
  assert_int_equal(kv_gate_result_from_json(js, &back, err, sizeof err), 0);
  assert_int_equal(back.timing.ref_from_alone, 1);
  assert_true(back.timing.ref_beside_us == 95.0);
  assert_true(back.timing.ref.median_us == 40.0);
  kv_gate_result_release(&back);
  free(js);
  kv_gate_result_release(&r);
}

/* jansson's allocations fail from the n-th on: every out-of-memory path of
 * kv_gate_result_json is taken in turn. */
static long oom_left;
static void *failing_malloc(size_t n) {
  if (oom_left-- <= 0)
    return NULL;
  return malloc(n);
}

/* A result with no compiler log and no output (NULL strings) turns into JSON,
 * or into NULL, under every allocation failure: never strlen(NULL) (issue
 * 17: safe_string fell back to strlen on the NULL it was given when
 * json_string("") failed). */
static void test_result_json_out_of_memory(void **state) {
  (void)state;
  struct kv_gate_result r;
  memset(&r, 0, sizeof r);
  r.verdict = KV_V_COMPILE_ERROR;
  snprintf(r.detail, sizeof r.detail, "%s", "does not compile");
  int produced = 0;
  for (long n = 0; n < 400; n++) {
    oom_left = n;
    json_set_alloc_funcs(failing_malloc, free);
    char *js = kv_gate_result_json(&r);
    json_set_alloc_funcs(malloc, free);
    produced += js != NULL;
    free(js);
  }
  assert_true(produced > 0); /* enough allocations succeeded at last */
}

/* Faster than physics: the same good candidate is `implausible` against
 * ceilings it beats by far, and `ok` against real ones. */
static void test_implausible_against_ceilings(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], cand[4200], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  snprintf(cand, sizeof cand, "%s/tests/adversarial/cands/good.c", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.time_budget_s = 0.1;
  struct kv_calib tiny = {.device = "test", .bandwidth_gbs = 1e-3, .fma_gflops = 1e6};
  o.calib = &tiny;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_int_equal(kv_gate_eval(t, cand, &o, r, err, sizeof err), 0);
  print_message("tiny bandwidth: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_string_equal(kv_verdict_name(r->verdict), "implausible");
  assert_non_null(strstr(r->detail, "GB/s"));
  kv_gate_result_release(r);
  struct kv_calib fast = {.device = "test", .bandwidth_gbs = 1e6, .fma_gflops = 1e-3};
  o.calib = &fast;
  assert_int_equal(kv_gate_eval(t, cand, &o, r, err, sizeof err), 0);
  assert_string_equal(kv_verdict_name(r->verdict), "implausible");
  assert_non_null(strstr(r->detail, "GFLOP/s"));
  kv_gate_result_release(r);
  struct kv_calib real = {.device = "test", .bandwidth_gbs = 1e6, .fma_gflops = 1e6};
  o.calib = &real;
  assert_int_equal(kv_gate_eval(t, cand, &o, r, err, sizeof err), 0);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  assert_true(r->timed && r->timing.roofline > 0 && r->timing.roofline < 1);
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

/* Timing methods by name, and --timing do_bench refused on the cpu surface
 * (triton's do_bench is a GPU method) with the fix named. */
static void test_timing_methods(void **state) {
  (void)state;
  const char *names[] = {"kevo", "kernelbench", "do_bench"};
  for (int i = 0; i < 3; i++) {
    int m = -1;
    assert_int_equal(kv_timing_method_parse(names[i], &m), 0);
    assert_int_equal(m, i);
    assert_string_equal(kv_timing_method_name(m), names[i]);
  }
  int m = 7;
  assert_int_equal(kv_timing_method_parse("dobench", &m), -1);
  assert_int_equal(kv_timing_method_parse(NULL, &m), -1);
  assert_int_equal(m, 7);
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], cand[4200], err[1024] = "";
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  snprintf(cand, sizeof cand, "%s/tests/adversarial/cands/good.c", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.time_budget_s = 0.1;
  o.timing_method = KV_TIMING_DOBENCH;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  int rc = kv_gate_eval(t, cand, &o, r, err, sizeof err);
  print_message("do_bench on cpu: rc %d, %s: %s / %s\n", rc, kv_verdict_name(r->verdict), r->detail,
                err);
  assert_int_equal(rc, -1); /* before anything is built */
  assert_non_null(strstr(err, "do_bench is a GPU method"));
  assert_false(r->timed);
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

/* The compile pool: prebuilt candidates are then judged from the cache. */
static void test_prebuild_fills_the_cache(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], a[4200], b[4200], tmp[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-prebuild", tmp, sizeof tmp, err, sizeof err), 0);
  /* Two fresh sources, so nothing is cached before. */
  char code[512];
  snprintf(a, sizeof a, "%s/a.c", tmp);
  snprintf(b, sizeof b, "%s/b.c", tmp);
  snprintf(code, sizeof code,
           "/* %llu */ void rowsum(const float *x, float *y, int rows, int cols) {\n"
           "  for (int r = 0; r < rows; r++) { double s = 0; for (int c = 0; c < cols; c++)\n"
           "  s += x[(long)r * cols + c]; y[r] = (float)s; } }\n",
           (unsigned long long)kv_random_u64());
  assert_int_equal(kv_write_file(a, code, strlen(code), err, sizeof err), 0);
  const char *broken = "void rowsum(const float *x, float *y, int rows, int cols) { nope }\n";
  assert_int_equal(kv_write_file(b, broken, strlen(broken), err, sizeof err), 0);
  const char *paths[2] = {a, b};
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.timing = 0;
  assert_int_equal(kv_gate_prebuild(t, paths, 2, &o, err, sizeof err), 2);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_int_equal(kv_gate_eval(t, a, &o, r, err, sizeof err), 0);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  assert_int_equal(r->compile_cached, 1);
  kv_gate_result_release(r);
  memset(r, 0, sizeof *r);
  assert_int_equal(kv_gate_eval(t, b, &o, r, err, sizeof err), 0);
  assert_string_equal(kv_verdict_name(r->verdict), "compile_error");
  assert_int_equal(r->compile_cached, 1);
  assert_non_null(strstr(r->compile_log, "nope"));
  kv_gate_result_release(r);
  free(r);
  kv_rmtree(tmp);
  kv_task_free(t);
}

/* The candidate's bytes are read once (issue 33 must-hold 5): a FIFO that
 * gives a correct kernel to its first reader and a wrong one to the next is
 * judged on what was hashed. Before, the hash named the correct kernel and
 * the build read the wrong one: wrong_output under the correct one's hash. */
struct fifo_feed {
  char path[4200];
  const char *first, *second;
};

static void *fifo_writer(void *arg) {
  struct fifo_feed *f = arg;
  const char *texts[2] = {f->first, f->second};
  for (int i = 0; i < 2; i++) {
    int fd = open(f->path, O_WRONLY | O_CLOEXEC); /* blocks until a reader opens */
    if (fd < 0)
      return NULL;
    ssize_t n = write(fd, texts[i], strlen(texts[i]));
    (void)n;
    close(fd);
    /* The reader sees end of file only while no writer has the FIFO open:
     * let it drain the first text before the second open. */
    struct timespec gap = {0, 300 * 1000 * 1000};
    nanosleep(&gap, NULL);
  }
  return NULL;
}

static void test_candidate_read_once(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], tmp[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-readonce", tmp, sizeof tmp, err, sizeof err), 0);
  struct fifo_feed f = {
      .first = "void rowsum(const float *x, float *y, int rows, int cols) {\n"
               "  for (int r = 0; r < rows; r++) { double s = 0; for (int c = 0; c < cols; c++)\n"
               "  s += x[(long)r * cols + c]; y[r] = (float)s; } }\n",
      .second = "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                "  for (int r = 0; r < rows; r++) y[r] = 0; (void)x; (void)cols; }\n"};
  snprintf(f.path, sizeof f.path, "%s/cand.c", tmp);
  assert_int_equal(mkfifo(f.path, 0600), 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fifo_writer, &f), 0);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.timing = 0;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_int_equal(kv_gate_eval(t, f.path, &o, r, err, sizeof err), 0);
  char want[65];
  kv_sha256_hex(f.first, strlen(f.first), want);
  print_message("read once: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_string_equal(r->source_hash, want);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  /* The writer waits for a second reader: the test is one. */
  int fd = open(f.path, O_RDONLY | O_CLOEXEC);
  char sink[512];
  while (fd >= 0 && read(fd, sink, sizeof sink) > 0)
    ;
  if (fd >= 0)
    close(fd);
  pthread_join(th, NULL);
  kv_gate_result_release(r);
  free(r);
  kv_rmtree(tmp);
  kv_task_free(t);
}

/* The phases kv_gate_eval announced, in order, and what the "verdict" one
 * carried. */
struct phases {
  char seen[128];
  char verdict[sizeof((struct kv_gate_result *)0)->detail];
  double speedup;
};

static void on_phase_seen(void *ud, const char *phase, const struct kv_gate_result *r) {
  struct phases *p = ud;
  size_t n = strlen(p->seen);
  snprintf(p->seen + n, sizeof p->seen - n, "%s ", phase);
  if (!strcmp(phase, "verdict")) {
    snprintf(p->verdict, sizeof p->verdict, "%s", r->detail);
    p->speedup = r->timing.speedup;
  }
}

/* Every bench size is timed (issue 17): per-size figures, the speedup their
 * geometric mean; and a candidate that skips its work only at the second
 * bench size (never a check size) is caught there. */
/* The check size drawn for each evaluation keeps a relation every listed set
 * holds (here rows == cols): a kernel written for square matrices, as the
 * problem poses them, is judged ok and its drawn size is square; with rows
 * and cols free, the same kernel is caught at the drawn size. */
static const char *square_task(int tied) {
  return tied ? "{\"name\":\"sq\",\"entry\":\"sq\",\"params\":["
                "{\"name\":\"x\",\"role\":\"in\",\"dtype\":\"f32\",\"shape\":[\"rows\",\"cols\"]},"
                "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f32\",\"shape\":[\"rows\",\"cols\"]},"
                "{\"name\":\"rows\",\"role\":\"size\"},{\"name\":\"cols\",\"role\":\"size\"}],"
                "\"check\":[{\"rows\":8,\"cols\":8},{\"rows\":40,\"cols\":40}],"
                "\"bench\":[{\"rows\":64,\"cols\":64}],\"tolerance\":{\"atol\":0,\"rtol\":0}}"
              : "{\"name\":\"sq\",\"entry\":\"sq\",\"params\":["
                "{\"name\":\"x\",\"role\":\"in\",\"dtype\":\"f32\",\"shape\":[\"rows\",\"cols\"]},"
                "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f32\",\"shape\":[\"rows\",\"cols\"]},"
                "{\"name\":\"rows\",\"role\":\"size\"},{\"name\":\"cols\",\"role\":\"size\"}],"
                "\"check\":[{\"rows\":8,\"cols\":8},{\"rows\":40,\"cols\":40}],"
                "\"bench\":[{\"rows\":64,\"cols\":32}],\"tolerance\":{\"atol\":0,\"rtol\":0}}";
}

static void test_drawn_size_keeps_ties(void **state) {
  (void)state;
  char tmp[4096], path[4300], err[1024];
  const char *ref = "void sq(const float *x, float *y, int rows, int cols) {\n"
                    "  for (long i = 0; i < (long)rows * cols; i++) y[i] = 2 * x[i]; }\n";
  /* Written for square inputs: the row length taken from rows. */
  const char *square =
      "void sq(const float *x, float *y, int rows, int cols) {\n"
      "  (void)cols; for (long i = 0; i < (long)rows * rows; i++) y[i] = 2 * x[i]; }\n";
  for (int tied = 1; tied >= 0; tied--) {
    assert_int_equal(kv_mkdtemp("/tmp", "kevo-ties", tmp, sizeof tmp, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/reference.c", tmp);
    assert_int_equal(kv_write_file(path, ref, strlen(ref), err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/task.json", tmp);
    assert_int_equal(
        kv_write_file(path, square_task(tied), strlen(square_task(tied)), err, sizeof err), 0);
    struct kv_task *t;
    if (kv_task_load(tmp, &t, err, sizeof err) != 0)
      fail_msg("%s", err);
    char cand[4300];
    snprintf(cand, sizeof cand, "%s/square.c", tmp);
    assert_int_equal(kv_write_file(cand, square, strlen(square), err, sizeof err), 0);
    struct kv_gate_opts o;
    kv_gate_opts_default(&o);
    o.worker_path = getenv("KEVO_WORKER");
    o.cache_dir = getenv("KEVO_CACHE_DIR");
    o.timing = 0;
    struct kv_gate_result *r = calloc(1, sizeof *r);
    int caught = 0;
    for (int run = 0; run < 3; run++) { /* three seeds, three draws (replayable) */
      kv_gate_result_release(r);
      memset(r, 0, sizeof *r);
      o.seed = 7000 + (uint64_t)run;
      if (kv_gate_eval(t, cand, &o, r, err, sizeof err) != 0)
        fail_msg("%s", err);
      const struct kv_check *last = &r->checks[r->nchecks - 1];
      print_message("%s: %s (%s)\n", tied ? "tied" : "free", kv_verdict_name(r->verdict),
                    last->sizes);
      assert_non_null(strstr(last->sizes, "(drawn)"));
      int rows = 0, cols = 0;
      assert_int_equal(sscanf(last->sizes, "rows=%d cols=%d", &rows, &cols), 2);
      if (tied)
        assert_int_equal(rows, cols);
      /* Free sizes may still draw a square (then nothing shows). */
      assert_int_equal(r->verdict == KV_V_OK, rows == cols);
      caught += rows != cols;
    }
    assert_true(tied ? caught == 0 : caught > 0);
    kv_gate_result_release(r);
    free(r);
    kv_task_free(t);
    kv_rmtree(tmp);
  }
}

static void test_every_bench_size(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char tmp[4096], path[4300], err[1024];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-sizes", tmp, sizeof tmp, err, sizeof err), 0);
  char *ref = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/tests/adversarial/rowsum/reference.c", src);
  assert_int_equal(kv_read_file(path, 1 << 20, &ref, &len, err, sizeof err), 0);
  snprintf(path, sizeof path, "%s/reference.c", tmp);
  assert_int_equal(kv_write_file(path, ref, len, err, sizeof err), 0);
  free(ref);
  const char *task =
      "{\"name\":\"rowsum\",\"entry\":\"rowsum\",\"params\":["
      "{\"name\":\"x\",\"role\":\"in\",\"dtype\":\"f32\",\"shape\":[\"rows\",\"cols\"]},"
      "{\"name\":\"y\",\"role\":\"out\",\"dtype\":\"f32\",\"shape\":[\"rows\"]},"
      "{\"name\":\"rows\",\"role\":\"size\"},{\"name\":\"cols\",\"role\":\"size\"}],"
      "\"check\":[{\"rows\":7,\"cols\":1001},{\"rows\":130,\"cols\":333}],"
      "\"bench\":[{\"rows\":512,\"cols\":1024},{\"rows\":96,\"cols\":4096}],"
      "\"tolerance\":{\"atol\":1e-4,\"rtol\":1e-4}}";
  snprintf(path, sizeof path, "%s/task.json", tmp);
  assert_int_equal(kv_write_file(path, task, strlen(task), err, sizeof err), 0);
  struct kv_task *t;
  if (kv_task_load(tmp, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(t->nbench, 2);
  const char *body = "  for (int r = 0; r < rows; r++) { double s = 0; for (int c = 0; c < cols; "
                     "c++) s += x[(long)r * cols + c]; y[r] = (float)s; } }\n";
  char good[4300], cheat[4300], code[1024];
  snprintf(good, sizeof good, "%s/good.c", tmp);
  snprintf(code, sizeof code, "void rowsum(const float *x, float *y, int rows, int cols) {\n%s",
           body);
  assert_int_equal(kv_write_file(good, code, strlen(code), err, sizeof err), 0);
  snprintf(cheat, sizeof cheat, "%s/cheat.c", tmp);
  snprintf(code, sizeof code,
           "void rowsum(const float *x, float *y, int rows, int cols) {\n"
           "  if (rows == 96) return; /* the second bench size: never checked before */\n%s",
           body);
  assert_int_equal(kv_write_file(cheat, code, strlen(code), err, sizeof err), 0);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.time_budget_s = 0.1;
  struct phases ph = {0};
  o.on_phase = on_phase_seen;
  o.phase_ud = &ph;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (kv_gate_eval(t, good, &o, r, err, sizeof err) != 0)
    fail_msg("%s", err);
  print_message("good: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  /* The phases in order; the verdict went out final, with its timing. */
  assert_string_equal(ph.seen, "compile checks timing verdict ");
  assert_string_equal(ph.verdict, r->detail);
  assert_true(ph.speedup == r->timing.speedup && ph.speedup > 0);
  o.on_phase = NULL;
  const struct kv_timing *tm = &r->timing;
  assert_true(r->timed && tm->nsizes == 2);
  assert_non_null(strstr(tm->size[0].sizes, "rows=512"));
  assert_non_null(strstr(tm->size[1].sizes, "rows=96"));
  assert_string_equal(tm->sizes, tm->size[0].sizes);
  for (int i = 0; i < 2; i++)
    assert_true(tm->size[i].speedup > 0 && tm->size[i].cand_us > 0 && tm->size[i].ref_us > 0 &&
                tm->size[i].lo <= tm->size[i].speedup && tm->size[i].speedup <= tm->size[i].hi);
  assert_true(fabs(tm->speedup - sqrt(tm->size[0].speedup * tm->size[1].speedup)) <
              1e-9 * tm->speedup);
  assert_non_null(strstr(r->detail, "geometric mean over 2 sizes"));
  char *js = kv_gate_result_json(r);
  assert_non_null(js);
  assert_non_null(strstr(js, "\"per_size\""));
  assert_non_null(strstr(js, "\"stages\""));
  /* ... and back from the JSON the store keeps. */
  struct kv_gate_result *back = calloc(1, sizeof *back);
  assert_int_equal(kv_gate_result_from_json(js, back, err, sizeof err), 0);
  assert_int_equal(back->timing.nsizes, 2);
  assert_true(fabs(back->timing.size[1].speedup - tm->size[1].speedup) < 1e-6);
  /* The timeline: in order, every size's stages, and back from the JSON. */
  int alone = 0;
  assert_true(r->nmarks > 8 && r->nmarks == back->nmarks);
  for (int i = 0; i < r->nmarks; i++) {
    assert_string_equal(r->marks[i].what, back->marks[i].what);
    assert_true(fabs(r->marks[i].at_s - back->marks[i].at_s) < 1e-6);
    assert_true(i == 0 || r->marks[i].at_s >= r->marks[i - 1].at_s);
    alone += !strcmp(r->marks[i].what, "alone");
  }
  assert_int_equal(alone, 2);
  assert_string_equal(r->marks[0].what, "compiled");
  assert_string_equal(r->marks[r->nmarks - 2].what, "verdict");
  assert_string_equal(r->marks[r->nmarks - 1].what, "end");
  kv_gate_result_release(back);
  free(back);
  free(js);
  kv_gate_result_release(r);
  memset(r, 0, sizeof *r);
  assert_int_equal(kv_gate_eval(t, cheat, &o, r, err, sizeof err), 0);
  print_message("cheat: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_true(r->verdict == KV_V_STALE_OUTPUT || r->verdict == KV_V_WRONG_OUTPUT ||
              r->verdict == KV_V_UNWRITTEN_OUTPUT);
  assert_non_null(strstr(r->detail, "rows=96") ? strstr(r->detail, "rows=96")
                                               : strstr(r->timing.sizes, "rows=96"));
  kv_gate_result_release(r);
  free(r);
  kv_rmtree(tmp);
  kv_task_free(t);
}

/* Warm workers (kv_gate_warm): the reference's worker goes on from one
 * evaluation of a task to the next and each candidate gets a fresh,
 * pre-spawned process; hostile candidates in between (one that tries to
 * kill its parent, one that caches by content) get their usual verdicts and
 * break nothing; another task does not get this task's reference worker. */
static void test_warm_workers(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], other[4096], c[4][4300], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  snprintf(other, sizeof other, "%s/examples/tasks/rowsum", src);
  const char *names[4] = {"good", "kill_parent", "content_cache", "good"};
  for (int i = 0; i < 4; i++)
    snprintf(c[i], sizeof c[i], "%s/tests/adversarial/cands/%s.c", src, names[i]);
  struct kv_task *t, *t2;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  assert_int_equal(kv_task_load(other, &t2, err, sizeof err), 0);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.time_budget_s = 0.1;
  o.warm = kv_gate_warm_new();
  assert_non_null(o.warm);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  int rw = -1, cw = -1;
  for (int i = 0; i < 4; i++) {
    if (kv_gate_eval(t, c[i], &o, r, err, sizeof err) != 0)
      fail_msg("%s: %s", names[i], err);
    print_message("%s: %s: %s\n", names[i], kv_verdict_name(r->verdict), r->detail);
    if (i == 1)
      assert_true(r->verdict == KV_V_OK || r->verdict == KV_V_CRASH);
    else if (i == 2)
      assert_true(r->verdict == KV_V_OK || r->verdict == KV_V_STALE_OUTPUT ||
                  r->verdict == KV_V_WRONG_OUTPUT);
    else
      assert_string_equal(kv_verdict_name(r->verdict), "ok");
    assert_true(i == 1 || r->timed);
    kv_gate_result_release(r);
    kv_gate_warm_stats(o.warm, &rw, &cw);
    assert_int_equal(rw, i);
    assert_int_equal(cw, i);
  }
  /* Another task: its own reference worker (a candidate worker is not
   * tied to a task). */
  snprintf(c[0], sizeof c[0], "%s/examples/tasks/rowsum/good.c", src);
  if (kv_gate_eval(t2, c[0], &o, r, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  kv_gate_result_release(r);
  kv_gate_warm_stats(o.warm, &rw, &cw);
  assert_int_equal(rw, 3);
  assert_int_equal(cw, 4);
  kv_gate_warm_free(o.warm);
  free(r);
  kv_task_free(t);
  kv_task_free(t2);
}

/* The compiler runs in kevo-sandbox (entered after exec, not in a child of
 * the compile pool's threads): its Landlock confines what the compiler can
 * read, and a sandbox that fails is kevo's error, never a compile_error
 * cached against the source (issue 17). */
static void test_compile_jail(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], a[4200], tmp[4096], fake[4200], cache[4200], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-jail", tmp, sizeof tmp, err, sizeof err), 0);
  snprintf(cache, sizeof cache, "%s/cache", tmp);
  assert_int_equal(kv_mkdirs(cache, 0700, err, sizeof err), 0);
  /* A source that includes a file outside the sandbox's reads. */
  char secret[4200], code[8600];
  snprintf(secret, sizeof secret, "%s/secret.h", tmp);
  assert_int_equal(kv_write_file(secret, "#define SECRET 1\n", 17, err, sizeof err), 0);
  snprintf(a, sizeof a, "%s/a.c", tmp);
  snprintf(code, sizeof code,
           "#include \"%s\"\n/* %llu */ void rowsum(const float *x, float *y, int rows, int "
           "cols) { (void)x; (void)cols; for (int r = 0; r < rows; r++) y[r] = SECRET; }\n",
           secret, (unsigned long long)kv_random_u64());
  assert_int_equal(kv_write_file(a, code, strlen(code), err, sizeof err), 0);
  struct kv_build b;
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* kevo-sandbox is beside it */
  assert_int_equal(kv_build_c(t, &o, a, cache, 60, &b, err, sizeof err), 0);
  assert_false(b.ok);
  assert_non_null(strstr(b.log, "secret.h"));
  kv_build_release(&b);
  /* A helper whose layer failed: kevo's error, and nothing cached. */
  snprintf(fake, sizeof fake, "%s/fake-sandbox", tmp);
  const char *sh =
      "#!/bin/sh\necho 'kevo-sandbox: the landlock layer failed: planted' >&2\nexit 125\n";
  assert_int_equal(kv_write_file(fake, sh, strlen(sh), err, sizeof err), 0);
  chmod(fake, 0700);
  const char *code2 = "/* fresh */ void rowsum(const float *x, float *y, int rows, int cols) { "
                      "(void)x; (void)cols; for (int r = 0; r < rows; r++) y[r] = 0; }\n";
  assert_int_equal(kv_write_file(a, code2, strlen(code2), err, sizeof err), 0);
  setenv("KEVO_SANDBOX_HELPER", fake, 1);
  err[0] = 0;
  assert_int_equal(kv_build_c(t, &o, a, cache, 60, &b, err, sizeof err), -1);
  assert_non_null(strstr(err, "could not be sandboxed: the landlock layer failed: planted"));
  kv_build_release(&b);
  /* A helper that is not there: named, with the fix. */
  setenv("KEVO_SANDBOX_HELPER", "/nonexistent/kevo-sandbox", 1);
  assert_int_equal(kv_build_c(t, &o, a, cache, 60, &b, err, sizeof err), -1);
  assert_non_null(strstr(err, "KEVO_SANDBOX_HELPER"));
  kv_build_release(&b);
  unsetenv("KEVO_SANDBOX_HELPER");
  /* The real helper: the same source compiles (the failure was not cached). */
  assert_int_equal(kv_build_c(t, &o, a, cache, 60, &b, err, sizeof err), 0);
  assert_true(b.ok);
  kv_build_release(&b);
  kv_rmtree(tmp);
  kv_task_free(t);
}

/* The architecture is asked of nvidia-smi once per device identity and then
 * read from the cache directory (a GPU host's nvidia-smi takes about a
 * second a process); another GPU (UUID) or driver asks again. */
static void test_cuda_arch_memo(void **state) {
  (void)state;
  char tmp[4096], err[1024], p[4400], arch[32];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-arch", tmp, sizeof tmp, err, sizeof err), 0);
  snprintf(p, sizeof p, "%s/proc/gpus/0000:17:00.0", tmp);
  assert_int_equal(kv_mkdirs(p, 0700, err, sizeof err), 0);
  snprintf(p, sizeof p, "%s/proc/gpus/0000:17:00.0/information", tmp);
  const char *info = "Model: \t\t NVIDIA H100 80GB HBM3\nGPU UUID: \t GPU-f576f1a3\n";
  assert_int_equal(kv_write_file(p, info, strlen(info), err, sizeof err), 0);
  snprintf(p, sizeof p, "%s/proc/version", tmp);
  assert_int_equal(kv_write_file(p, "NVRM 580.159.04\n", 16, err, sizeof err), 0);
  /* A stand-in nvidia-smi that counts its calls. */
  snprintf(p, sizeof p, "%s/bin", tmp);
  assert_int_equal(kv_mkdirs(p, 0700, err, sizeof err), 0);
  char smi[4400], count[4400], script[9000];
  snprintf(smi, sizeof smi, "%s/bin/nvidia-smi", tmp);
  snprintf(count, sizeof count, "%s/calls", tmp);
  snprintf(script, sizeof script, "#!/bin/sh\necho x >> '%s'\necho 9.0\n", count);
  assert_int_equal(kv_write_file(smi, script, strlen(script), err, sizeof err), 0);
  chmod(smi, 0700);
  const char *old_path = getenv("PATH");
  char path[9000], proc[4400], cache[4400];
  snprintf(path, sizeof path, "%s/bin:%s", tmp, old_path ? old_path : "/usr/bin:/bin");
  setenv("PATH", path, 1);
  snprintf(proc, sizeof proc, "%s/proc", tmp);
  snprintf(cache, sizeof cache, "%s/cache", tmp);
  assert_int_equal(kv_mkdirs(cache, 0700, err, sizeof err), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kv_cuda_arch_at(proc, cache, arch, sizeof arch, err, sizeof err), 0);
    assert_string_equal(arch, "sm_90");
  }
  char *c = NULL;
  size_t n = 0;
  assert_int_equal(kv_read_file(count, 4096, &c, &n, err, sizeof err), 0);
  assert_int_equal(n, 2); /* one call: "x\n" */
  free(c);
  /* Another GPU in the same slot: asked again. */
  snprintf(p, sizeof p, "%s/proc/gpus/0000:17:00.0/information", tmp);
  const char *info2 = "Model: \t\t NVIDIA H200\nGPU UUID: \t GPU-0badc0de\n";
  assert_int_equal(kv_write_file(p, info2, strlen(info2), err, sizeof err), 0);
  assert_int_equal(kv_cuda_arch_at(proc, cache, arch, sizeof arch, err, sizeof err), 0);
  assert_int_equal(kv_read_file(count, 4096, &c, &n, err, sizeof err), 0);
  assert_int_equal(n, 4);
  free(c);
  /* No driver files (a container): nvidia-smi every time, as before. */
  snprintf(p, sizeof p, "%s/none", tmp);
  assert_int_equal(kv_cuda_arch_at(p, cache, arch, sizeof arch, err, sizeof err), 0);
  assert_int_equal(kv_cuda_arch_at(p, cache, arch, sizeof arch, err, sizeof err), 0);
  assert_int_equal(kv_read_file(count, 4096, &c, &n, err, sizeof err), 0);
  assert_int_equal(n, 8);
  free(c);
  setenv("PATH", old_path ? old_path : "/usr/bin:/bin", 1);
  kv_rmtree(tmp);
}

static int count_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++)
    n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

/* A worker start that fails half-way (here: pipe2 out of descriptors) leaves
 * no descriptor and no scratch directory behind (issue 17). */
static void test_worker_start_failure_leaks_nothing(void **state) {
  (void)state;
  char base[4096], err[512];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-start", base, sizeof base, err, sizeof err), 0);
  const char *wp = getenv("KEVO_WORKER");
  struct kv_worker_spec spec = {0};
  spec.worker_path = wp ? wp : "/bin/true";
  spec.scratch_base = base;
  spec.sandbox = 1;
  struct rlimit old;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
  /* Fill the holes below the highest open descriptor (ctest and shells leave
   * some), so that the limit set below bites exactly where it should. */
  int highest = 0, fill[1024], nfill = 0;
  for (int fd = 0; fd < 1024; fd++)
    if (fcntl(fd, F_GETFD) >= 0)
      highest = fd;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    if (fd > highest) {
      close(fd);
      break;
    }
    fill[nfill++] = fd;
  }
  int before = count_fds();
  assert_int_equal(before, highest + 1);
  for (int room = 0; room < 8; room++) {
    /* Room for the memfd and some of the pipes, never all of them. */
    struct rlimit lim = {(rlim_t)(before + room), old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
    struct kv_worker w;
    int rc = kv_worker_start(&w, &spec, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(rc, -1);
    assert_int_equal(count_fds(), before);
    assert_int_equal(count_entries(base), 0);
  }
  for (int i = 0; i < nfill; i++)
    close(fill[i]);
  kv_rmtree(base);
}

/* Compiler diagnostics name the user's file, not kevo's copy of it. */
static void test_log_own_names(void **state) {
  (void)state;
  const char *log = "candidate.c: In function 'rowsum':\n"
                    "candidate.c:21:10: error: expected ';'\n"
                    "In file included from x/candidate.c:3:\n"
                    "/tmp/b/candidate.cu(7): error: identifier \"x\" is undefined\n"
                    "not_candidate.c:1: other\n";
  char *o = kv_gate_log_own_names(log, "/home/me/kernels/good.c");
  assert_non_null(o);
  assert_string_equal(o, "good.c: In function 'rowsum':\n"
                         "good.c:21:10: error: expected ';'\n"
                         "In file included from x/candidate.c:3:\n"
                         "/tmp/b/candidate.cu(7): error: identifier \"x\" is undefined\n"
                         "not_candidate.c:1: other\n");
  free(o);
  o = kv_gate_log_own_names("candidate.cu(7): error\n", "k.cu");
  assert_string_equal(o, "k.cu(7): error\n");
  free(o);
  assert_null(kv_gate_log_own_names(NULL, "k.cu"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_own_names),
      cmocka_unit_test(test_worker_start_failure_leaks_nothing),
      cmocka_unit_test(test_surface_table),
      cmocka_unit_test(test_close_rule),
      cmocka_unit_test(test_compare_names_first_failure),
      cmocka_unit_test(test_compare_large_in_chunks),
      cmocka_unit_test(test_compare_nan_expected),
      cmocka_unit_test(test_sample_catches_skipped_elements),
      cmocka_unit_test(test_perturb_roundtrip),
      cmocka_unit_test(test_verdict_names),
      cmocka_unit_test(test_timing_methods),
      cmocka_unit_test(test_result_json_survives_binary_output),
      cmocka_unit_test(test_result_json_out_of_memory),
      cmocka_unit_test(test_implausible_against_ceilings),
      cmocka_unit_test(test_prebuild_fills_the_cache),
      cmocka_unit_test(test_compile_jail),
      cmocka_unit_test(test_cuda_arch_memo),
      cmocka_unit_test(test_every_bench_size),
      cmocka_unit_test(test_drawn_size_keeps_ties),
      cmocka_unit_test(test_warm_workers),
      cmocka_unit_test(test_candidate_read_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
