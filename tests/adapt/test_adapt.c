/* The pure parts of the adaptation stage: what a rule forbids and whether a
 * source does it, noise, the dedup pass (word-set merges, the judge through
 * the loopback stand-in), merges that keep provenance, export and import as
 * JSON (round trip, idempotence, version 1 files, bad files), the migration
 * of a schema 5 store, and kevo synthesize's reading of replies, names,
 * operator picks and graph keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/adapt.h"
#include "kevo/llm.h"
#include "kevo/rules.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "standin.h"

static char g_root[256];
static int g_seq;

static struct kv_store *fresh_store(char *path, size_t cap) {
  snprintf(path, cap, "%s/s%d.db", g_root, ++g_seq);
  struct kv_store *st = NULL;
  char err[1024];
  if (kv_store_open(path, &st, err, sizeof err) != 0)
    fail_msg("kv_store_open: %s", err);
  return st;
}

static void raw(const char *path, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
    fail_msg("%s: %s", sql, msg ? msg : "?");
  sqlite3_close(db);
}

static const struct kv_rule_meta *rule_named(const struct kv_rule_meta *r, int n, const char *t) {
  for (int i = 0; i < n; i++)
    if (!strcmp(r[i].text, t))
      return &r[i];
  return NULL;
}

/* ---- what a rule forbids ------------------------------------------------------ */

static void test_subject(void **state) {
  (void)state;
  int k;
  char x[256];
  assert_int_equal(kv_rules_subject("You cannot call fast_sum: no library the kernel is linked "
                                    "with defines it; write it yourself.",
                                    &k, x, sizeof x),
                   0);
  assert_int_equal(k, 'c');
  assert_string_equal(x, "fast_sum");
  assert_int_equal(kv_rules_subject("You cannot include immintrin.h: that header is not "
                                    "available.",
                                    &k, x, sizeof x),
                   0);
  assert_int_equal(k, 'i');
  assert_string_equal(x, "immintrin.h");
  assert_int_equal(kv_rules_subject("Do not use `__shfl_sync` here.", &k, x, sizeof x), 0);
  assert_int_equal(k, 'u');
  assert_string_equal(x, "__shfl_sync");
  assert_int_equal(kv_rules_subject("You cannot call tl.float32() in a kernel.", &k, x, sizeof x),
                   0);
  assert_string_equal(x, "tl.float32");
  assert_int_equal(kv_rules_subject("Never call malloc() in the kernel.", &k, x, sizeof x), 0);
  assert_string_equal(x, "malloc");
  /* Conditional rules, ordinary words, and rules that name nothing. */
  assert_int_equal(kv_rules_subject("You cannot call fast_sum without including the header that "
                                    "declares it.",
                                    &k, x, sizeof x),
                   -1);
  assert_int_equal(
      kv_rules_subject("You cannot use more than 48 KB of shared memory.", &k, x, sizeof x), -1);
  assert_int_equal(
      kv_rules_subject("You cannot use shared memory for the output.", &k, x, sizeof x), -1);
  assert_int_equal(kv_rules_subject("You cannot call __syncthreads() inside a divergent branch "
                                    "unless every thread reaches it.",
                                    &k, x, sizeof x),
                   -1);
  assert_int_equal(kv_rules_subject("You cannot write to y before reading x.", &k, x, sizeof x),
                   -1);
  assert_int_equal(kv_rules_subject("You cannot change the signature of rowsum.", &k, x, sizeof x),
                   -1);
}

