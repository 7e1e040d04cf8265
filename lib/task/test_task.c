/* task.json parsing and validation: the example of docs/task-format.md, malformed specs
 * (each asserting the field path of its message), size-set caps, loading. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kevo/task.h"

/* The example of docs/task-format.md. */
static const char ROWSUM[] =
    "{\n"
    "  \"name\": \"rowsum\",\n"
    "  \"summary\": \"Sum of each row of a float32 matrix.\",\n"
    "  \"entry\": \"rowsum\",\n"
    "  \"params\": [\n"
    "    {\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"],\n"
    "     \"init\": {\"dist\": \"uniform\", \"lo\": -1, \"hi\": 1}},\n"
    "    {\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"rows\"]},\n"
    "    {\"name\": \"rows\", \"role\": \"size\"},\n"
    "    {\"name\": \"cols\", \"role\": \"size\"}\n"
    "  ],\n"
    "  \"check\": [{\"rows\": 1, \"cols\": 1}, {\"rows\": 7, \"cols\": 1001}, {\"rows\": 130, "
    "\"cols\": 4099}],\n"
    "  \"bench\": [{\"rows\": 8192, \"cols\": 8192}],\n"
    "  \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},\n"
    "  \"cost\": {\"bytes\": \"4*rows*cols + 4*rows\", \"flops\": \"rows*cols\"}\n"
    "}\n";

static int parse(const char *text, struct kv_task **t, char *err, size_t errlen) {
  return kv_task_parse(text, strlen(text), "task.json", t, err, errlen);
}

/* ROWSUM with the value at PATH ("params/0/dtype") replaced by the JSON text
 * value, or removed when value is NULL. */
static char *mutate(const char *base, const char *path, const char *value) {
  json_error_t je;
  json_t *root = json_loads(base, 0, &je);
  assert_non_null(root);
  json_t *cur = root;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL, *tok = strtok_r(buf, "/", &save);
  while (tok) {
    char *next = strtok_r(NULL, "/", &save);
    if (!next) {
      json_t *v = value ? json_loads(value, JSON_DECODE_ANY, &je) : NULL;
      if (value && !v)
        fail_msg("bad test value %s: %s", value, je.text);
      if (json_is_array(cur)) {
        size_t idx = (size_t)atoi(tok);
        if (!v)
          json_array_remove(cur, idx);
        else if (idx < json_array_size(cur))
          json_array_set_new(cur, idx, v);
        else
          json_array_append_new(cur, v);
      } else if (!v) {
        json_object_del(cur, tok);
      } else {
        json_object_set_new(cur, tok, v);
      }
      break;
    }
    cur = json_is_array(cur) ? json_array_get(cur, (size_t)atoi(tok)) : json_object_get(cur, tok);
    if (!cur)
      fail_msg("bad test path %s", path);
    tok = next;
  }
  char *out = json_dumps(root, JSON_INDENT(2));
  json_decref(root);
  return out;
}

/* Parsing must fail, with a one-line message that starts with prefix and
 * has a fix after a ';'. */
static void expect_fail(const char *text, const char *prefix) {
  char err[1024] = "";
  struct kv_task *t = (struct kv_task *)0x1;
  int rc = parse(text, &t, err, sizeof err);
  if (rc == 0) {
    kv_task_free(t);
    fail_msg("parsed, expected an error starting with \"%s\"", prefix);
  }
  assert_null(t);
  if (strncmp(err, prefix, strlen(prefix)) != 0)
    fail_msg("message \"%s\" does not start with \"%s\"", err, prefix);
  assert_null(strchr(err, '\n'));
  assert_non_null(strchr(err, ';'));
}

/* ---- the example ---------------------------------------------------------- */

