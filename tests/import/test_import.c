/* kevo import without torch: task.json from recorded helper replies, every
 * refusal and malformed reply, and the child process (a fake Python that
 * replies, hangs or dies by SIGSEGV) with nothing half-written left behind. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "kevo/import.h"
#include "kevo/task.h"
#include "kevo/util.h"

#ifndef KEVO_SOURCE_DIR
#define KEVO_SOURCE_DIR "."
#endif

static char *reply_file(const char *name, size_t *len) {
  char p[1024], err[256];
  snprintf(p, sizeof p, "%s/tests/import/replies/%s", KEVO_SOURCE_DIR, name);
  char *s = NULL;
  assert_int_equal(kv_read_file(p, 1 << 22, &s, len, err, sizeof err), 0);
  return s;
}

static json_t *param(json_t *task, const char *name) {
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(task, "params"), i,
                     p) if (!strcmp(json_string_value(json_object_get(p, "name")), name)) return p;
  return NULL;
}

static void assert_shape(json_t *task, const char *name, const char *const *dims, size_t n) {
  json_t *p = param(task, name);
  assert_non_null(p);
  json_t *sh = json_object_get(p, "shape");
  assert_int_equal(json_array_size(sh), n);
  for (size_t d = 0; d < n; d++)
    assert_string_equal(json_string_value(json_array_get(sh, d)), dims[d]);
}

/* A recorded reply of KernelBench level 2 problem 1 (conv, ReLU, bias). */
static void test_conv_reply(void **state) {
  (void)state;
  size_t len;
  char *out = reply_file("conv_relu_bias.txt", &len);
  char *json = NULL, cause[32], err[1024];
  assert_int_equal(kv_import_task_json(out, len, "1_Conv2D_ReLU_BiasAdd", "x.py", &json, cause,
                                       sizeof cause, err, sizeof err),
                   0);
  json_t *t = json_loads(json, 0, NULL);
  assert_non_null(t);
  const char *x[] = {"batch_size", "in_channels", "height", "width"};
  assert_shape(t, "x", x, 4);
  const char *w[] = {"out_channels", "in_channels", "kernel_size", "kernel_size"};
  assert_shape(t, "conv_weight", w, 4);
  const char *o[] = {"batch_size", "out_channels", "height-kernel_size+1", "width-kernel_size+1"};
  assert_shape(t, "out", o, 4);
  /* Order: inputs, parameters (named_parameters order), outputs, sizes. */
  json_t *ps = json_object_get(t, "params");
  assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 0), "name")), "x");
  assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 1), "name")), "bias");
  assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 4), "role")), "out");
  /* Linear/Conv default: uniform(+-1/sqrt(fan_in)), fan_in = 64*3*3. */
  json_t *init = json_object_get(param(t, "conv_weight"), "init");
  assert_string_equal(json_string_value(json_object_get(init, "dist")), "uniform");
  assert_true(fabs(json_real_value(json_object_get(init, "hi")) - 1 / 24.0) < 1e-6);
  /* Bench: its own sizes; checks small. */
  json_t *b = json_array_get(json_object_get(t, "bench"), 0);
  assert_int_equal(json_integer_value(json_object_get(b, "batch_size")), 128);
  json_t *c;
  size_t i;
  json_array_foreach(json_object_get(t, "check"), i, c)
      assert_true(json_integer_value(json_object_get(c, "height")) <= 16);
  assert_true(json_real_value(json_object_get(json_object_get(t, "tolerance"), "atol")) == 1e-4);
  assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "fan_in"));
  /* The same parser every task goes through accepts it. */
  struct kv_task *kt = NULL;
  assert_int_equal(kv_task_parse(json, strlen(json), "task.json", &kt, err, sizeof err), 0);
  kv_task_free(kt);
  json_decref(t);
  free(json);
  free(out);
}

/* Two constants equal in every run (a depthwise conv: out_channels =
 * in_channels): the fit names one of them in the shapes, and the other, which
 * the check runs scaled too, must still be a size param, or the reference
 * would run a check size with it at its bench value (KernelBench level 1
 * problem 84 did). */