static void test_contradicts(void **state) {
  (void)state;
  char why[300];
  const char *call = "You cannot call fast_sum: no library the kernel is linked with defines it.";
  const char *calls = "void f(float *y) {\n  y[0] = fast_sum(y, 4);\n}\n";
  const char *defines = "static float fast_sum(const float *x, int n) {\n  return x[0] * n;\n}\n"
                        "void f(float *y) { y[0] = fast_sum(y, 4); }\n";
  const char *commented = "void f(float *y) {\n  // fast_sum(y, 4) would be nicer\n"
                          "  const char *s = \"fast_sum(\";\n  y[0] = s[0];\n}\n";
  const char *member = "void f(struct m *o, float *y) { y[0] = o->fast_sum(y); }\n";
  assert_int_equal(kv_rules_contradicts(call, calls, why, sizeof why), 1);
  assert_non_null(strstr(why, "calls fast_sum (line 2)"));
  assert_int_equal(kv_rules_contradicts(call, defines, why, sizeof why), 0);
  assert_int_equal(kv_rules_contradicts(call, commented, why, sizeof why), 0);
  assert_int_equal(kv_rules_contradicts(call, member, why, sizeof why), 0);
  /* A prototype alone is not a definition. */
  assert_int_equal(
      kv_rules_contradicts(call,
                           "float fast_sum(const float *, int);\nvoid f(float *y) { y[0] = "
                           "fast_sum(y, 2); }\n",
                           why, sizeof why),
      1);
  const char *inc = "You cannot include immintrin.h: that header is not available.";
  assert_int_equal(
      kv_rules_contradicts(inc, "#include <immintrin.h>\nvoid f(void) {}\n", why, sizeof why), 1);
  assert_non_null(strstr(why, "includes immintrin.h (line 1)"));
  assert_int_equal(kv_rules_contradicts(inc, "#  include \"x86/immintrin.h\"\n", why, sizeof why),
                   1);
  assert_int_equal(kv_rules_contradicts(inc,
                                        "// #include <immintrin.h>\n#include <myimmintrin.h>\n",
                                        why, sizeof why),
                   0);
  const char *use = "You cannot use __builtin_expect in a kernel.";
  assert_int_equal(kv_rules_contradicts(use, "int f(int c) { return __builtin_expect(c, 0); }\n",
                                        why, sizeof why),
                   1);
  assert_int_equal(kv_rules_contradicts(use, "int f(int c) { return my__builtin_expect2(c); }\n",
                                        why, sizeof why),
                   0);
  /* A rule that names no construct is never contradicted. */
  assert_int_equal(kv_rules_contradicts("You cannot write to y before reading x.",
                                        "void f(float *y) { y[0] = 1; }", why, sizeof why),
                   0);
}

static void test_noisy(void **state) {
  (void)state;
  char why[512];
  const char *entries[] = {"rowsum", "op_3_gelu"};
  assert_int_equal(
      kv_rules_noisy("You cannot write to /tmp: permission denied.", NULL, 0, why, sizeof why), 1);
  assert_non_null(strstr(why, "environment"));
  assert_int_equal(kv_rules_noisy("You cannot include /home/ci/build/x.h: that header is not "
                                  "available.",
                                  NULL, 0, why, sizeof why),
                   1);
  assert_non_null(strstr(why, "path"));
  assert_int_equal(kv_rules_noisy("You cannot finish before the timeout of the harness.", NULL, 0,
                                  why, sizeof why),
                   1);
  assert_int_equal(kv_rules_noisy("You cannot change the signature of op_3_gelu: define it as "
                                  "given.",
                                  entries, 2, why, sizeof why),
                   1);
  assert_non_null(strstr(why, "op_3_gelu"));
  assert_int_equal(kv_rules_noisy("You cannot do that.", NULL, 0, why, sizeof why), 1);
  assert_non_null(strstr(why, "vague"));
  /* Short, but it names a construct. */
  assert_int_equal(
      kv_rules_noisy("You cannot use __builtin_expect in a kernel.", NULL, 0, why, sizeof why), 0);
  assert_int_equal(kv_rules_noisy("You cannot call __syncthreads() inside a divergent branch.",
                                  entries, 2, why, sizeof why),
                   0);
  assert_string_equal(why, "");
}

/* ---- the store: evidence, merges, flags ------------------------------------------- */