static void test_rowsum_example(void **state) {
  (void)state;
  struct kv_task *t = NULL;
  char err[512] = "";
  int rc = parse(ROWSUM, &t, err, sizeof err);
  if (rc != 0)
    fail_msg("%s", err);
  assert_string_equal(t->name, "rowsum");
  assert_string_equal(t->summary, "Sum of each row of a float32 matrix.");
  assert_string_equal(t->entry, "rowsum");
  assert_string_equal(t->dir, "");
  assert_int_equal(t->nparams, 4);
  assert_string_equal(t->params[0].name, "x");
  assert_int_equal(t->params[0].role, KV_ROLE_IN);
  assert_int_equal(t->params[0].dtype, KV_F32);
  assert_int_equal(t->params[0].ndim, 2);
  assert_string_equal(t->params[0].shape[0], "rows");
  assert_string_equal(t->params[0].shape[1], "cols");
  assert_int_equal(t->params[0].init.dist, KV_DIST_UNIFORM);
  assert_true(t->params[0].init.a == -1 && t->params[0].init.b == 1);
  assert_int_equal(t->params[1].role, KV_ROLE_OUT);
  assert_int_equal(t->params[1].ndim, 1);
  assert_int_equal(t->params[2].role, KV_ROLE_SIZE);
  assert_int_equal(t->params[3].role, KV_ROLE_SIZE);
  assert_int_equal(t->ncheck, 3);
  assert_int_equal(t->check[1].values[2], 7);
  assert_int_equal(t->check[1].values[3], 1001);
  assert_int_equal(t->check[1].values[0], 0);
  assert_int_equal(t->nbench, 1);
  assert_int_equal(t->bench[0].values[2], 8192);
  assert_true(t->atol == 1e-5 && t->rtol == 1e-5);
  assert_string_equal(t->cost_bytes, "4*rows*cols + 4*rows");
  assert_string_equal(t->cost_flops, "rows*cols");
  assert_int_equal(t->nallow, 0);

  /* Canonical JSON: sorted keys, compact. */
  assert_non_null(t->json);
  assert_null(strchr(t->json, '\n'));
  assert_int_equal(strncmp(t->json, "{\"bench\":[{\"cols\":8192,\"rows\":8192}],\"check\":", 45),
                   0);
  struct kv_task *t2 = NULL;
  assert_int_equal(kv_task_parse(t->json, strlen(t->json), "canon", &t2, err, sizeof err), 0);
  assert_string_equal(t->json, t2->json);
  kv_task_free(t2);

  int64_t v, total;
  assert_int_equal(kv_sizeset_get(t, &t->check[2], "cols", &v), 0);
  assert_int_equal(v, 4099);
  assert_int_equal(kv_sizeset_get(t, &t->check[2], "x", &v), -1);
  assert_int_equal(kv_sizeset_get(t, &t->check[2], "nope", &v), -1);
  char s[64];
  kv_sizeset_format(t, &t->check[1], s, sizeof s);
  assert_string_equal(s, "rows=7 cols=1001");
  kv_sizeset_format(t, &t->check[1], s, 8);
  assert_string_equal(s, "rows=7");
  assert_int_equal(kv_param_elems(t, 0, &t->check[2], &v, err, sizeof err), 0);
  assert_int_equal(v, 130 * 4099);
  assert_int_equal(kv_param_elems(t, 1, &t->check[2], &v, err, sizeof err), 0);
  assert_int_equal(v, 130);
  assert_int_equal(kv_param_elems(t, 2, &t->check[2], &v, err, sizeof err), -1);
  assert_non_null(strstr(err, "params[2]: 'rows' is not a buffer"));
  assert_int_equal(kv_param_elems(t, 9, &t->check[2], &v, err, sizeof err), -1);
  assert_int_equal(kv_sizeset_bytes(t, &t->bench[0], &total, err, sizeof err), 0);
  assert_int_equal(total, 4LL * 8192 * 8192 + 4 * 8192);
  assert_int_equal(kv_expr_eval(t, &t->bench[0], t->cost_bytes, &v, err, sizeof err), 0);
  assert_int_equal(v, 4LL * 8192 * 8192 + 4 * 8192);
  kv_task_free(t);
}