static void test_tied_constant(void **state) {
  (void)state;
  const char *reply =
      "KEVO_IMPORT_JSON {\"ok\": true, \"torch\": \"2\", \"runs\": [\"bench\", \"check\", "
      "\"check\"], \"bench_device\": \"meta\", \"constants\": [{\"name\": \"in_channels\", "
      "\"values\": [128, 8, 16]}, {\"name\": \"out_channels\", \"values\": [128, 8, 16]}], "
      "\"tensors\": [{\"kind\": \"input\", \"name\": \"x\", \"dtype\": \"f32\", "
      "\"torch_dtype\": \"float32\", \"shapes\": [[4, 128], [4, 8], [4, 16]], \"init\": "
      "{\"dist\": \"uniform\", \"lo\": 0.0, \"hi\": 1.0}}, {\"kind\": \"output\", "
      "\"name\": \"out\", \"dtype\": \"f32\", \"torch_dtype\": \"float32\", \"shapes\": "
      "[[4, 128], [4, 8], [4, 16]]}], \"notes\": [], \"seconds\": 1}\n";
  char *json = NULL, cause[32], err[1024];
  assert_int_equal(kv_import_task_json(reply, strlen(reply), "tied", "tied.py", &json, cause,
                                       sizeof cause, err, sizeof err),
                   0);
  json_t *t = json_loads(json, 0, NULL);
  assert_non_null(t);
  json_t *oc = param(t, "out_channels");
  assert_non_null(oc); /* without the fix: only in_channels is a size */
  assert_string_equal(json_string_value(json_object_get(oc, "role")), "size");
  json_t *c0 = json_array_get(json_object_get(t, "check"), 0);
  assert_int_equal(json_integer_value(json_object_get(c0, "out_channels")),
                   json_integer_value(json_object_get(c0, "in_channels")));
  json_decref(t);
  free(json);
}

/* A network with batch norm buffers and literal kernel sizes. */
static void test_convnet_reply(void **state) {
  (void)state;
  size_t len;
  char *out = reply_file("convnet.txt", &len);
  char *json = NULL, cause[32], err[1024];
  assert_int_equal(kv_import_task_json(out, len, "3_Small_ConvNet", "x.py", &json, cause,
                                       sizeof cause, err, sizeof err),
                   0);
  json_t *t = json_loads(json, 0, NULL);
  const char *w[] = {"hidden", "in_channels", "3", "3"};
  assert_shape(t, "conv1_weight", w, 4);
  const char *w2[] = {"hidden*2", "hidden", "3", "3"};
  assert_shape(t, "conv2_weight", w2, 4);
  /* A norm's ones become a uniform around one. */
  json_t *init = json_object_get(param(t, "bn1_weight"), "init");
  assert_true(json_real_value(json_object_get(init, "lo")) < 1);
  assert_true(json_real_value(json_object_get(init, "hi")) > 1);
  assert_non_null(param(t, "bn1_running_var"));
  json_decref(t);
  free(json);
  free(out);
}

static int import_text(const char *text, char *cause, char *err, size_t errlen) {
  char *json = NULL;
  int rc = kv_import_task_json(text, strlen(text), "t", "t.py", &json, cause, 32, err, errlen);
  if (rc == 0) {
    assert_non_null(json);
    free(json);
  } else {
    assert_null(json);
    assert_true(err[0] != 0);
    assert_null(strchr(err, '\n'));
  }
  return rc;
}

#define SIMPLE(shape0, shape1, dtype)                                                              \
  "noise\nKEVO_IMPORT_JSON {\"ok\": true, \"runs\": [\"bench\", \"check\"], \"constants\": "       \
  "[{\"name\": \"n\", \"values\": [4096, 8]}], \"tensors\": [{\"kind\": \"input\", \"name\": "     \
  "\"x\", \"dtype\": \"" dtype "\", \"shapes\": [" shape0 ", " shape1 "], \"init\": {\"dist\": "   \
  "\"normal\", \"mean\": 0, \"std\": 1}}, {\"kind\": \"output\", \"name\": \"out\", \"dtype\": "   \
  "\"" dtype "\", \"shapes\": [" shape0 ", " shape1 "]}]}\n"

