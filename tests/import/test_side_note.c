/* The marking of a speedup against a torch side whose time by kevo is off
 * triton's do_bench (issue 27 item 4), with the numbers of the H100 run in
 * BENCHMARKS.md (12_Matmul_with_diagonal_matrices_: eager 61.3 us by kevo,
 * 61.0 by do_bench; torch.compile 57.7 against 51.7, 1.116): the compile
 * side is marked, the eager one is not, and the marking survives the
 * result's JSON (what runs show, the report and the bench table read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/gate.h"

static void matmul12(struct kv_gate_result *r) {
  memset(r, 0, sizeof *r);
  r->verdict = KV_V_OK;
  snprintf(r->surface, sizeof r->surface, "cuda");
  r->timed = 1;
  struct kv_timing *t = &r->timing;
  t->cand.median_us = 54.3;
  t->ref.median_us = 61.3;
  t->base.median_us = 57.7;
  t->cand.n = t->ref.n = t->base.n = 10;
  t->has_baseline = 1;
  snprintf(t->baseline_kind, sizeof t->baseline_kind, "torch.compile(mode=default)");
  t->speedup = 61.3 / 54.3;
  t->speedup_vs_baseline = 57.7 / 54.3;
  t->ref_do_bench_us = 61.0;
  t->base_do_bench_us = 51.7;
}

static void test_marks_the_side_off(void **state) {
  (void)state;
  struct kv_gate_result r;
  matmul12(&r);
  char note[160];
  assert_int_equal(kv_side_note(&r.timing, 1, note, sizeof note), 1);
  assert_string_equal(note, " (kevo's compile time 11.6% above do_bench: not comparable)");
  assert_int_equal(kv_side_note(&r.timing, 0, note, sizeof note), 0); /* 0.5% off */
  assert_string_equal(note, "");
  r.timing.ref_do_bench_us = 61.3 / 0.93; /* kevo 7% below do_bench */
  assert_int_equal(kv_side_note(&r.timing, 0, note, sizeof note), 1);
  assert_string_equal(note, " (kevo's eager time 7.0% below do_bench: not comparable)");
  r.timing.ref_do_bench_us = 61.3 / 1.049; /* within 5%: bare */
  assert_int_equal(kv_side_note(&r.timing, 0, note, sizeof note), 0);
  r.timing.ref_do_bench_us = 0; /* not cross-checked: nothing to say */
  assert_int_equal(kv_side_note(&r.timing, 0, note, sizeof note), 0);
}

static void test_through_json(void **state) {
  (void)state;
  struct kv_gate_result r, back;
  matmul12(&r);
  char *js = kv_gate_result_json(&r);
  assert_non_null(js);
  json_t *j = json_loads(js, 0, NULL), *t = json_object_get(j, "timing");
  json_t *db = json_object_get(t, "do_bench");
  assert_true(json_is_object(db));
  assert_true(json_is_false(json_object_get(db, "baseline_comparable")));
  assert_true(json_is_true(json_object_get(db, "reference_comparable")));
  assert_true(json_real_value(json_object_get(db, "baseline_ratio")) > 1.11);
  char note[160];
  assert_int_equal(kv_side_note_json(t, 1, note, sizeof note), 1);
  assert_string_equal(note, " (kevo's compile time 11.6% above do_bench: not comparable)");
  assert_int_equal(kv_side_note_json(t, 0, note, sizeof note), 0);
  char err[256];
  assert_int_equal(kv_gate_result_from_json(js, &back, err, sizeof err), 0);
  assert_true(back.timing.base_do_bench_us > 51.6 && back.timing.base_do_bench_us < 51.8);
  assert_int_equal(kv_side_note(&back.timing, 1, note, sizeof note), 1);
  kv_gate_result_release(&back);
  json_decref(j);
  free(js);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_marks_the_side_off),
      cmocka_unit_test(test_through_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