static void test_evidence_and_merge(void **state) {
  (void)state;
  char path[512], err[1024];
  struct kv_store *st = fresh_store(path, sizeof path);
  int64_t a = 0, b = 0, again = 0;
  /* The same evaluation twice counts once; two evaluations count twice. */
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call alpha_fn in the kernel.", "compiler",
                                       "cpu", "x86_64", 1, 11, &a, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call alpha_fn in the kernel.", "compiler",
                                       "cpu", "x86_64", 1, 11, &again, err, sizeof err),
                   0);
  assert_int_equal(a, again);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call alpha_fn in the kernel.", "compiler",
                                       "cpu", "x86_64", 1, 12, &again, err, sizeof err),
                   0);
  /* Another surface is another rule. */
  int64_t c = 0;
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call alpha_fn in the kernel.", "compiler",
                                       "cuda", "sm_90", 1, 13, &c, err, sizeof err),
                   0);
  assert_true(c != a);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot rely on alpha_fn being linked.", "llm",
                                       "cpu", "aarch64", 1, 14, &b, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot rely on alpha_fn being linked.", "llm",
                                       "cpu", "aarch64", 1, 12, &b, err, sizeof err),
                   0);
  struct kv_rule_meta *rows;
  int n;
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(rows[0].count, 2);
  assert_int_equal(rows[2].count, 2);
  kv_rule_metas_free(rows, n);
  /* b into a: evaluation 12 is behind both and counts once (2 + 2 - 1). */
  assert_int_equal(kv_store_rule_merge(st, a, b, "judge", 0, err, sizeof err), 0);
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  const struct kv_rule_meta *m = rule_named(rows, n, "You cannot call alpha_fn in the kernel.");
  assert_non_null(m);
  assert_int_equal(m->count, 3);
  assert_int_equal(m->nevidence, 3);
  assert_string_equal(m->aliases, "You cannot rely on alpha_fn being linked.");
  assert_null(m->arch); /* seen on x86_64 and aarch64 */
  assert_string_equal(m->surface, "cpu");
  kv_rule_metas_free(rows, n);
  /* A phrasing merged in is matched later: the next occurrence joins it. */
  int64_t d = 0;
  assert_int_equal(kv_rules_add_scoped(st, "You cannot rely on alpha_fn being linked!", "llm",
                                       "cpu", NULL, 1, 15, &d, err, sizeof err),
                   0);
  assert_int_equal(d, a);
  /* Disjoint evidence: the counts add up. */
  int64_t e = 0, f = 0;
  assert_int_equal(kv_rules_add_scoped(st, "You cannot use beta_var twice.", "llm", "cpu", NULL, 1,
                                       21, &e, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot read gamma_buf after the end.", "llm", "cpu",
                                       NULL, 1, 22, &f, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot read gamma_buf after the end.", "llm", "cpu",
                                       NULL, 1, 23, &f, err, sizeof err),
                   0);
  assert_int_equal(kv_store_rule_merge(st, f, e, "judge", 0, err, sizeof err), 0);
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(rule_named(rows, n, "You cannot read gamma_buf after the end.")->count, 3);
  assert_null(rule_named(rows, n, "You cannot use beta_var twice."));
  kv_rule_metas_free(rows, n);
  assert_int_equal(kv_store_rule_merge(st, f, f, "judge", 0, err, sizeof err), -1);
  assert_int_equal(kv_store_rule_merge(st, f, 9999, "judge", 0, err, sizeof err), -1);
  kv_store_close(st);
}

