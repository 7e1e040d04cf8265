/* The kernel-only contract's launch lines: what parses, what each error
 * names (line, field, fix), #defines in expressions (the first definition
 * wins, as tune's prepended ones must), dimensions at every size set, caps,
 * and the host-entry detection that picks the contract. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/launch.h"
#include "kevo/task.h"

static const char TASK[] =
    "{\"name\": \"rowsum\", \"entry\": \"rowsum\", \"params\": ["
    "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"]},"
    "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"rows\"]},"
    "{\"name\": \"alpha\", \"role\": \"scalar\", \"dtype\": \"f64\", \"value\": 2},"
    "{\"name\": \"rows\", \"role\": \"size\"}, {\"name\": \"cols\", \"role\": \"size\"}],"
    "\"check\": [{\"rows\": 1, \"cols\": 1}, {\"rows\": 130, \"cols\": 4099}],"
    "\"bench\": [{\"rows\": 8192, \"cols\": 8192}]}";

static struct kv_task *task;
static struct kv_launch_plan plan;
static char err[1024];

static int setup(void **state) {
  (void)state;
  if (kv_task_parse(TASK, strlen(TASK), "task.json", &task, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kv_task_free(task);
  return 0;
}

static int parse(const char *src) {
  err[0] = 0;
  return kv_launch_parse(task, src, strlen(src), "cand.cu", &plan, err, sizeof err);
}

/* The error contains every one of the given fragments. */
static void expect_error(const char *src, const char *a, const char *b) {
  assert_int_equal(parse(src), -1);
  if (!strstr(err, a) || (b && !strstr(err, b)))
    fail_msg("error '%s' lacks '%s' / '%s'", err, a, b ? b : "");
  assert_null(strchr(err, '\n'));
}

static void test_parses(void **state) {
  (void)state;
  const char *src = "#define BLOCK 256\n"
                    "__global__ void k1(const float *x, float *y, int rows, int cols) {}\n"
                    "// kevo:launch k1 grid=((rows + BLOCK - 1) / BLOCK) block=(BLOCK) "
                    "args=(x, y, rows, cols)\n"
                    "  //   kevo:launch   tmpl<true, 4>  grid=(rows, 2) block=(32,4) "
                    "smem=(BLOCK*4) args=(y,alpha)\n";
  assert_int_equal(parse(src), 2);
  assert_int_equal(plan.l[0].line, 3);
  assert_string_equal(plan.l[0].kernel, "k1");
  assert_int_equal(plan.l[0].ngrid, 1);
  assert_string_equal(plan.l[0].grid[0], "(rows + (256) - 1) / (256)");
  assert_int_equal(plan.l[0].nargs, 4);
  assert_int_equal(plan.l[0].args[0], 0);
  assert_int_equal(plan.l[0].args[3], 4);
  assert_string_equal(plan.l[1].kernel, "tmpl<true, 4>");
  assert_int_equal(plan.l[1].nblock, 2);
  assert_int_equal(plan.l[1].args[1], 2);
  unsigned g[3], b[3], sm;
  assert_int_equal(kv_launch_dims(task, &plan.l[0], &task->check[1], g, b, &sm, err, sizeof err),
                   0);
  assert_int_equal(g[0], 1);
  assert_int_equal(g[1], 1);
  assert_int_equal(b[0], 256);
  assert_int_equal(sm, 0);
  assert_int_equal(kv_launch_dims(task, &plan.l[1], &task->bench[0], g, b, &sm, err, sizeof err),
                   0);
  assert_int_equal(g[0], 8192);
  assert_int_equal(g[1], 2);
  assert_int_equal(b[1], 4);
  assert_int_equal(sm, 1024);
  assert_int_equal(kv_launch_arg_bytes(task, 0), 8);
  assert_int_equal(kv_launch_arg_bytes(task, 2), 8);
  assert_int_equal(kv_launch_arg_bytes(task, 3), 4);
  /* No launch lines: none (the host-entry contract). */
  assert_int_equal(parse("__global__ void k() {}\n// kevo:launcher k\n/* kevo:launch k */\n"), 0);
  /* args=() is a kernel without parameters. */
  assert_int_equal(parse("// kevo:launch k grid=1 block=32 args=()\n"), 1);
  assert_int_equal(plan.l[0].nargs, 0);
}

