/* Shape and cost expressions: precedence, C division semantics, overflow,
 * division by zero, unknown names, syntax, caps. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/task.h"

static const char TASK[] =
    "{\"name\": \"e\", \"entry\": \"e\", \"params\": ["
    "{\"name\": \"x\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"a\"]},"
    "{\"name\": \"a\", \"role\": \"size\"}, {\"name\": \"b\", \"role\": \"size\"},"
    "{\"name\": \"n_2\", \"role\": \"size\"}],"
    "\"check\": [{\"a\": 3, \"b\": 1000, \"n_2\": 2147483647}]}";

static struct kv_task *task;

static int setup(void **state) {
  (void)state;
  char err[512];
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

static int64_t ok(const char *e) {
  int64_t v = 12345;
  char err[512] = "";
  if (kv_expr_eval(task, &task->check[0], e, &v, err, sizeof err) != 0)
    fail_msg("'%s' failed: %s", e, err);
  return v;
}

/* Must fail with a message that contains want. */
static void bad(const char *e, const char *want) {
  int64_t v = 777;
  char err[512] = "";
  if (kv_expr_eval(task, &task->check[0], e, &v, err, sizeof err) == 0)
    fail_msg("'%s' evaluated to %lld, expected an error with \"%s\"", e, (long long)v, want);
  assert_int_equal(v, 777); /* untouched on failure */
  if (!strstr(err, want))
    fail_msg("'%s': message \"%s\" lacks \"%s\"", e, err, want);
  assert_null(strchr(err, '\n'));
  assert_non_null(strchr(err, ';'));
}

static void test_values(void **state) {
  (void)state;
  assert_int_equal(ok("0"), 0);
  assert_int_equal(ok("007"), 7);
  assert_int_equal(ok("a"), 3);
  assert_int_equal(ok("n_2"), 2147483647);
  assert_int_equal(ok(" a  *\tb "), 3000);
  assert_int_equal(ok("4*a*b + 4*a"), 12012);
  assert_int_equal(ok("1+2*3"), 7);
  assert_int_equal(ok("(1+2)*3"), 9);
  assert_int_equal(ok("10-4-3"), 3);
  assert_int_equal(ok("10-(4-3)"), 9);
  assert_int_equal(ok("100/10/5"), 2);
  assert_int_equal(ok("2*3%4"), 2); /* (2*3)%4: same precedence, left to right */
  assert_int_equal(ok("2+3%2"), 3);
  assert_int_equal(ok("b/a*a + b%a"), 1000);
  assert_int_equal(ok("(b + a - 1) / a"), 334);
  assert_int_equal(ok("((((a))))"), 3);
}

static void test_c_division(void **state) {
  (void)state;
  assert_int_equal(ok("7/2"), 3);
  assert_int_equal(ok("-7/2"), -3);
  assert_int_equal(ok("7/-2"), -3);
  assert_int_equal(ok("-7/-2"), 3);
  assert_int_equal(ok("7%3"), 1);
  assert_int_equal(ok("-7%3"), -1);
  assert_int_equal(ok("7%-3"), 1);
  assert_int_equal(ok("-7%-3"), -1);
  assert_int_equal(ok("-a"), -3);
  assert_int_equal(ok("--a"), 3);
  assert_int_equal(ok("2*-3"), -6);
  assert_int_equal(ok("-(a+b)"), -1003);
  assert_int_equal(ok("a - -a"), 6);
}

static void test_overflow(void **state) {
  (void)state;
  assert_int_equal(ok("9223372036854775807"), INT64_MAX);
  assert_int_equal(ok("-9223372036854775807-1"), INT64_MIN);
  assert_int_equal(ok("(-9223372036854775807-1) % -1"), 0);
  assert_int_equal(ok("n_2*n_2*2"), 2LL * 2147483647 * 2147483647);
  bad("9223372036854775808", "'9223372036854775808': integer literal exceeds "
                             "9223372036854775807 at column 1; use a smaller number");
  bad("99999999999999999999999", "integer literal exceeds");
  bad("9223372036854775807+1", "64-bit overflow in '+' at column 20");
  bad("0-9223372036854775807-2", "64-bit overflow in '-' at column 22");
  bad("3037000500*3037000500", "64-bit overflow in '*' at column 11");
  bad("n_2*n_2*n_2", "64-bit overflow in '*'");
  bad("-(-9223372036854775807-1)", "overflow in negation at column 1");
  bad("(-9223372036854775807-1)/-1", "64-bit overflow in '/'");
}

