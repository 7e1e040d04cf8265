/* AdaExplore's Tuner: exact string edits applied to the last kernel
 * (lib/agent/revise.c), and the Reviser's and Tuner's prompts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char kernel[] = "void f(float *y, int n) {\n"
                             "  for (int i = 0; i < n; i++)\n"
                             "    y[i] = 0;\n"
                             "}\n";

static void test_edits_apply_in_turn(void **state) {
  (void)state;
  const char *reply = "Two edits.\n<<<<<<< SEARCH\n    y[i] = 0;\n=======\n    y[i] = 1;\n"
                      ">>>>>>> REPLACE\nthen\n<<<<<<< SEARCH\n    y[i] = 1;\n=======\n"
                      "    y[i] = 2.0f;\n>>>>>>> REPLACE\n";
  char *out = NULL, why[200] = "";
  assert_int_equal(kva_rt_apply(kernel, reply, &out, why, sizeof why), 2);
  assert_non_null(strstr(out, "y[i] = 2.0f;"));
  assert_null(strstr(out, "y[i] = 0;"));
  assert_non_null(strstr(out, "for (int i = 0; i < n; i++)")); /* the rest untouched */
  free(out);
}

static void expect_refused(const char *reply, const char *because) {
  char *out = (char *)1, why[200] = "";
  assert_int_equal(kva_rt_apply(kernel, reply, &out, why, sizeof why), -1);
  assert_null(out);
  if (!strstr(why, because))
    fail_msg("why '%s' does not say '%s'", why, because);
}

static void test_bad_edits_are_refused(void **state) {
  (void)state;
  expect_refused("no blocks at all", "no SEARCH/REPLACE block");
  expect_refused("<<<<<<< SEARCH\n  y[j] = 0;\n=======\n  y[j] = 1;\n>>>>>>> REPLACE",
                 "does not occur");
  expect_refused("<<<<<<< SEARCH\ni\n=======\nj\n>>>>>>> REPLACE", "occurs twice");
  expect_refused("<<<<<<< SEARCH\n\n=======\nx\n>>>>>>> REPLACE", "is empty");
  expect_refused("<<<<<<< SEARCH\n    y[i] = 0;\n=======\n    y[i] = 1;\n", "no '======='");
  /* the second of two edits fails: nothing is applied */
  expect_refused("<<<<<<< SEARCH\n    y[i] = 0;\n=======\n    y[i] = 1;\n>>>>>>> REPLACE\n"
                 "<<<<<<< SEARCH\n    y[i] = 0;\n=======\n    y[i] = 2;\n>>>>>>> REPLACE",
                 "edit 2");
}

static void test_prompts(void **state) {
  (void)state;
  struct kva_rt_ctx c = {"rowsum",       "sum each row", "rowsum",     "ref",
                         "### step 1\n", kernel,         "ok: passed", "1. unroll"};
  char err[256];
  char *r = kva_rt_prompt(NULL, 0, &c, err, sizeof err);
  char *t = kva_rt_prompt(NULL, 1, &c, err, sizeof err);
  assert_non_null(r);
  assert_non_null(t);
  assert_non_null(strstr(r, "one to three items"));
  assert_null(strstr(r, "<<<<<<< SEARCH"));
  assert_non_null(strstr(t, "<<<<<<< SEARCH"));
  assert_non_null(strstr(t, "1. unroll"));
  assert_non_null(strstr(t, "### step 1"));
  free(r);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_edits_apply_in_turn),
      cmocka_unit_test(test_bad_edits_are_refused),
      cmocka_unit_test(test_prompts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
