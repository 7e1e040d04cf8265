/* The static analysis (kevo/sass.h): the parser on recorded cuobjdump -sass
 * listings (tests/sass/, made from the examples' kernels), the renderings,
 * and cuobjdump itself where the toolkit has it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "internal.h"
#include "kevo/gate.h"
#include "kevo/sass.h"
#include "kevo/util.h"

static char *fixture(const char *name) {
  const char *src = getenv("KEVO_SOURCE_DIR");
  char path[4096], err[256];
  snprintf(path, sizeof path, "%s/tests/sass/%s", src ? src : ".", name);
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(path, 16u << 20, &text, &len, err, sizeof err) < 0)
    fail_msg("%s", err);
  return text;
}

static const struct kv_sass_kernel *find(const struct kv_sass_kernel *k, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(k[i].name, name))
      return &k[i];
  fail_msg("kernel %s not in the listing", name);
  return NULL;
}

/* The good rowsum's block kernel with aligned rows loads 128 bits at a time;
 * the starter loads 32. */
static void test_rowsum(void **state) {
  (void)state;
  struct kv_sass_kernel k[8];
  char *good = fixture("rowsum-good.sass"), *starter = fixture("rowsum-starter.sass");
  int n = kv_sass_parse(good, k, 8);
  assert_int_equal(n, 3);
  assert_string_equal(k[0].name, "_Z12rowsum_blockILb0EEvPKfPfi");
  const struct kv_sass_mix *v = &find(k, n, "_Z12rowsum_blockILb1EEvPKfPfi")->mix;
  assert_int_equal(v->ldg[KV_SASS_W128], 29);
  assert_int_equal(v->ldg[KV_SASS_W32], 0);
  assert_int_equal(v->shfl, 10);
  assert_int_equal(v->bar, 1);
  assert_int_equal(v->total, 266);
  const struct kv_sass_mix *w = &find(k, n, "_Z11rowsum_warpPKfPfii")->mix;
  assert_int_equal(w->ldg[KV_SASS_W32], 29);
  assert_int_equal(w->shfl, 5);
  assert_int_equal(w->bar, 0);
  n = kv_sass_parse(starter, k, 8);
  assert_int_equal(n, 1);
  assert_string_equal(k[0].name, "_Z12rowsum_naivePKfPfii");
  assert_int_equal(k[0].mix.total, 144);
  assert_int_equal(k[0].mix.ldg[KV_SASS_W32], 29);
  assert_int_equal(k[0].mix.ldg[KV_SASS_W128], 0);
  assert_int_equal(k[0].mix.shfl + k[0].mix.hmma + k[0].mix.ldl + k[0].mix.stl, 0);
  free(good);
  free(starter);
}

/* The tiled matmul: 128-bit shared loads and FP32 FMAs; the wmma expert:
 * HMMA (TF32 tensor cores). */
static void test_matmul(void **state) {
  (void)state;
  struct kv_sass_kernel k[4];
  char *good = fixture("matmul-good.sass"), *mma = fixture("matmul-expert_mma.sass");
  assert_int_equal(kv_sass_parse(good, k, 4), 1);
  assert_int_equal(k[0].mix.lds[KV_SASS_W128], 32);
  assert_int_equal(k[0].mix.ffma, 256);
  assert_int_equal(k[0].mix.bar, 2);
  assert_int_equal(k[0].mix.hmma, 0);
  assert_int_equal(k[0].mix.total, 600);
  assert_int_equal(kv_sass_parse(mma, k, 4), 1);
  assert_string_equal(k[0].name, "_Z11matmul_tilePKfS0_Pfiii");
  assert_int_equal(k[0].mix.hmma, 24);
  assert_int_equal(k[0].mix.gmma + k[0].mix.imma, 0);
  assert_int_equal(k[0].mix.bar, 3);
  assert_int_equal(k[0].mix.total, 809);
  free(good);
  free(mma);
}