static void test_refusals(void **state) {
  (void)state;
  char cause[32], err[1024];
  assert_int_equal(import_text(SIMPLE("[4096]", "[8]", "f32"), cause, err, sizeof err), 0);
  /* The helper's own refusal passes through with its cause. */
  assert_int_equal(import_text("KEVO_IMPORT_JSON {\"ok\": false, \"cause\": \"no_model\", "
                               "\"detail\": \"no class Model at the top level\"}",
                               cause, err, sizeof err),
                   -1);
  assert_string_equal(cause, "no_model");
  assert_non_null(strstr(err, "no class Model"));
  /* No reply, not JSON, wrong types. */
  assert_int_equal(import_text("Traceback ...\nSegmentation fault\n", cause, err, sizeof err), -1);
  assert_string_equal(cause, "helper");
  assert_int_equal(import_text("KEVO_IMPORT_JSON {\"ok\": tru", cause, err, sizeof err), -1);
  assert_string_equal(cause, "helper");
  assert_int_equal(import_text("KEVO_IMPORT_JSON [1]", cause, err, sizeof err), -1);
  assert_int_equal(
      import_text("KEVO_IMPORT_JSON {\"ok\": true, \"runs\": [\"check\"]}", cause, err, sizeof err),
      -1);
  assert_string_equal(cause, "helper");
  /* A dtype kevo does not have. */
  assert_int_equal(import_text(SIMPLE("[4]", "[2]", "c64"), cause, err, sizeof err), -1);
  assert_string_equal(cause, "dtype");
  /* Half precision: looser tolerance. */
  char *json = NULL;
  const char *h = SIMPLE("[4096]", "[8]", "f16");
  assert_int_equal(
      kv_import_task_json(h, strlen(h), "t", "t.py", &json, cause, sizeof cause, err, sizeof err),
      0);
  assert_non_null(strstr(json, "0.01"));
  free(json);
  /* The byte caps are half the device memory: 16 GiB of input and 16 of
   * output fit the 80 GiB kevo assumes (an H100: the 4 GiB-per-buffer cap of
   * old refused them), not a 32 GiB device's; 2 TiB fits none. */
  kv_task_set_device_memory(0);
  assert_int_equal(import_text(SIMPLE("[4096, 1048576]", "[8, 8]", "f32"), cause, err, sizeof err),
                   0);
  kv_task_set_device_memory((int64_t)32 << 30);
  assert_int_equal(import_text(SIMPLE("[4096, 1048576]", "[8, 8]", "f32"), cause, err, sizeof err),
                   -1);
  assert_string_equal(cause, "kevo_byte_caps");
  assert_non_null(strstr(err, "sizes"));
  assert_non_null(strstr(err, "half the 32 GiB of device memory kevo assumes (--device-memory)"));
  assert_non_null(strstr(err, "KEVO_DEVICE_MEMORY_GIB"));
  kv_task_set_device_memory(0);
  assert_int_equal(
      import_text(SIMPLE("[4096, 536870912]", "[8, 8]", "f32"), cause, err, sizeof err), -1);
  assert_string_equal(cause, "kevo_byte_caps");
  assert_non_null(strstr(err, "80 GiB"));
  /* A dim that is no expression of the constants: checks fall back to the bench size. */
  json = NULL;
  const char *odd = SIMPLE("[4096, 7]", "[8, 5]", "f32");
  assert_int_equal(kv_import_task_json(odd, strlen(odd), "t", "t.py", &json, cause, sizeof cause,
                                       err, sizeof err),
                   0);
  assert_non_null(strstr(json, "the same as the bench size"));
  free(json);
}

/* A reply with n weights of 4 * dim elements (the size constant dim: 64 at
 * the bench size, 8 at the check size) with init i % distinct, a scalar and
 * an output. */