static void test_defines(void **state) {
  (void)state;
  /* tune prepends its values: the first definition wins over the #ifndef default. */
  const char *src = "#define NT 128\n#ifndef NT\n#define NT 64\n#endif\n"
                    "#define NEG (-2)\n#define F(x) x\n#define S 3 + 4\n"
                    "// kevo:launch k grid=(rows) block=(NT) smem=(NEG+2) args=(x)\n";
  assert_int_equal(parse(src), 1);
  assert_string_equal(plan.l[0].block[0], "(128)");
  assert_string_equal(plan.l[0].smem, "((-2))+2");
  /* Expressions of integers and other #defines are substituted whole. */
  assert_int_equal(parse("#define A 32\n#define B (A * 4u) // x\n"
                         "// kevo:launch k grid=(rows) block=(B) args=(x)\n"),
                   1);
  assert_string_equal(plan.l[0].block[0], "(((32) * 4))");
  /* What is no integer expression is not substituted: an unknown name. */
  expect_error("#define S 3.5f\n// kevo:launch k grid=(S) block=(32) args=(x)\n",
               "cand.cu:2: kevo:launch k: grid[0]", "unknown name 'S'");
  expect_error("#define S foo\n// kevo:launch k grid=(S) block=(32) args=(x)\n",
               "cand.cu:2: kevo:launch k: grid[0]", "unknown name 'foo'");
  expect_error("#define A B\n#define B A\n// kevo:launch k grid=(A) block=(32) args=(x)\n",
               "grid[0]: its #defines nest deeper than 16", NULL);
  /* A #define cannot shadow a size. */
  assert_int_equal(parse("#define rows 0\n// kevo:launch k grid=(rows) block=32 args=(x)\n"), 1);
}

static void test_errors(void **state) {
  (void)state;
  expect_error("\n// kevo:launch k block=(32) args=(x)\n", "cand.cu:2:", "grid: missing");
  expect_error("// kevo:launch k grid=(1) args=(x)\n", "block: missing", "block=(256)");
  expect_error("// kevo:launch k grid=(1) block=(32)\n", "args: missing", NULL);
  expect_error("// kevo:launch k grid=(1) block=(32) args=(x, z)\n", "args[1]: 'z' is not a param",
               "x y alpha rows cols");
  expect_error("// kevo:launch k grid=(1) block=(32) args=(x) stream=(2)\n", "stream: not a field",
               "grid, block, smem and args");
  expect_error("// kevo:launch k grid=(1) grid=(2) block=(32) args=(x)\n", "grid: given twice",
               NULL);
  expect_error("// kevo:launch k grid=(1 block=(32) args=(x)\n", "grid: unbalanced", NULL);
  expect_error("// kevo:launch k grid=(1,2,3,4) block=(32) args=(x)\n", "more than 3 values", NULL);
  expect_error("// kevo:launch k grid=(rows - 1) block=(32) args=(x)\n",
               "grid[0]: 0 at rows=1 cols=1", "round up");
  expect_error("// kevo:launch k grid=(1) block=(2048) args=(x)\n", "block[0]: 2048", "1..1024");
  expect_error("// kevo:launch k grid=(1) block=(64, 32) args=(x)\n", "block: 2048 threads",
               "at most 1024");
  expect_error("// kevo:launch k grid=(1) block=(32) smem=(cols*cols) args=(x)\n",
               "smem:", "227 KiB");
  expect_error("// kevo:launch k grid=(rows/(cols-1)) block=(32) args=(x)\n", "grid[0]: at",
               "division by zero");
  expect_error("// kevo:launch k grid=(x) block=(32) args=(x)\n", "'x' is not a size", NULL);
  expect_error("// kevo:launch k grid=(1) block=(32) args=(x) junk\n", "expected FIELD=VALUE",
               "junk");
  expect_error("// kevo:launch grid=(1) block=(32) args=(x)\n", "no kernel name", "KERNEL grid=");
  expect_error("// kevo:launch k@ grid=(1) block=(32) args=(x)\n", "kernel: unexpected '@'", NULL);
  expect_error("// kevo:launch k<1 grid=(1) block=(32) args=(x)\n", "kernel", NULL);
  expect_error("// kevo:launch\n", "kernel: no kernel name", NULL);
  expect_error("// kevo:launch k grid=() block=(32) args=(x)\n", "grid[0]: empty value", NULL);
}