static void test_defaults(void **state) {
  (void)state;
  const char *text =
      "{\"name\": \"axpy\", \"entry\": \"axpy\", \"params\": ["
      "{\"name\": \"n\", \"role\": \"size\", \"dtype\": \"i32\"},"
      "{\"name\": \"a\", \"role\": \"scalar\", \"dtype\": \"f32\", \"value\": 2.5},"
      "{\"name\": \"b\", \"role\": \"scalar\", \"dtype\": \"i64\", \"init\": {\"dist\": \"int\", "
      "\"lo\": -5, \"hi\": 5}},"
      "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f16\", \"shape\": [\"n\"]},"
      "{\"name\": \"q\", \"role\": \"in\", \"dtype\": \"u8\", \"shape\": [\"n\", 3]},"
      "{\"name\": \"k\", \"role\": \"in\", \"dtype\": \"i32\", \"shape\": []},"
      "{\"name\": \"y\", \"role\": \"inout\", \"dtype\": \"bf16\", \"shape\": [\"(n + 1) / 2 * "
      "2\"]}],"
      "\"check\": [{\"n\": 1}, {\"n\": 33}], \"allow\": [\"cublas\", \"cudnn\"]}";
  struct kv_task *t = NULL;
  char err[512] = "";
  if (parse(text, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_string_equal(t->summary, "");
  assert_true(t->atol == 1e-5 && t->rtol == 1e-5);
  assert_null(t->cost_bytes);
  assert_null(t->cost_flops);
  assert_int_equal(t->nbench, 1);
  assert_int_equal(t->bench[0].values[0], 33); /* bench = the last check set */
  assert_int_equal(t->params[1].has_value, 1);
  assert_true(t->params[1].value == 2.5);
  assert_int_equal(t->params[2].has_value, 0);
  assert_int_equal(t->params[2].init.dist, KV_DIST_INT);
  assert_int_equal(t->params[3].init.dist, KV_DIST_DEFAULT);
  assert_true(t->params[3].init.a == -1 && t->params[3].init.b == 1);
  assert_int_equal(t->params[4].ndim, 2);
  assert_string_equal(t->params[4].shape[1], "3");
  assert_true(t->params[4].init.a == 0 && t->params[4].init.b == 255);
  assert_int_equal(t->params[5].ndim, 0);
  assert_true(t->params[5].init.a == -100 && t->params[5].init.b == 100);
  assert_int_equal(t->nallow, 2);
  assert_string_equal(t->allow[1], "cudnn");
  int64_t n;
  assert_int_equal(kv_param_elems(t, 5, &t->check[0], &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(kv_param_elems(t, 6, &t->check[1], &n, err, sizeof err), 0);
  assert_int_equal(n, 34);
  kv_task_free(t);
}

/* kevo eval --allow: names checked like the field's, added to the list and
 * the JSON once, the task unchanged on an error. */
static void test_allow_add(void **state) {
  (void)state;
  struct kv_task *t = NULL;
  char err[512] = "";
  if (parse(ROWSUM, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(t->nallow, 0);
  assert_int_equal(kv_task_allow_add(t, "cublas, cudnn,cublas", "--allow", err, sizeof err), 0);
  assert_int_equal(t->nallow, 2);
  assert_string_equal(t->allow[0], "cublas");
  assert_string_equal(t->allow[1], "cudnn");
  assert_non_null(strstr(t->json, "\"allow\":[\"cublas\",\"cudnn\"]"));
  assert_int_equal(kv_task_allow_add(t, "cudnn", "--allow", err, sizeof err), 0);
  assert_int_equal(t->nallow, 2);
  assert_int_equal(kv_task_allow_add(t, "cufft", "--allow", err, sizeof err), -1);
  assert_string_equal(err, "--allow: 'cufft' is not a library kevo can link; use one of cublas "
                           "cublaslt cudnn");
  assert_int_equal(kv_task_allow_add(t, "CUDNN", "--allow", err, sizeof err), -1);
  assert_non_null(strstr(err, "(did you mean 'cudnn'?)"));
  assert_int_equal(t->nallow, 2);
  /* The JSON parses back to the same list. */
  struct kv_task *u = NULL;
  if (parse(t->json, &u, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(u->nallow, 2);
  kv_task_free(u);
  kv_task_free(t);
}

/* ---- malformed specs ----------------------------------------------------- */

struct bad {
  const char *path;
  const char *value; /* NULL: remove */
  const char *prefix;
};

static const struct bad bad_mutations[] = {
    {"nmae", "\"x\"",
     "task.json: nmae: unknown key; use one of: name summary entry params check "
     "bench tolerance cost allow (did you mean 'name'?)"},
    {"name", NULL, "task.json: name: missing"},
    {"name", "42", "task.json: name: must be a string, not an integer"},
    {"name", "\"row sum\"", "task.json: name: 'row sum' has the character ' '"},
    /* a non-ASCII name is shown as written, not as '?' */
    {"name", "\"rows\u00fcm\"", "task.json: name: 'rows\xc3\xbcm' has the character '\xc3\xbc'"},
    {"name", "\"a\\u0001b\"", "task.json: name: 'a?b' has the character '\\x01'"},
    {"name", "\"\"", "task.json: name: must have 1 to"},
    {"summary", "[]", "task.json: summary: must be a string, not an array"},
    {"entry", NULL, "task.json: entry: missing"},
    {"entry", "\"2fast\"", "task.json: entry: '2fast' is not a C identifier"},
    {"entry", "\"float\"", "task.json: entry: 'float' is a reserved word"},
    {"entry", "\"__global__\"", "task.json: entry: '__global__' is a reserved identifier"},
    {"entry", "\"kevo_shim_call\"", "task.json: entry: 'kevo_shim_call' starts with 'kevo_'"},
    {"params", NULL, "task.json: params: missing"},
    {"params", "[]", "task.json: params: empty"},
    {"params", "{}", "task.json: params: must be an array, not an object"},
    {"params/1", "7", "task.json: params[1]: must be an object, not an integer"},
    {"params/0/dtype", "\"float\"",
     "task.json: params[0].dtype: 'float' is not a dtype; use one "
     "of f32 f64 i32 i64 u8 f16 bf16"},
    {"params/0/dtype", NULL, "task.json: params[0].dtype: missing"},
    {"params/2/dtype", "\"f32\"", "task.json: params[2].dtype: a size param is always an int"},
    {"params/2/shape", "[\"rows\"]", "task.json: params[2].shape: a size param has no shape"},
    {"params/3/value", "3", "task.json: params[3].value: a size param takes its value"},
    {"params/1/role", "\"output\"",
     "task.json: params[1].role: 'output' is not a role; use one "
     "of in out inout size scalar"},
    {"params/1/role", NULL, "task.json: params[1].role: missing"},
    {"params/0/name", "\"x y\"", "task.json: params[0].name: 'x y' is not a C identifier"},
    {"params/0/name", "\"int\"", "task.json: params[0].name: 'int' is a reserved word"},
    {"params/1/name", "\"x\"", "task.json: params[1].name: 'x' is already the name of params[0]"},
    {"params/1/name", "\"stream\"", "task.json: params[1].name: 'stream' is a reserved word"},
    {"params/1/name", "\"uint16_t\"", "task.json: params[1].name: 'uint16_t' is a reserved word"},
    {"params/1/name", "\"INT32_MAX\"", "task.json: params[1].name: 'INT32_MAX' collides"},
    {"params/0/dtpye", "\"f32\"",
     "task.json: params[0].dtpye: unknown key; use one of: name role "
     "dtype shape init value pack (did you mean 'dtype'?)"},
    {"params/0/shape", NULL, "task.json: params[0].shape: missing"},
    {"params/0/shape", "\"rows\"", "task.json: params[0].shape: must be an array, not a string"},
    {"params/0/shape/1", "3.5", "task.json: params[0].shape[1]: must be a string or an integer"},
    {"params/0/shape/1", "-1", "task.json: params[0].shape[1]: -1 is negative"},
    {"params/0/shape/1", "\"colz\"",
     "task.json: params[0].shape[1]: 'colz': unknown name 'colz' "
     "at column 1; use only size params (rows cols)"},
    {"params/0/shape/0", "\"y * 2\"",
     "task.json: params[0].shape[0]: 'y * 2': 'y' is not a size "
     "(its role is out)"},
    {"params/0/shape/1", "\"rows *\"", "task.json: params[0].shape[1]: 'rows *': unexpected end"},
    {"params/0/shape/1", "\"rows $ 2\"",
     "task.json: params[0].shape[1]: 'rows $ 2': unexpected "
     "'$'"},
    {"params/0/shape", "[1,2,3,4,5,6,7,8,9]",
     "task.json: params[0].shape: 9 dimensions; use at "
     "most 8"},
    {"params/1/init", "{\"dist\": \"uniform\", \"lo\": 0, \"hi\": 1}",
     "task.json: params[1].init: out params are written by the entry"},
    {"params/0/value", "1", "task.json: params[0].value: only scalar params take a value"},
    {"params/0/init", "[]", "task.json: params[0].init: must be an object, not an array"},
    {"params/0/init/dist", "\"gauss\"",
     "task.json: params[0].init.dist: 'gauss' is not a "
     "distribution; use one of uniform normal int"},
    {"params/0/init/dist", NULL, "task.json: params[0].init.dist: missing"},
    {"params/0/init/lo", "2", "task.json: params[0].init.lo: 2 is above hi (1)"},
    {"params/0/init/hi", NULL, "task.json: params[0].init.hi: missing"},
    {"params/0/init/hi", "\"1\"", "task.json: params[0].init.hi: must be a number, not a string"},
    {"params/0/init/mean", "0",
     "task.json: params[0].init.mean: unknown key; use one of: dist lo "
     "hi"},
    {"params/0/init", "{\"dist\": \"normal\", \"mean\": 0, \"std\": -1}",
     "task.json: params[0].init.std: -1 is negative"},
    {"params/0/init", "{\"dist\": \"normal\", \"mean\": 0, \"std\": 1e38}",
     "task.json: params[0].init.std: draws would overflow f32"},
    {"params/0/init", "{\"dist\": \"normal\", \"mean\": 0, \"sd\": 1}",
     "task.json: params[0].init.sd: unknown key; use one of: dist mean std (did you mean 'std'?)"},
    {"params/0/init", "{\"dist\": \"uniform\", \"lo\": -1e39, \"hi\": 1}",
     "task.json: params[0].init.lo: -1e+39 is beyond the range of f32; use |lo| <= "
     "3.402823466e+38"},
    {"params/0/init", "{\"dist\": \"int\", \"lo\": 0.5, \"hi\": 1}",
     "task.json: params[0].init.lo: 0.5 is not an integer"},
    {"params/1/role", "\"inout\"", NULL}, /* control: stays valid */
    {"params/1/role", "\"in\"", "task.json: params: no out or inout param"},
    {"check", NULL, "task.json: check: missing"},
    {"check", "[]", "task.json: check: empty"},
    {"check", "{\"rows\": 1}", "task.json: check: must be an array of size sets, not an object"},
    {"check/1", "[7]", "task.json: check[1]: must be an object, not an array"},
    {"check/1/rows", NULL,
     "task.json: check[1].rows: missing; every size set gives every size "
     "param (rows cols)"},
    {"check/0/rowz", "3",
     "task.json: check[0].rowz: unknown size; give exactly the size params "
     "(rows cols)"},
    {"check/0/x", "3", "task.json: check[0].x: 'x' is not a size (its role is in)"},
    {"check/0/rows", "0",
     "task.json: check[0].rows: 0 is out of range; use an integer from 1 to "
     "2147483647"},
    {"check/0/rows", "2147483648", "task.json: check[0].rows: 2147483648 is out of range"},
    {"check/0/rows", "\"7\"", "task.json: check[0].rows: must be an integer, not a string"},
    {"check/0/rows", "7.0", "task.json: check[0].rows: must be an integer, not a number"},
    {"bench/0/cols", NULL, "task.json: bench[0].cols: missing"},
    {"bench", "[]", "task.json: bench: empty"},
    {"tolerance/atol", "-1", "task.json: tolerance.atol: -1 is negative; use a finite number >= 0"},
    {"tolerance/rtol", "true", "task.json: tolerance.rtol: must be a number, not a boolean"},
    {"tolerance/aotl", "1",
     "task.json: tolerance.aotl: unknown key; use one of: atol rtol (did "
     "you mean 'atol'?)"},
    {"tolerance", "1e-5", "task.json: tolerance: must be an object, not a number"},
    {"cost/bytes", "\"4*rows*\"", "task.json: cost.bytes: '4*rows*': unexpected end"},
    {"cost/flops", "\"rows*x\"", "task.json: cost.flops: 'rows*x': 'x' is not a size"},
    {"cost/flops", "[]", "task.json: cost.flops: must be a string expression, not an array"},
    {"cost/time", "\"1\"", "task.json: cost.time: unknown key; use one of: bytes flops"},
    {"cost/flops", "\"0 - rows\"", "task.json: check[0]: cost.flops: evaluates to -1"},
    {"allow", "\"cublas\"", "task.json: allow: must be an array of strings, not a string"},
    {"allow", "[1]", "task.json: allow[0]: must be a string, not an integer"},
    {"allow", "[\"cublas\", \"cublas\"]", "task.json: allow[1]: 'cublas' is listed twice"},
    {"allow", "[\"cu blas\"]",
     "task.json: allow[0]: 'cu blas' is not a library kevo can link; use one of cublas cublaslt "
     "cudnn"},
    {"allow", "[\"cublas\", \"cufft\"]",
     "task.json: allow[1]: 'cufft' is not a library kevo can link; use one of cublas cublaslt "
     "cudnn"},
    {"allow", "[\"cublasLt\"]",
     "task.json: allow[0]: 'cublasLt' is not a library kevo can link; use one of cublas cublaslt "
     "cudnn (did you mean 'cublaslt'?)"},
    {"allow", "[\"cudnn9\"]",
     "task.json: allow[0]: 'cudnn9' is not a library kevo can link; "
     "use one of cublas cublaslt cudnn (did you mean 'cudnn'?)"},
    /* Per size set: expressions evaluate under each set, dims >= 0, byte caps. */
    {"params/0/shape/1", "\"cols/(rows-7)\"",
     "task.json: check[1]: params[0].shape[1]: "
     "'cols/(rows-7)': division by zero"},
    {"params/0/shape/1", "\"cols % (rows-1)\"",
     "task.json: check[0]: params[0].shape[1]: 'cols "
     "% (rows-1)': modulo by zero"},
    {"params/1/shape/0", "\"rows-2\"",
     "task.json: check[0]: params[1].shape[0]: 'rows-2' is -1; "
     "a dimension must be >= 0"},
    {"params/0/shape/1", "\"cols*cols*cols*cols*cols*cols*cols\"",
     "task.json: check[1]: params[0].shape[1]: 'cols*cols*cols*cols*cols*cols*cols': 64-bit "
     "overflow in '*'"},
    {"bench/0", "{\"rows\": 131072, \"cols\": 131072}",
     "task.json: bench[0]: params[0]: 'x' needs 17179869184 elements of f32 (68719476736 bytes), "
     "over the per-buffer limit of 42949672960 bytes (half the 80 GiB of device memory kevo "
     "assumes"},
    {"bench/0", "{\"rows\": 2147483647, \"cols\": 2147483647}",
     "task.json: bench[0]: params[0]: 'x' needs 4611686014132420609 elements of f32 (over 2^63 "
     "bytes)"},
    {"params/0/shape", "[\"cols*cols*cols\", \"cols*cols*cols\", \"cols\"]",
     "task.json: check[1]: params[0].shape: the element count of 'x' overflows 64 bits"},
    {"params/1",
     "{\"name\": \"y\", \"role\": \"inout\", \"dtype\": \"f32\", \"shape\": [\"rows\", "
     "\"cols\"]}",
     NULL},
};

static void test_bad_mutations(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_mutations / sizeof bad_mutations[0]; i++) {
    const struct bad *b = &bad_mutations[i];
    char *text = mutate(ROWSUM, b->path, b->value);
    if (b->prefix) {
      expect_fail(text, b->prefix);
    } else { /* controls: a mutation that stays valid */
      struct kv_task *t = NULL;
      char err[512] = "";
      if (parse(text, &t, err, sizeof err) != 0)
        fail_msg("case %zu (%s): %s", i, b->path, err);
      kv_task_free(t);
    }
    free(text);
  }
}

/* Scalars and dtype-specific init ranges, on a small task with a scalar. */
static const char SCALED[] =
    "{\"name\": \"scale\", \"entry\": \"scale\", \"params\": ["
    "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"u8\", \"shape\": [\"n\"]},"
    "{\"name\": \"a\", \"role\": \"scalar\", \"dtype\": \"i32\", \"value\": 3},"
    "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"n\"]},"
    "{\"name\": \"n\", \"role\": \"size\"}],"
    "\"check\": [{\"n\": 5}]}";

static void test_bad_scalars(void **state) {
  (void)state;
  static const struct bad cases[] = {
      {"params/1/value", NULL, "task.json: params[1]: a scalar needs exactly one of value or init"},
      {"params/1/init", "{\"dist\": \"int\", \"lo\": 0, \"hi\": 3}",
       "task.json: params[1]: a scalar needs exactly one of value or init; remove one"},
      {"params/1/value", "2.5", "task.json: params[1].value: 2.5 is not an integer"},
      {"params/1/value", "3000000000", "task.json: params[1].value: 3000000000 does not fit i32"},
      {"params/1/value", "null", "task.json: params[1].value: must be a number, not null"},
      {"params/1/dtype", NULL, "task.json: params[1].dtype: missing; a scalar param needs a dtype"},
      {"params/1/shape", "[]", "task.json: params[1].shape: a scalar has no shape"},
      {"params/0/init", "{\"dist\": \"int\", \"lo\": 0, \"hi\": 256}",
       "task.json: params[0].init.hi: 256 does not fit u8; use an integer from 0 to 255"},
      {"params/0/init", "{\"dist\": \"int\", \"lo\": -1, \"hi\": 2}",
       "task.json: params[0].init.lo: -1 does not fit u8"},
      {"params/0/init", "{\"dist\": \"uniform\", \"lo\": 0, \"hi\": 2}",
       "task.json: params[0].init.dist: 'uniform' needs a float dtype, not u8"},
      {"params/0/init", "{\"dist\": \"normal\", \"mean\": 0, \"std\": 2}",
       "task.json: params[0].init.dist: 'normal' needs a float dtype, not u8"},
      {"params/1/dtype", "\"f16\"", NULL},
      {"params/0/dtype", "\"f16\"", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *text = mutate(SCALED, cases[i].path, cases[i].value);
    if (cases[i].prefix) {
      expect_fail(text, cases[i].prefix);
    } else {
      struct kv_task *t = NULL;
      char err[512];
      if (parse(text, &t, err, sizeof err) != 0)
        fail_msg("%s", err);
      kv_task_free(t);
    }
    free(text);
  }
  /* f16 ranges: 65504 is the largest finite half. */
  char *a = mutate(SCALED, "params/1",
                   "{\"name\": \"a\", \"role\": \"scalar\", \"dtype\": \"f16\", "
                   "\"value\": 70000}");
  expect_fail(a, "task.json: params[1].value: 70000 is beyond the range of f16");
  free(a);
  a = mutate(SCALED, "params/0",
             "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f16\", "
             "\"shape\": [\"n\"], \"init\": {\"dist\": \"uniform\", \"lo\": "
             "-60000, \"hi\": 60000}}");
  expect_fail(a, "task.json: params[0].init.hi: hi - lo overflows f16");
  free(a);
}

static void test_bad_documents(void **state) {
  (void)state;
  expect_fail("{\"name\": \"a\",\n  \"entry\": }", "task.json: line 2, column 12: invalid JSON:");
  expect_fail("", "task.json: line 1, column 0: invalid JSON:");
  expect_fail("[]", "task.json: (top level): must be an object, not an array");
  expect_fail("{\"name\": \"a\", \"name\": \"b\"}", "task.json: line 1, column");
  expect_fail("{} x", "task.json: line 1, column");
  /* Control characters in keys do not break the one-line message. */
  expect_fail("{\"na\\nme\": 1}", "task.json: na?me: unknown key");

  /* Larger than KV_MAX_TASK_JSON: refused before parsing. */
  size_t n = KV_MAX_TASK_JSON + 1;
  char *big = malloc(n + 1);
  assert_non_null(big);
  memset(big, ' ', n);
  big[n] = '\0';
  char err[512];
  struct kv_task *t = NULL;
  assert_int_equal(kv_task_parse(big, n, "big.json", &t, err, sizeof err), -1);
  assert_null(t);
  assert_string_equal(err, "big.json: (file): 1048577 bytes, over the limit of 1048576 bytes; "
                           "shrink the spec");
  free(big);

  /* Small and absent message buffers are safe. */
  char tiny[8];
  assert_int_equal(kv_task_parse("[]", 2, "task.json", &t, tiny, sizeof tiny), -1);
  assert_string_equal(tiny, "task.js");
  assert_int_equal(kv_task_parse("[]", 2, "task.json", &t, NULL, 0), -1);
  assert_int_equal(kv_task_parse(NULL, 0, NULL, &t, err, sizeof err), -1);
  kv_task_free(NULL);
}

static void test_total_cap(void **state) {
  (void)state;
  /* On a 16 GiB device (--device-memory 16): x and z fit the 8 GiB cap one
   * by one; x + z + y exceeds it. */
  kv_task_set_device_memory((int64_t)16 << 30);
  char *a = mutate(ROWSUM, "bench/0", "{\"rows\": 32768, \"cols\": 32768}");
  char *b = mutate(a, "params/4",
                   "{\"name\": \"z\", \"role\": \"inout\", \"dtype\": \"f32\", "
                   "\"shape\": [\"rows\", \"cols\"]}");
  struct kv_task *t = NULL;
  char err[512];
  if (parse(a, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  kv_task_free(t);
  expect_fail(b, "task.json: bench[0]: params: the buffers need 8590065664 bytes in all, over "
                 "the total limit of 8589934592 bytes (half the 16 GiB of device memory kevo "
                 "assumes (--device-memory)");
  kv_task_set_device_memory(0);
  free(a);
  free(b);
}

/* ---- loading from a directory ---------------------------------------------- */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_load(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo_test_task_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], err[1024], withslash[512];
  struct kv_task *t = NULL;

  snprintf(path, sizeof path, "%s/nodir", dir);
  assert_int_equal(kv_task_load(path, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "nodir: not a directory; pass a task directory"));

  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), -1);
  snprintf(path, sizeof path, "%s/task.json: not found; a task directory needs a task.json", dir);
  if (strncmp(err, path, strlen(path)) != 0)
    fail_msg("got: %s", err);

  snprintf(path, sizeof path, "%s/task.json", dir);
  write_file(path, ROWSUM);
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), -1);
  snprintf(path, sizeof path, "%s/reference.c: not found; write the CPU reference there", dir);
  if (strncmp(err, path, strlen(path)) != 0)
    fail_msg("got: %s", err);

  snprintf(path, sizeof path, "%s/reference.c", dir);
  write_file(path, "void rowsum(void) {}\n");
  snprintf(withslash, sizeof withslash, "%s/", dir);
  assert_int_equal(kv_task_load(withslash, &t, err, sizeof err), 0);
  assert_string_equal(t->dir, withslash);
  assert_string_equal(t->name, "rowsum");
  kv_task_free(t);

  /* Messages carry the path as given. */
  snprintf(path, sizeof path, "%s/task.json", dir);
  char *bad = mutate(ROWSUM, "params/0/dtype", "\"float\"");
  write_file(path, bad);
  free(bad);
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), -1);
  snprintf(withslash, sizeof withslash, "%s/task.json: params[0].dtype: 'float' is not a dtype",
           dir);
  if (strncmp(err, withslash, strlen(withslash)) != 0)
    fail_msg("got: %s", err);

  /* Too large: refused from its size. */
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < KV_MAX_TASK_JSON / 64 + 1; i++)
    fputs("                                                               \n", f);
  fclose(f);
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "task.json: (file): 1048640 bytes, over the limit"));

  unlink(path);
  snprintf(path, sizeof path, "%s/reference.c", dir);
  unlink(path);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rowsum_example), cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_allow_add),      cmocka_unit_test(test_bad_mutations),
      cmocka_unit_test(test_bad_scalars),    cmocka_unit_test(test_bad_documents),
      cmocka_unit_test(test_total_cap),      cmocka_unit_test(test_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