static char *weights_reply(int n, int distinct) {
  struct kv_buf b;
  kv_buf_init(&b, 1 << 20);
  kv_buf_appendf(&b, "KEVO_IMPORT_JSON {\"ok\": true, \"runs\": [\"bench\", \"check\"], "
                     "\"constants\": [{\"name\": \"dim\", \"values\": [64, 8]}], \"tensors\": ["
                     "{\"kind\": \"input\", \"name\": \"x\", \"dtype\": \"f32\", \"shapes\": "
                     "[[64], [8]], \"init\": {\"dist\": \"uniform\", \"lo\": 0, \"hi\": 1}},"
                     "{\"kind\": \"scalar\", \"name\": \"alpha\", \"dtype\": \"f32\", \"shapes\": "
                     "[[], []], \"value\": 0.25},");
  for (int i = 0; i < n; i++)
    kv_buf_appendf(&b,
                   "{\"kind\": \"parameter\", \"name\": \"l.%d.weight\", \"dtype\": \"f32\", "
                   "\"shapes\": [[4, 64], [4, 8]], \"init\": {\"dist\": \"uniform\", \"lo\": %d, "
                   "\"hi\": %d}},",
                   i, i % distinct, i % distinct + 1);
  kv_buf_appendf(&b, "{\"kind\": \"output\", \"name\": \"out\", \"dtype\": \"f32\", \"shapes\": "
                     "[[64], [8]]}]}");
  return b.data;
}

/* A network with more weights than an entry's 32 params becomes a task: its
 * weights are packed, one buffer per init, the prototype lists each tensor's
 * offset and shape, and the task's own rules accept the table (its tensors
 * fill the buffer exactly at every size). Only inits that cannot share a
 * buffer (40 distinct asymmetric ones) leave it over the cap. */
static void test_packed_weights(void **state) {
  (void)state;
  char *reply = weights_reply(40, 2), *json = NULL, cause[32], err[1024];
  assert_int_equal(kv_import_task_json(reply, strlen(reply), "net", "net.py", &json, cause,
                                       sizeof cause, err, sizeof err),
                   0);
  struct kv_task *t;
  assert_int_equal(kv_task_parse(json, strlen(json), "task.json", &t, err, sizeof err), 0);
  /* x, alpha, weights_0, weights_1, out, dim */
  assert_int_equal(t->nparams, 6);
  assert_string_equal(t->params[1].name, "alpha");
  assert_int_equal(t->params[1].role, KV_ROLE_SCALAR);
  assert_true(t->params[1].has_value && t->params[1].value == 0.25);
  assert_string_equal(t->params[2].name, "weights_0");
  assert_int_equal(t->params[2].npack, 20);
  assert_string_equal(t->params[2].pack[1].name, "l.2.weight");
  assert_string_equal(t->params[3].shape[0], "80*dim");
  int64_t off, n;
  assert_int_equal(kv_pack_elems(t, 2, 19, &t->check[0], &off, &n, err, sizeof err), 0);
  assert_int_equal(off, 19 * 4 * 8);
  assert_int_equal(n, 32);
  char *proto = malloc(1 << 16);
  assert_true(kv_task_prototype(t, KV_LANG_C, proto, 1 << 16) > 0);
  assert_non_null(strstr(proto, "/*   76*dim  l.39.weight [4][dim] */"));
  assert_non_null(strstr(proto, "const float *weights_1"));
  assert_non_null(strstr(proto, "float alpha"));
  free(proto);
  kv_task_free(t);
  /* A table that does not add up is refused by the task's own rules. */
  char *bad = strdup(json), *at = strstr(bad, "\"80*dim\"");
  assert_non_null(at);
  memcpy(at, "\"81*dim\"", 8);
  assert_int_equal(kv_task_parse(bad, strlen(bad), "task.json", &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "make its shape their sum"));
  free(bad);
  free(json);
  free(reply);
  /* A symmetric bound rounds to a power of two where that is needed to fit. */
  reply = weights_reply(40, 40);
  assert_int_equal(import_text(reply, cause, err, sizeof err), -1);
  assert_string_equal(cause, "kevo_param_cap");
  assert_non_null(strstr(err, "params"));
  free(reply);
}

/* The device memory from nvidia-smi: the smallest GPU's, in bytes; none
 * without nvidia-smi or with a reply that is no number (a fake nvidia-smi
 * first in PATH). */