/* A local array indexed at run time: local-memory stores and loads. */
static void test_spill(void **state) {
  (void)state;
  struct kv_sass_kernel k[2];
  char *t = fixture("spill.sass");
  assert_int_equal(kv_sass_parse(t, k, 2), 1);
  assert_int_equal(k[0].mix.stl, 32);
  assert_int_equal(k[0].mix.ldl, 1);
  free(t);
}

/* Predicates, widths, what is not an instruction, HFMA2.MMA (not a tensor
 * instruction), a second architecture's listing of the same kernel, the cap. */
static void test_synthetic(void **state) {
  (void)state;
  const char *t = "\t\tFunction : a\n"
                  "        /*0000*/  @!UP0 LDG.E.128.CONSTANT R4, desc[UR4][R2.64] ;  /* "
                  "0x000 */\n"
                  "                                                  /* 0x000fe2 */\n"
                  "        /*0010*/  HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ ;\n"
                  "        /*0020*/  LDS.U.64 R2, [R3] ;\n"
                  "        /*0030*/  HFMA2.MMA R5, -RZ, RZ, 0, 0 ;\n"
                  "        /*0040*/  NOP;\n"
                  "        /*0050*/  STG.E.U16 desc[UR4][R2.64], R5 ;\n"
                  "        /*0060*/  LDG.E.LTC128B R4, desc[UR4][R2.64] ;\n"
                  ".L_x_1:\n"
                  "        /*0070*/  IMMA.16832.S8.S8 R4, R8, R12, R4 ;\n"
                  "        /*0080*/  UTCHMMA gdesc[UR4], gdesc[UR6], tmem[UR8] ;\n"
                  "        /*0090*/  ATOMG.E.ADD.F32 PT, R2, [R2], R5 ;\n"
                  "\t\tFunction : b\n"
                  "        /*0000*/  BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
                  "\t\tFunction : a\n"
                  "        /*0000*/  LDG.E.128 R4, desc[UR4][R2.64] ;\n"
                  "\t\tFunction : c\n"
                  "        /*0000*/  EXIT ;\n";
  struct kv_sass_kernel k[2];
  int n = kv_sass_parse(t, k, 2);
  assert_int_equal(n, 2); /* c is past the cap; a's second listing is skipped */
  const struct kv_sass_mix *a = &k[0].mix;
  assert_string_equal(k[0].name, "a");
  assert_int_equal(a->total, 9); /* NOP left out, the encoding line is no instruction */
  assert_int_equal(a->ldg[KV_SASS_W128], 1);
  assert_int_equal(a->ldg[KV_SASS_W32], 1); /* LTC128B is a cache hint, not a width */
  assert_int_equal(a->lds[KV_SASS_W64], 1);
  assert_int_equal(a->stg[KV_SASS_W32], 1);
  assert_int_equal(a->gmma, 2);
  assert_int_equal(a->imma, 1);
  assert_int_equal(a->hmma, 0);
  assert_int_equal(a->atom, 1);
  assert_string_equal(k[1].name, "b");
  assert_int_equal(k[1].mix.bar, 1);
  assert_int_equal(kv_sass_parse("", k, 2), 0);
  assert_int_equal(kv_sass_parse("Function : \n/*zz*/ LDG\n", k, 2), 0);
}