static void test_caps(void **state) {
  (void)state;
  char *src = malloc(1 << 21);
  assert_non_null(src);
  /* Too many launch lines. */
  size_t u = 0;
  for (int i = 0; i < KV_LAUNCH_MAX + 1; i++)
    u += (size_t)sprintf(src + u, "// kevo:launch k grid=(1) block=(32) args=(x)\n");
  expect_error(src, "more than 16 launch lines", NULL);
  /* A line too long. */
  u = (size_t)sprintf(src, "// kevo:launch k grid=(1");
  for (int i = 0; i < 600; i++)
    u += (size_t)sprintf(src + u, "+1");
  sprintf(src + u, ") block=(32) args=(x)\n");
  expect_error(src, "longer than 1024 bytes", NULL);
  /* An expression too long after substitution. */
  u = (size_t)sprintf(src, "#define A 1000000000000\n// kevo:launch k grid=(1");
  for (int i = 0; i < 40; i++)
    u += (size_t)sprintf(src + u, "+A-A");
  sprintf(src + u, ") block=(32) args=(x)\n");
  expect_error(src, "with its #defines substituted", NULL);
  /* Too many args. */
  u = (size_t)sprintf(src, "// kevo:launch k grid=(1) block=(32) args=(x");
  for (int i = 0; i < KV_LAUNCH_ARGS_MAX; i++)
    u += (size_t)sprintf(src + u, ",x");
  sprintf(src + u, ")\n");
  expect_error(src, "more than 32 arguments", NULL);
  /* A source over the cap. */
  memset(src, ' ', (1 << 20) + 1);
  assert_int_equal(kv_launch_parse(task, src, (1 << 20) + 1, "c.cu", &plan, err, sizeof err), -1);
  /* A NUL in a launch line. */
  memcpy(src, "// kevo:launch k\0grid=(1) block=(32) args=(x)\n", 47);
  assert_int_equal(kv_launch_parse(task, src, 47, "c.cu", &plan, err, sizeof err), -1);
  free(src);
}

static void test_entry(void **state) {
  (void)state;
  const char *k = "__global__ void rowsum_k(const float *x) {}\n// rowsum(x)\n"
                  "/* void rowsum(int) */ const char *s = \"rowsum(\";\n";
  assert_int_equal(kv_launch_has_entry(task, k, strlen(k)), 0);
  const char *h = "extern \"C\" void rowsum (const float *x, float *y, int rows, int cols,\n"
                  "                       cudaStream_t stream) {}\n";
  assert_int_equal(kv_launch_has_entry(task, h, strlen(h)), 1);
  const char *h2 = "void\nrowsum\n(\n";
  assert_int_equal(kv_launch_has_entry(task, h2, strlen(h2)), 1);
  assert_int_equal(kv_launch_has_entry(task, "unterminated /* rowsum(", 23), 0);
  assert_int_equal(kv_launch_has_entry(task, "\"rowsum(", 8), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parses), cmocka_unit_test(test_defines), cmocka_unit_test(test_errors),
      cmocka_unit_test(test_caps),   cmocka_unit_test(test_entry),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