static void test_gpu_memory(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-test-smi-XXXXXX", path[256], *old = getenv("PATH");
  char *saved = old ? strdup(old) : NULL, err[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/nvidia-smi", dir);
  const char *replies[] = {"#!/bin/sh\nprintf '143771\\n81559\\n'\n",
                           "#!/bin/sh\necho 'No devices were found'; exit 6\n"};
  int64_t bytes = 0;
  for (int k = 0; k < 2; k++) {
    assert_int_equal(kv_write_file(path, replies[k], strlen(replies[k]), err, sizeof err), 0);
    assert_int_equal(chmod(path, 0755), 0);
    char pv[4096];
    snprintf(pv, sizeof pv, "%s:%s", dir, saved ? saved : "/usr/bin:/bin");
    setenv("PATH", pv, 1);
    int rc = kv_import_gpu_memory(&bytes);
    if (k == 0) {
      assert_int_equal(rc, 0);
      assert_int_equal(bytes, (int64_t)81559 << 20);
    } else
      assert_int_equal(rc, -1);
  }
  if (saved)
    setenv("PATH", saved, 1);
  free(saved);
  unlink(path);
  rmdir(dir);
}

/* --allow: only the vendor libraries kevo knows, each once. */
static void test_allow(void **state) {
  (void)state;
  struct kv_import_opts o;
  char err[512];
  kv_import_opts_default(&o);
  assert_int_equal(kv_import_parse_allow(&o, "cublas,cudnn", "--allow", err, sizeof err), 0);
  assert_int_equal(o.nallow, 2);
  assert_string_equal(o.allow[0], "cublas");
  assert_string_equal(o.allow[1], "cudnn");
  assert_int_equal(kv_import_parse_allow(&o, "cublaslt", "--allow", err, sizeof err), 0);
  assert_int_equal(o.nallow, 1);
  assert_int_equal(kv_import_parse_allow(&o, "cublas,libc", "--allow", err, sizeof err), -1);
  assert_non_null(strstr(err, "--allow: 'libc' is not a library"));
  assert_non_null(strstr(err, "cublas, cudnn, cublaslt"));
  assert_int_equal(kv_import_parse_allow(&o, "cublas,", "--allow", err, sizeof err), -1);
  assert_int_equal(kv_import_parse_allow(&o, "cudnn,cudnn", "--allow", err, sizeof err), -1);
  assert_non_null(strstr(err, "twice"));
  assert_int_equal(kv_import_parse_allow(&o, "cuBLAS", "--allow", err, sizeof err), -1);
}

static void test_task_name(void **state) {
  (void)state;
  char n[64];
  kv_import_task_name("/a/b/19_ReLU.py", n, sizeof n);
  assert_string_equal(n, "19_ReLU");
  kv_import_task_name("we ird$name.py", n, sizeof n);
  assert_string_equal(n, "we_ird_name");
}

/* The child process: a fake Python that replies, hangs or segfaults. */
static char dir[1024], fake[1100];

static void write_text(const char *path, const char *text) {
  char err[256];
  assert_int_equal(kv_write_file(path, text, strlen(text), err, sizeof err), 0);
}

static int count_entries(const char *d) {
  DIR *dd = opendir(d);
  if (!dd)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dd)))
    n += e->d_name[0] != '.' || (strncmp(e->d_name, ".kevo-import", 12) == 0);
  closedir(dd);
  return n;
}

static int setup_dir(void **state) {
  (void)state;
  char err[256];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-test-import-", dir, sizeof dir, err, sizeof err), 0);
  snprintf(fake, sizeof fake, "%s/fake-python", dir);
  write_text(fake, "#!/bin/sh\n# argv: -B HELPER MODULE ...\ncase \"$3\" in\n"
                   "  *hang*) exec sleep 60 ;;\n  *segv*) kill -SEGV $$ ;;\n"
                   "  *) cat \"${3%.py}.reply\" ;;\nesac\n");
  chmod(fake, 0755);
  return 0;
}

static int teardown_dir(void **state) {
  (void)state;
  kv_rmtree(dir);
  return 0;
}