static void test_render(void **state) {
  (void)state;
  struct kv_sass_kernel k[4];
  char *good = fixture("rowsum-good.sass");
  kv_sass_parse(good, k, 4);
  char line[512];
  kv_sass_mix_line(&k[1].mix, line, sizeof line);
  assert_non_null(strstr(line, "266 instr;"));
  assert_non_null(strstr(line, "global ld 128b:29"));
  assert_non_null(strstr(line, "shfl 10"));
  assert_non_null(strstr(line, "tensor none"));
  assert_null(strstr(line, "64b:")); /* zero widths are left out */
  /* JSON both ways. */
  json_t *j = kv_sass_mix_json(&k[1].mix);
  assert_int_equal(json_integer_value(json_object_get(j, "ldg_128")), 29);
  assert_int_equal(json_integer_value(json_object_get(j, "instructions")), 266);
  struct kv_sass_mix back;
  assert_int_equal(kv_sass_mix_from_json(j, &back), 0);
  assert_memory_equal(&back, &k[1].mix, sizeof back);
  json_decref(j);
  assert_int_equal(kv_sass_mix_from_json(NULL, &back), -1);
  /* The stripped listing: no encodings, within its cap, cut at a line. */
  char *s = kv_sass_strip(good, 4096);
  assert_true(strlen(s) <= 4096 + 64);
  assert_null(strstr(s, "/* 0x"));
  assert_non_null(strstr(s, "Function : _Z12rowsum_blockILb0EEvPKfPfi"));
  assert_non_null(strstr(s, "[... cut at 4096 bytes]"));
  free(s);
  s = kv_sass_strip(good, 1u << 24);
  assert_null(strstr(s, "[... cut"));
  assert_non_null(strstr(s, "LDG.E.128.CONSTANT"));
  free(s);
  free(good);
}

/* The stripped listing (what the cache keeps) parses to the same mixes. */
static void test_strip_same_mix(void **state) {
  (void)state;
  static const char *const names[] = {"rowsum-good.sass", "matmul-good.sass",
                                      "matmul-expert_mma.sass", "spill.sass"};
  struct kv_sass_kernel a[8], b[8];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char *t = fixture(names[i]);
    char *s = kv_sass_strip(t, KV_SASS_TEXT_CAP);
    int n = kv_sass_parse(t, a, 8);
    assert_true(n > 0);
    assert_int_equal(kv_sass_parse(s, b, 8), n);
    assert_memory_equal(a, b, (size_t)n * sizeof a[0]);
    assert_true(strlen(s) < strlen(t) / 2);
    free(s);
    free(t);
  }
}

/* cuobjdump itself: a missing object is "not available: why"; with nvcc and
 * cuobjdump present, a compiled fixture kernel shows its local stores. */
static void test_dump(void **state) {
  (void)state;
  char tmp[] = "/tmp/kevo-sass-XXXXXX";
  assert_non_null(mkdtemp(tmp));
  char *text = NULL, note[512], cuobjdump[4096];
  int trunc = 0;
  struct kv_gate_opts o; /* the test environment's kevo-sandbox and nvcc */
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.nvcc_path = getenv("KEVO_NVCC");
  assert_int_equal(kv_sass_dump(&o, "/nonexistent/x.o", tmp, 10, &text, &trunc, note, sizeof note),
                   -1);
  assert_null(text);
  assert_true(!strncmp(note, "not available: ", 15));
  const char *nv = kv_nvcc_path(&o);
  kv_cuobjdump_path(&o, cuobjdump, sizeof cuobjdump);
  if (!cuobjdump[0] || !nv[0]) {
    kv_rmtree(tmp);
    skip();
  }
  char src[4096], obj[4096], err[256];
  snprintf(src, sizeof src, "%s/tests/sass/spill.cu",
           getenv("KEVO_SOURCE_DIR") ? getenv("KEVO_SOURCE_DIR") : ".");
  snprintf(obj, sizeof obj, "%s/spill.o", tmp);
  char *argv[] = {(char *)nv, "-c", "-O3", "-arch=sm_90", src, "-o", obj, NULL};
  struct kv_buf log;
  kv_buf_init(&log, 1 << 16);
  struct kv_proc_result r;
  assert_int_equal(kv_run(argv, NULL, tmp, 120, NULL, NULL, &log, &r, err, sizeof err), 0);
  assert_true(r.exited && r.status == 0);
  kv_buf_release(&log);
  assert_int_equal(kv_sass_dump(&o, obj, tmp, 30, &text, &trunc, note, sizeof note), 0);
  assert_int_equal(trunc, 0);
  struct kv_sass_kernel k[2];
  assert_int_equal(kv_sass_parse(text, k, 2), 1);
  assert_string_equal(k[0].name, "_Z11spill_localPKfPfPKii");
  assert_true(k[0].mix.stl > 0);
  free(text);
  kv_rmtree(tmp);
}