static void test_flags_and_scope(void **state) {
  (void)state;
  char path[512], err[1024];
  struct kv_store *st = fresh_store(path, sizeof path);
  int64_t a, b, c;
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call fmaxf_fast in the kernel.", "llm",
                                       "cpu", NULL, 3, 0, &a, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot include cuda_fp8.h: not available.",
                                       "compiler", "cuda", "sm_80", 3, 0, &b, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot use __ldg on outputs of this task ever.",
                                       "llm", NULL, NULL, 3, 0, &c, err, sizeof err),
                   0);
  char **t;
  int n;
  assert_int_equal(kv_rules_active_for(st, 2, "cpu", "x86_64", &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 2); /* the cuda rule is not for the cpu */
  kv_rules_free(t, n);
  assert_int_equal(kv_rules_active_for(st, 2, "cuda", "sm_90", &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 1); /* sm_80's rule is not for sm_90 */
  kv_rules_free(t, n);
  assert_int_equal(kv_rules_active_for(st, 2, "cuda", "sm_80", &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  kv_rules_free(t, n);
  /* An accepted cpu kernel calling fmaxf_fast flags that rule only. */
  int flagged = 0;
  assert_int_equal(kv_rules_check_accepted(st,
                                           "#include <cuda_fp8.h>\nvoid k(float *y) { y[0] = "
                                           "fmaxf_fast(y[0], 1); }\n",
                                           "cpu", 5, "t", &flagged, err, sizeof err),
                   0);
  assert_int_equal(flagged, 1);
  assert_int_equal(kv_rules_active_for(st, 2, "cpu", "x86_64", &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_string_equal(t[0], "You cannot use __ldg on outputs of this task ever.");
  kv_rules_free(t, n);
  assert_int_equal(kv_rules_active(st, 1, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  kv_rules_free(t, n);
  /* Unflagging restores it. */
  assert_int_equal(kv_store_rule_set_flag(st, a, NULL, NULL, err, sizeof err), 0);
  assert_int_equal(kv_rules_active_for(st, 2, "cpu", NULL, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  kv_rules_free(t, n);
  assert_int_equal(kv_store_rule_set_flag(st, 777, "x", NULL, err, sizeof err), -1);
  kv_store_close(st);
}

/* ---- export and import ------------------------------------------------------------ */

static char *export_of(struct kv_store *st, int *n) {
  char err[1024];
  char *t = kv_rules_export_json(st, 1, n, err, sizeof err);
  if (!t)
    fail_msg("export: %s", err);
  return t;
}

static void test_export_import(void **state) {
  (void)state;
  char pa[512], pb[512], err[1024];
  struct kv_store *A = fresh_store(pa, sizeof pa), *B = fresh_store(pb, sizeof pb);
  int64_t r1, r2, r3;
  for (int e = 1; e <= 3; e++)
    assert_int_equal(kv_rules_add_scoped(A, "You cannot call delta_fn: it is not linked.",
                                         "compiler", "cpu", "x86_64", 1, e, &r1, err, sizeof err),
                     0);
  assert_int_equal(kv_rules_add_scoped(A, "You cannot use __ldg on a host pointer at all.", "llm",
                                       "cuda", "sm_90", 1, 4, &r2, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(A, "You cannot use __ldg on a host pointer at all.", "llm",
                                       "cuda", "sm_90", 1, 5, &r2, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add(A, "You cannot write the output twice in one call.", "import", 4, 0,
                                &r3, err, sizeof err),
                   0);
  assert_int_equal(kv_store_rule_alias(A, r1, "You cannot expect delta_fn to be linked.", "judge",
                                       0, err, sizeof err),
                   0);
  assert_int_equal(kv_store_rule_set_flag(A, r3, "noisy: too vague", NULL, err, sizeof err), 0);
  int n = 0;
  char *text = export_of(A, &n);
  assert_int_equal(n, 3);
  json_t *j = json_loads(text, 0, NULL);
  assert_non_null(j);
  assert_int_equal(json_integer_value(json_object_get(j, "kevo_rules")), 2);
  json_t *first = json_array_get(json_object_get(j, "rules"), 0);
  assert_string_equal(json_string_value(json_object_get(first, "surface")), "cpu");
  assert_string_equal(json_string_value(json_object_get(first, "arch")), "x86_64");
  json_t *prov = json_object_get(first, "provenance");
  assert_int_equal(json_array_size(prov), 3);
  assert_string_equal(json_string_value(json_object_get(json_array_get(prov, 0), "role")),
                      "produced");
  assert_string_equal(json_string_value(json_object_get(json_array_get(prov, 2), "role")),
                      "confirmed");
  char sid[33];
  assert_int_equal(kv_store_id(A, sid, err, sizeof err), 0);
  char key[64];
  snprintf(key, sizeof key, "%s:1", sid);
  assert_string_equal(json_string_value(json_object_get(json_array_get(prov, 0), "key")), key);
  json_decref(j);
  /* Into B twice: the second import adds nothing. */
  struct kv_rules_import_stats s1, s2;
  assert_int_equal(kv_rules_import_json(B, text, strlen(text), "a.json", &s1, err, sizeof err), 0);
  assert_int_equal(s1.rules, 3);
  assert_int_equal(s1.created, 3);
  assert_int_equal(s1.count_added, 3 + 2 + 4);
  assert_int_equal(s1.flagged, 1);
  assert_int_equal(kv_rules_import_json(B, text, strlen(text), "a.json", &s2, err, sizeof err), 0);
  assert_int_equal(s2.created, 0);
  assert_int_equal(s2.merged, 3);
  assert_int_equal(s2.count_added, 0);
  assert_int_equal(s2.flagged, 0);
  struct kv_rule_meta *rb;
  int nb;
  assert_int_equal(kv_store_rules_meta(B, &rb, &nb, err, sizeof err), 0);
  assert_int_equal(nb, 3);
  const struct kv_rule_meta *m = rule_named(rb, nb, "You cannot call delta_fn: it is not linked.");
  assert_int_equal(m->count, 3);
  assert_string_equal(m->surface, "cpu");
  assert_string_equal(m->aliases, "You cannot expect delta_fn to be linked.");
  m = rule_named(rb, nb, "You cannot write the output twice in one call.");
  assert_int_equal(m->count, 4);
  assert_non_null(m->flag);
  assert_non_null(strstr(m->flag, "too vague"));
  m = rule_named(rb, nb, "You cannot use __ldg on a host pointer at all.");
  assert_string_equal(m->surface, "cuda");
  assert_int_equal(m->count, 2);
  kv_rule_metas_free(rb, nb);
  /* Back into A: everything is A's own evidence already. */
  int nbx;
  char *back = export_of(B, &nbx);
  assert_int_equal(kv_rules_import_json(A, back, strlen(back), "b.json", &s2, err, sizeof err), 0);
  assert_int_equal(s2.count_added, 0);
  assert_int_equal(s2.created, 0);
  free(back);
  /* A version 1 file: text, origin, count; imported twice, counted once. */
  const char *v1 = "{\"kevo_rules\": 1, \"rules\": [{\"text\": \"You cannot call omega_fn in the "
                   "kernel.\", \"origin\": \"llm\", \"count\": 5}]}";
  assert_int_equal(kv_rules_import_json(B, v1, strlen(v1), "v1.json", &s1, err, sizeof err), 0);
  assert_int_equal(s1.count_added, 5);
  assert_int_equal(kv_rules_import_json(B, v1, strlen(v1), "v1.json", &s1, err, sizeof err), 0);
  assert_int_equal(s1.count_added, 0);
  /* Bad files name the file, the rule and the field; nothing is imported. */
  struct {
    const char *text, *want;
  } bad[] = {
      {"not json", "bad.json: line 1"},
      {"{\"rules\": []}", "not a kevo rules file"},
      {"{\"kevo_rules\": 3, \"rules\": []}", "version 3"},
      {"{\"kevo_rules\": 2, \"rules\": [{\"count\": 2}]}", "rules[0].text: missing"},
      {"{\"kevo_rules\": 2, \"rules\": [{\"text\": \"You cannot x.\", \"count\": -1}]}",
       "rules[0].count"},
      {"{\"kevo_rules\": 2, \"rules\": [{\"text\": \"You cannot x.\", \"surface\": \"tpu\"}]}",
       "rules[0].surface: 'tpu' is not a surface"},
      {"{\"kevo_rules\": 2, \"rules\": [{\"text\": \"You cannot x.\", \"provenance\": [{}]}]}",
       "rules[0].provenance[0].key: missing"},
      {"{\"kevo_rules\": 2, \"rules\": [{\"text\": \"You cannot x.\", \"provenance\": "
       "[{\"key\": \"k\", \"weight\": 0}]}]}",
       "rules[0].provenance[0].weight"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    assert_int_equal(
        kv_rules_import_json(B, bad[i].text, strlen(bad[i].text), "bad.json", &s1, err, sizeof err),
        -1);
    if (!strstr(err, bad[i].want))
      fail_msg("bad file %zu: '%s' lacks '%s'", i, err, bad[i].want);
  }
  assert_int_equal(kv_store_rules_meta(B, &rb, &nb, err, sizeof err), 0);
  assert_int_equal(nb, 4);
  kv_rule_metas_free(rb, nb);
  free(text);
  kv_store_close(A);
  kv_store_close(B);
}

/* ---- dedup ------------------------------------------------------------------------- */

static void test_dedup_words(void **state) {
  (void)state;
  char path[512], err[1024];
  struct kv_store *st = fresh_store(path, sizeof path);
  int64_t a, b;
  /* Two near-identical rules that kv_rules_add would have merged, put in
   * apart (as an import of an older file can), plus an unrelated one. */
  struct kv_rule_new r1 = {"You cannot call zeta_fn in the kernel body at all.", "llm", "cpu",
                           NULL};
  struct kv_rule_new r2 = {"You cannot call zeta_fn in the kernel body at all!!", "llm", "cpu",
                           NULL};
  struct kv_rule_evidence e1 = {.key = "s:1", .weight = 2}, e2 = {.key = "s:2", .weight = 3};
  assert_int_equal(kv_store_rule_note(st, 0, &r1, &e1, 0, &a, NULL, err, sizeof err), 0);
  assert_int_equal(kv_store_rule_note(st, 0, &r2, &e2, 0, &b, NULL, err, sizeof err), 0);
  assert_int_equal(
      kv_rules_add(st, "You cannot read past the end of x.", "llm", 1, 9, NULL, err, sizeof err),
      0);
  struct kv_rules_dedup_stats ds;
  assert_int_equal(kv_rules_dedup(st, NULL, 10, &ds, err, sizeof err), 0);
  assert_int_equal(ds.word_merges, 1);
  assert_int_equal(ds.judge_calls, 0);
  struct kv_rule_meta *rows;
  int n;
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  const struct kv_rule_meta *m = rule_named(rows, n, r2.text); /* the more frequent stays */
  assert_non_null(m);
  assert_int_equal(m->count, 5);
  assert_int_equal(m->nevidence, 2);
  kv_rule_metas_free(rows, n);
  kv_store_close(st);
}

static void test_dedup_judge(void **state) {
  (void)state;
  char path[512], err[1024];
  struct kv_store *st = fresh_store(path, sizeof path);
  int64_t a, b, c;
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call eta_fn: no library defines it.",
                                       "compiler", "cpu", NULL, 1, 1, &a, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st, "You cannot call eta_fn: no library defines it.",
                                       "compiler", "cpu", NULL, 1, 2, &a, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st,
                                       "You cannot call eta_fn since kevo links nothing "
                                       "that provides it.",
                                       "llm", "cpu", NULL, 1, 3, &b, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st,
                                       "You cannot write theta_out from two threads in one "
                                       "call.",
                                       "llm", "cpu", NULL, 1, 4, &c, err, sizeof err),
                   0);
  assert_int_equal(kv_rules_add_scoped(st,
                                       "You cannot write theta_out from several blocks at "
                                       "once.",
                                       "llm", "cpu", NULL, 1, 5, NULL, err, sizeof err),
                   0);
  struct standin_opts so = {.max_requests = 16,
                            .lifetime_s = 30,
                            .replies = "=== when two threads\nDIFFERENT: one is about races.\n"
                                       "=== when Answer SAME or DIFFERENT\n**SAME**\n"};
  struct standin *srv = standin_start(&so, err, sizeof err);
  if (!srv)
    fail_msg("standin: %s", err);
  struct kv_llm_model m;
  assert_int_equal(kv_llm_model_defaults(&m, "openai", err, sizeof err), 0);
  snprintf(m.base_url, sizeof m.base_url, "http://127.0.0.1:%d/v1", standin_port(srv));
  snprintf(m.model, sizeof m.model, "judge");
  m.api_key_env[0] = 0;
  m.timeout_s = 10;
  struct kv_llm *llm;
  struct kv_llm_opts lo = {.model = &m, .store = st};
  assert_int_equal(kv_llm_new(&lo, &llm, err, sizeof err), 0);
  struct kv_rules_dedup_stats ds;
  assert_int_equal(kv_rules_dedup(st, llm, 10, &ds, err, sizeof err), 0);
  assert_int_equal(ds.judge_calls, 2);
  assert_int_equal(ds.judge_same, 1);
  assert_int_equal(ds.judge_different, 1);
  struct kv_rule_meta *rows;
  int n;
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  const struct kv_rule_meta *r = rule_named(rows, n,
                                            "You cannot call eta_fn: no library defines "
                                            "it.");
  assert_non_null(r);
  assert_int_equal(r->count, 3); /* 2 + 1: both provenances */
  assert_int_equal(r->nevidence, 3);
  assert_non_null(strstr(r->aliases, "since kevo links nothing"));
  kv_rule_metas_free(rows, n);
  /* Asked once: a second pass finds the verdicts in the store. */
  assert_int_equal(kv_rules_dedup(st, llm, 10, &ds, err, sizeof err), 0);
  assert_int_equal(ds.judge_calls, 0);
  assert_int_equal(ds.judge_different, 1);
  kv_llm_free(llm);
  standin_stop(srv);
  kv_store_close(st);
}

/* ---- a schema 5 store migrates keeping its counts --------------------------------- */

static void test_migrate_v5(void **state) {
  (void)state;
  char path[512], err[1024];
  struct kv_store *st = fresh_store(path, sizeof path);
  int64_t r;
  assert_int_equal(
      kv_store_rule_add(st, "You cannot call iota_fn.", "compiler", 1, 7, &r, err, sizeof err), 0);
  assert_int_equal(kv_store_rule_seen(st, r, 2, 0, err, sizeof err), 0);
  kv_store_close(st);
  /* Back to schema 5: every table a later migration made goes. */
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                                      "name NOT IN ('meta', 'tasks', 'sources', 'evaluations', "
                                      "'llm_calls', 'runs', 'nodes', 'rules', 'rule_evals', "
                                      "'benches', 'bench_tasks', 'sqlite_sequence')",
                                      -1, &q, NULL),
                   SQLITE_OK);
  char drops[4096] = "";
  while (sqlite3_step(q) == SQLITE_ROW)
    snprintf(drops + strlen(drops), sizeof drops - strlen(drops), "DROP TABLE %s; ",
             (const char *)sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(db);
  raw(path, drops);
  raw(path, "ALTER TABLE rules DROP COLUMN surface; ALTER TABLE rules DROP COLUMN arch; ALTER "
            "TABLE rules DROP COLUMN flag; ALTER TABLE rules DROP COLUMN flag_key; DELETE FROM "
            "meta; ALTER TABLE runs DROP COLUMN stop_reason; PRAGMA user_version = 5;");
  assert_int_equal(kv_store_open(path, &st, err, sizeof err), 0);
  assert_int_equal(kv_store_schema_version(st), KV_STORE_SCHEMA_VERSION);
  char sid[33];
  assert_int_equal(kv_store_id(st, sid, err, sizeof err), 0);
  struct kv_rule_meta *rows;
  int n;
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(rows[0].count, 3);
  assert_int_equal(rows[0].nevidence, 2); /* evaluation 7, and the legacy rest (weight 2) */
  kv_rule_metas_free(rows, n);
  /* The same evaluation again adds nothing; a new one adds one. */
  assert_int_equal(
      kv_rules_add(st, "You cannot call iota_fn.", "compiler", 1, 7, NULL, err, sizeof err), 0);
  assert_int_equal(
      kv_rules_add(st, "You cannot call iota_fn.", "compiler", 1, 8, NULL, err, sizeof err), 0);
  assert_int_equal(kv_store_rules_meta(st, &rows, &n, err, sizeof err), 0);
  assert_int_equal(rows[0].count, 4);
  kv_rule_metas_free(rows, n);
  kv_store_close(st);
}

/* ---- kevo synthesize's pure parts -------------------------------------------------- */

static void test_extract_module(void **state) {
  (void)state;
  char *m = kv_synth_extract_module("Name: x\n\n```python\nimport torch\nclass Model(nn.Module):\n"
                                    "    pass\n```\nthanks\n");
  assert_non_null(m);
  assert_string_equal(m, "import torch\nclass Model(nn.Module):\n    pass\n");
  free(m);
  /* The block with Model wins over a later helper block; C blocks never. */
  m = kv_synth_extract_module("```python\nclass Model(nn.Module):\n  a = 1\n```\n"
                              "```c\nclass Model {};\n```\n```python\nprint(1)\n```\n");
  assert_string_equal(m, "class Model(nn.Module):\n  a = 1\n");
  free(m);
  /* No Model anywhere: the last python block (refused later as no_model). */
  m = kv_synth_extract_module("```python\nclass Net:\n  pass\n```\n");
  assert_string_equal(m, "class Net:\n  pass\n");
  free(m);
  /* Unfenced, an unclosed fence, and prose. */
  m = kv_synth_extract_module("import torch\nclass Model(nn.Module):\n  pass");
  assert_string_equal(m, "import torch\nclass Model(nn.Module):\n  pass\n");
  free(m);
  m = kv_synth_extract_module("~~~py\nclass Model(nn.Module):\n  pass\n");
  assert_string_equal(m, "class Model(nn.Module):\n  pass\n");
  free(m);
  assert_null(kv_synth_extract_module("I would rather not."));
  assert_null(kv_synth_extract_module("```c\nclass Model {};\n```\n"));
  assert_null(kv_synth_extract_module(NULL));
}

static void test_names_and_ops(void **state) {
  (void)state;
  char name[96];
  kv_synth_task_name("Name: `Fused GELU-LayerNorm`\n```python\n", 12, "composite", name,
                     sizeof name);
  assert_string_equal(name, "12_fused_gelu_layernorm");
  kv_synth_task_name("no name here", 3, "mutation", name, sizeof name);
  assert_string_equal(name, "3_mutation");
  kv_synth_task_name("Name: ../../etc/passwd", 4, "x", name, sizeof name);
  assert_null(strchr(name, '/'));
  assert_null(strstr(name, ".."));
  int a[8], b[8];
  for (int att = 0; att < 50; att++) {
    int k = kv_synth_pick_ops(42, att, kv_synth_ndefault_ops, a, 8);
    assert_true(k >= 3 && k <= 6);
    assert_int_equal(kv_synth_pick_ops(42, att, kv_synth_ndefault_ops, b, 8), k);
    for (int i = 0; i < k; i++) {
      assert_int_equal(a[i], b[i]);
      assert_true(a[i] >= 0 && a[i] < kv_synth_ndefault_ops);
      for (int j = 0; j < i; j++)
        assert_true(a[i] != a[j]);
    }
  }
  assert_int_equal(kv_synth_pick_ops(1, 0, 2, a, 8), 2);
}

static void test_graph_key(void **state) {
  (void)state;
  const char *t1 = "{\"name\": \"a\", \"entry\": \"op_a\", \"params\": [{\"name\": \"x\", "
                   "\"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"n\", \"d\"]}, {\"name\": "
                   "\"out\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"n\", \"d\"]}, "
                   "{\"name\": \"n\", \"role\": \"size\"}, {\"name\": \"d\", \"role\": "
                   "\"size\"}], \"check\": [{\"n\": 2, \"d\": 3}], \"bench\": [{\"n\": 64, \"d\": "
                   "512}], \"tolerance\": {\"atol\": 1e-4, \"rtol\": 1e-4}}";
  /* Other names, same shapes at the bench size. */
  const char *t2 = "{\"name\": \"b\", \"entry\": \"op_b\", \"params\": [{\"name\": \"inp\", "
                   "\"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"]}, "
                   "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"rows\", "
                   "\"cols\"]}, {\"name\": \"rows\", \"role\": \"size\"}, {\"name\": \"cols\", "
                   "\"role\": \"size\"}], \"check\": [{\"rows\": 4, \"cols\": 4}], \"bench\": "
                   "[{\"rows\": 64, \"cols\": 512}], \"tolerance\": {\"atol\": 1e-4, \"rtol\": "
                   "1e-4}}";
  const char *t3 = "{\"name\": \"c\", \"entry\": \"op_c\", \"params\": [{\"name\": \"x\", "
                   "\"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"n\", \"d\"]}, {\"name\": "
                   "\"out\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"n\", \"d\"]}, "
                   "{\"name\": \"n\", \"role\": \"size\"}, {\"name\": \"d\", \"role\": "
                   "\"size\"}], \"check\": [{\"n\": 2, \"d\": 3}], \"bench\": [{\"n\": 64, \"d\": "
                   "256}], \"tolerance\": {\"atol\": 1e-4, \"rtol\": 1e-4}}";
  struct kv_task *a, *b, *c;
  char err[512], ka[65], kb[65], kc[65], kd[65];
  assert_int_equal(kv_task_parse(t1, strlen(t1), "t1", &a, err, sizeof err), 0);
  assert_int_equal(kv_task_parse(t2, strlen(t2), "t2", &b, err, sizeof err), 0);
  assert_int_equal(kv_task_parse(t3, strlen(t3), "t3", &c, err, sizeof err), 0);
  assert_int_equal(kv_synth_graph_key(a, "ops1", ka, err, sizeof err), 0);
  assert_int_equal(kv_synth_graph_key(b, "ops1", kb, err, sizeof err), 0);
  assert_int_equal(kv_synth_graph_key(c, "ops1", kc, err, sizeof err), 0);
  assert_int_equal(kv_synth_graph_key(a, "ops2", kd, err, sizeof err), 0);
  assert_string_equal(ka, kb);     /* names do not matter */
  assert_string_not_equal(ka, kc); /* shapes do */
  assert_string_not_equal(ka, kd); /* so do the operators */
  kv_task_free(a);
  kv_task_free(b);
  kv_task_free(c);
}

int main(void) {
  snprintf(g_root, sizeof g_root, "/tmp/kevo-test-adapt-XXXXXX");
  if (!mkdtemp(g_root)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subject),         cmocka_unit_test(test_contradicts),
      cmocka_unit_test(test_noisy),           cmocka_unit_test(test_evidence_and_merge),
      cmocka_unit_test(test_flags_and_scope), cmocka_unit_test(test_export_import),
      cmocka_unit_test(test_dedup_words),     cmocka_unit_test(test_dedup_judge),
      cmocka_unit_test(test_migrate_v5),      cmocka_unit_test(test_extract_module),
      cmocka_unit_test(test_names_and_ops),   cmocka_unit_test(test_graph_key),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  kv_rmtree(g_root);
  return rc;
}