static void test_child(void **state) {
  (void)state;
  struct kv_import_opts o;
  kv_import_opts_default(&o);
  o.python = fake;
  o.helper = fake; /* never read: the fake Python ignores it */
  o.deadline_s = 2;
  char p[1200], outdir[1200], err[1024];
  snprintf(outdir, sizeof outdir, "%s/out", dir);
  struct kv_import_result r;

  snprintf(p, sizeof p, "%s/good.py", dir);
  write_text(p, "class Model: pass\n");
  snprintf(p, sizeof p, "%s/good.reply", dir);
  write_text(p, SIMPLE("[4096]", "[8]", "f32"));
  snprintf(p, sizeof p, "%s/good.py", dir);
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_true(r.ok);
  char f[1400];
  snprintf(f, sizeof f, "%s/good/reference.py", outdir);
  size_t len;
  char *s = NULL;
  assert_int_equal(kv_read_file(f, 1024, &s, &len, err, sizeof err), 0);
  assert_string_equal(s, "class Model: pass\n"); /* verbatim */
  free(s);
  snprintf(f, sizeof f, "%s/good/README.md", outdir);
  assert_true(kv_path_exists(f));
  /* It shows what a candidate defines, on both surfaces. */
  assert_int_equal(kv_read_file(f, 1 << 20, &s, &len, err, sizeof err), 0);
  assert_non_null(strstr(s, "## What a candidate defines"));
  assert_non_null(strstr(s, "extern \"C\" void "));
  assert_non_null(strstr(s, "cudaStream_t stream);"));
  free(s);
  /* The task loads: its reference is reference.py (the torch worker's). */
  snprintf(f, sizeof f, "%s/good", outdir);
  struct kv_task *t = NULL;
  assert_int_equal(kv_task_load(f, &t, err, sizeof err), 0);
  assert_string_equal(t->dir, f);
  kv_task_free(t);
  /* Again: it exists; with force it is replaced. */
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_false(r.ok);
  assert_string_equal(r.cause, "exists");
  o.force = 1;
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_true(r.ok);

  /* Hangs: killed at the deadline. Segfaults: named. Neither leaves anything. */
  snprintf(p, sizeof p, "%s/hang.py", dir);
  write_text(p, "x = 1\n");
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_false(r.ok);
  assert_string_equal(r.cause, "timeout");
  assert_non_null(strstr(r.detail, "hang.py"));
  assert_true(r.seconds < 10);
  snprintf(p, sizeof p, "%s/segv.py", dir);
  write_text(p, "x = 1\n");
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_false(r.ok);
  assert_string_equal(r.cause, "crash");
  assert_non_null(strstr(r.detail, "SEGV"));
  /* A refusal from the helper. */
  snprintf(p, sizeof p, "%s/nomodel.reply", dir);
  write_text(p, "KEVO_IMPORT_JSON {\"ok\": false, \"cause\": \"no_model\", \"detail\": \"no class "
                "Model\"}\n");
  snprintf(p, sizeof p, "%s/nomodel.py", dir);
  write_text(p, "x = 1\n");
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_string_equal(r.cause, "no_model");
  assert_non_null(strstr(r.detail, "nomodel.py"));
  /* Only the one imported task, no temporary directory. */
  assert_int_equal(count_entries(outdir), 1);
  /* A missing file. */
  snprintf(p, sizeof p, "%s/absent.py", dir);
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), 0);
  assert_string_equal(r.cause, "read");
  /* No such Python: kevo itself cannot run it. */
  o.python = "/nonexistent/python3";
  snprintf(p, sizeof p, "%s/good.py", dir);
  assert_int_equal(kv_import_module(&o, p, outdir, &r, err, sizeof err), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_reply),
      cmocka_unit_test(test_tied_constant),
      cmocka_unit_test(test_convnet_reply),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_packed_weights),
      cmocka_unit_test(test_allow),
      cmocka_unit_test(test_gpu_memory),
      cmocka_unit_test(test_task_name),
      cmocka_unit_test_setup_teardown(test_child, setup_dir, teardown_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