/* The gate's JSON: a "static" object per kernel, and the analysis's cost,
 * note and listing at the top. */
static void test_result_json(void **state) {
  (void)state;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  snprintf(r->surface, sizeof r->surface, "cuda");
  r->nkernels = 2;
  snprintf(r->kernels[0].name, sizeof r->kernels[0].name, "k0");
  r->kernels[0].has_sass = 1;
  r->kernels[0].sass.total = 266;
  r->kernels[0].sass.ldg[KV_SASS_W128] = 29;
  snprintf(r->kernels[1].name, sizeof r->kernels[1].name, "k1");
  r->static_done = 1;
  r->static_s = 0.25;
  r->sass = strdup("\t\tFunction : k0\n");
  char *text = kv_gate_result_json(r);
  /* Read back (a gate server's verdict, a resumed run): the same mixes. */
  struct kv_gate_result *b = calloc(1, sizeof *b);
  char err[256];
  assert_int_equal(kv_gate_result_from_json(text, b, err, sizeof err), 0);
  assert_int_equal(b->nkernels, 2);
  assert_true(b->kernels[0].has_sass);
  assert_memory_equal(&b->kernels[0].sass, &r->kernels[0].sass, sizeof b->kernels[0].sass);
  assert_false(b->kernels[1].has_sass);
  assert_true(b->static_done);
  assert_true(b->static_s == 0.25);
  assert_string_equal(b->sass, r->sass);
  kv_gate_result_release(b);
  free(b);
  json_t *j = json_loads(text, 0, NULL);
  assert_non_null(j);
  json_t *ks = json_object_get(json_object_get(j, "compile"), "kernels");
  json_t *m = json_object_get(json_array_get(ks, 0), "static");
  assert_int_equal(json_integer_value(json_object_get(m, "ldg_128")), 29);
  assert_int_equal(json_integer_value(json_object_get(m, "instructions")), 266);
  assert_null(json_object_get(json_array_get(ks, 1), "static")); /* no mix: no object */
  json_t *st = json_object_get(j, "static");
  assert_true(json_is_true(json_object_get(st, "done")));
  assert_true(json_real_value(json_object_get(st, "seconds")) == 0.25);
  assert_string_equal(json_string_value(json_object_get(st, "sass")), "\t\tFunction : k0\n");
  json_decref(j);
  free(text);
  /* Not available: the note says why, no listing. */
  kv_gate_result_release(r);
  r->static_done = 0;
  r->kernels[0].has_sass = 0;
  snprintf(r->static_note, sizeof r->static_note, "not available: cuobjdump not found");
  text = kv_gate_result_json(r);
  j = json_loads(text, 0, NULL);
  st = json_object_get(j, "static");
  assert_true(json_is_false(json_object_get(st, "done")));
  assert_string_equal(json_string_value(json_object_get(st, "note")),
                      "not available: cuobjdump not found");
  assert_string_equal(json_string_value(json_object_get(st, "sass")), "");
  json_decref(j);
  free(text);
  /* A cpu result has none. */
  r->static_note[0] = 0;
  text = kv_gate_result_json(r);
  j = json_loads(text, 0, NULL);
  assert_null(json_object_get(j, "static"));
  json_decref(j);
  free(text);
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rowsum),      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_spill),       cmocka_unit_test(test_synthetic),
      cmocka_unit_test(test_render),      cmocka_unit_test(test_dump),
      cmocka_unit_test(test_result_json), cmocka_unit_test(test_strip_same_mix),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