static void test_division_by_zero(void **state) {
  (void)state;
  bad("1/0", "'1/0': division by zero at column 2; make the divisor non-zero for every size set");
  bad("b / (a - 3)", "'b / (a - 3)': division by zero at column 3");
  bad("b % (a-a)", "modulo by zero at column 3");
  bad("0/0", "division by zero");
}

static void test_names(void **state) {
  (void)state;
  bad("c", "'c': unknown name 'c' at column 1; use only size params (a b n_2)");
  bad("a*bb", "unknown name 'bb' at column 3");
  bad("x+1", "'x+1': 'x' is not a size (its role is out) at column 1");
  bad("A", "unknown name 'A'"); /* names are case-sensitive */
}

static void test_syntax(void **state) {
  (void)state;
  bad("", "'': empty expression at column 1; write an integer expression");
  bad("   ", "empty expression");
  bad("1 2", "'1 2': unexpected '2'; expected an operator at column 3");
  bad("a b", "unexpected 'b'; expected an operator at column 3");
  bad("2a", "unexpected 'a' after a number at column 2");
  bad("(1", "'(1': unexpected end; expected an operator or ')' at column 3");
  bad("1)", "unexpected ')'; expected an operator at column 2");
  bad("()", "unexpected ')'; expected a number, a size name or '(' at column 2");
  bad("1+", "unexpected end; expected a number, a size name or '(' at column 3");
  bad("*1", "unexpected '*'; expected a number, a size name or '(' at column 1");
  bad("+1", "unexpected '+'"); /* no unary plus */
  bad("1 ^ 2", "unexpected '^'");
  bad("1.5", "unexpected '.'");
  bad("a\n", "unexpected byte 0x0a");
  bad("a\xc3\xa9", "unexpected byte 0xc3");
  bad("1 + a * (b - ) ", "unexpected ')'; expected a number, a size name or '(' at column 14");
}

static void test_caps(void **state) {
  (void)state;
  char e[2048];
  /* 64 levels of parentheses pass, 65 do not. */
  for (int depth = 64; depth <= 65; depth++) {
    size_t n = 0;
    for (int i = 0; i < depth; i++)
      e[n++] = '(';
    e[n++] = 'a';
    for (int i = 0; i < depth; i++)
      e[n++] = ')';
    e[n] = '\0';
    if (depth == 64)
      assert_int_equal(ok(e), 3);
    else
      bad(e, "nesting deeper than 64 at column 65");
  }
  memset(e, '-', 64);
  strcpy(e + 64, "a");
  assert_int_equal(ok(e), 3);
  memset(e, '-', 65);
  strcpy(e + 65, "a");
  bad(e, "nesting deeper than 64");
  /* Length cap: 1024 characters. */
  memset(e, ' ', 1023);
  strcpy(e + 1023, "a");
  assert_int_equal(ok(e), 3);
  memset(e, ' ', 1024);
  strcpy(e + 1024, "a");
  bad(e, "longer than 1024 characters; shorten the expression");
  /* Long expressions are quoted truncated. */
  char want[128];
  memset(e, 0, sizeof e);
  for (int i = 0; i < 100; i++)
    strcat(e, "a+");
  strcat(e, "?");
  bad(e, "'a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+...': unexpected '?'");
  snprintf(want, sizeof want, "at column %d", 201);
  bad(e, want);
}

static void test_api_edges(void **state) {
  (void)state;
  char err[256];
  int64_t v;
  assert_int_equal(kv_expr_eval(task, NULL, "1", &v, err, sizeof err), -1);
  assert_non_null(strstr(err, "no size set"));
  assert_int_equal(kv_expr_eval(task, &task->check[0], NULL, &v, err, sizeof err), -1);
  assert_int_equal(kv_expr_eval(NULL, &task->check[0], "1", &v, err, sizeof err), -1);
  assert_int_equal(kv_expr_eval(task, &task->check[0], "1/0", &v, NULL, 0), -1);
  char tiny[6];
  assert_int_equal(kv_expr_eval(task, &task->check[0], "1/0", &v, tiny, sizeof tiny), -1);
  assert_string_equal(tiny, "'1/0'");
  /* Other size sets give other values. */
  struct kv_sizeset s = task->check[0];
  s.values[1] = 5;
  assert_int_equal(kv_expr_eval(task, &s, "a*2", &v, err, sizeof err), 0);
  assert_int_equal(v, 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),   cmocka_unit_test(test_c_division),
      cmocka_unit_test(test_overflow), cmocka_unit_test(test_division_by_zero),
      cmocka_unit_test(test_names),    cmocka_unit_test(test_syntax),
      cmocka_unit_test(test_caps),     cmocka_unit_test(test_api_edges),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
