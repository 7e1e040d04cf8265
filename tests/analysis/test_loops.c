/* CUDAnalyst's Analyzer: the loop nests of a source, summarised
 * (kv_an_loop_nests, lib/analysis/loops.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "kevo/analysis.h"

static void has(const char *out, const char *want) {
  if (!strstr(out, want))
    fail_msg("'%s' not in:\n%s", want, out);
}

static void test_nests(void **state) {
  (void)state;
  const char *src = "// for (;;) in a comment is no loop\n"
                    "#define LOOP for (int q = 0; q < 4; q++)\n"
                    "static int g(int n) { return n + 1; }\n"
                    "void f(const float *x, float *y, int rows, int cols) {\n"
                    "  const char *s = \"while (1)\";\n"
                    "  for (int r = 0; r < rows; r++)\n"
                    "    for (int c = 0; c < cols; c++)\n"
                    "      y[r] += x[r * cols + c];\n"
                    "  int k = 0;\n"
                    "  do {\n"
                    "    k++;\n"
                    "  } while (k < 3);\n"
                    "  while (k > 0) {\n"
                    "    if (k) { for (int i = 0; i < 2; i++) { y[i] = 0; } }\n"
                    "    k--;\n"
                    "  }\n"
                    "}\n"
                    "__global__ void __launch_bounds__(256) kern(float *y) {\n"
                    "  for (int o = 16; o > 0; o >>= 1) y[o] = 0;\n"
                    "}\n";
  char out[4096];
  assert_int_equal(kv_an_loop_nests(src, out, sizeof out), 6);
  has(out, "function f: 5 loops, nested 2 deep\n");
  has(out, "  for (int r = 0; r < rows; r++)  [nested level 2]\n");
  has(out, "    for (int c = 0; c < cols; c++)  [nested level 1]\n");
  has(out, "  do ... while (k < 3)  [nested level 1]\n"); /* its while is no loop of its own */
  has(out, "  while (k > 0)  [nested level 2]\n");
  has(out, "    for (int i = 0; i < 2; i++)  [nested level 1]\n");
  has(out, "function kern: 1 loop, nested 1 deep\n");
  assert_null(strstr(out, "function g"));
  assert_null(strstr(out, "q < 4"));
  assert_null(strstr(out, "while (1)"));
}

static void test_none_and_caps(void **state) {
  (void)state;
  char out[64];
  assert_int_equal(kv_an_loop_nests("int f(void) { return 1; }", out, sizeof out), 0);
  assert_string_equal(out, "");
  assert_int_equal(kv_an_loop_nests(NULL, out, sizeof out), 0);
  /* the output is capped, the count is not */
  assert_int_equal(kv_an_loop_nests("void f(int *y){for(int i=0;i<9;i++)for(int j=0;j<9;j++)"
                                    "for(int k=0;k<9;k++)y[i]=j+k;}",
                                    out, 16),
                   3);
  assert_true(strlen(out) < 16);
  /* unbalanced code ends without a fault */
  assert_true(
      kv_an_loop_nests("void f(){ for (int i = 0; i < n; i++) { while (", out, sizeof out) >= 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_nests),
                                     cmocka_unit_test(test_none_and_caps)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
