/* Issue 28 on a real GPU (CTest label `gpu`): no number a cuda verdict rests
 * on is produced or carried by the candidate's process (docs/verdict.md).
 * On the rowsum task (tests/gpu/rowsum), timed, sandboxed:
 *   good.cu and a copy of the reference: ok, read from lent buffers (the
 *     verdict does not say the candidate's process carried its results);
 *   relay_reply.cu (a relay on the reply descriptor rewriting check replies):
 *     rejected;
 *   relay_fetch.cu (timed calls do a third of the work, a relay on the
 *     request descriptor finishes it before a FETCH) and ctor_memcpy.cu (a
 *     constructor rewrites the worker's cuMemcpyDtoH entry to finish owed
 *     work before any copy) and queue_after.cu (a relay on the reply
 *     descriptor queues the owed work on the GPU once a phase has answered):
 *     never ok at 1.3x or more.
 * Lending is the default (it passed here on an H200, 2026-11-28; KEVO_LEND
 * is unset here so that the default is what runs). Then the same attacks with KEVO_NO_LEND=1 (the
 * old path, where the candidate's worker copies its results back), printed, not judged: the code
 * before lending judged them ok. The table at the end has both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_opts.h"
#include "kevo/gate.h"
#include "kevo/task.h"
#include "kevo/util.h"

#define FOOLED_SPEEDUP 1.3
#define OLD_PATH "through the candidate's own process"

static char src[4096], cache[4096];
static char table[16][400];
static int nrows;

struct vcase {
  const char *name; /* a path under tests/gpu/ */
  int honest;       /* must be ok; else must not be ok at FOOLED_SPEEDUP or more */
  int reject;       /* must not be ok at all */
};

static const struct vcase cases[] = {
    {"cands/good.cu", 1, 0},        {"rowsum/reference.cu", 1, 0},  {"cands/relay_reply.cu", 0, 1},
    {"cands/relay_fetch.cu", 0, 0}, {"cands/ctor_memcpy.cu", 0, 0},
};

static struct kv_gate_result *judge(const struct kv_task *t, const char *name) {
  char path[8300], err[2048];
  snprintf(path, sizeof path, "%s/tests/gpu/%s", src, name);
  struct kv_gate_opts o;
  env_opts_fill(&o);
  o.surface = "cuda";
  o.cache_dir = cache;
  o.time_budget_s = 0.3;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  if (kv_gate_eval(t, path, &o, r, err, sizeof err) != 0)
    fail_msg("%s: kv_gate_eval: %s", name, err);
  return r;
}

static void note(const char *path, const char *name, const struct kv_gate_result *r,
                 const char *outcome) {
  if (nrows < 16)
    snprintf(table[nrows++], sizeof table[0], "%-5s %-22s %-18s %6.2fx  %s", path, name,
             kv_verdict_name(r->verdict), r->timed ? r->timing.speedup : 0.0, outcome);
  printf("%s %s: %s: %.300s\n", path, name, kv_verdict_name(r->verdict), r->detail);
}

static void test_lent(void **state) {
  (void)state;
  char dir[8200], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/gpu/rowsum", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct vcase *c = &cases[i];
    struct kv_gate_result *r = judge(t, c->name);
    int ok = r->verdict == KV_V_OK, fooled = ok && r->timed && r->timing.speedup >= FOOLED_SPEEDUP;
    int pass = c->honest ? ok && !strstr(r->detail, OLD_PATH) : c->reject ? !ok : !fooled;
    note("lent", c->name, r,
         pass        ? "as it should"
         : c->honest ? "FAIL: honest rejected"
                     : "FAIL: fooled");
    bad += !pass;
    kv_gate_result_release(r);
    free(r);
  }
  kv_task_free(t);
  assert_int_equal(bad, 0);
}

static void test_old_path(void **state) {
  (void)state;
  char dir[8200], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/gpu/rowsum", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  setenv("KEVO_NO_LEND", "1", 1);
  for (size_t i = 2; i < sizeof cases / sizeof cases[0]; i++) {
    struct kv_gate_result *r = judge(t, cases[i].name);
    int fooled = r->verdict == KV_V_OK &&
                 (cases[i].reject || (r->timed && r->timing.speedup >= FOOLED_SPEEDUP));
    note("old", cases[i].name, r, fooled ? "fooled (the old path)" : "not fooled");
    assert_non_null(strstr(r->detail, OLD_PATH)); /* said, never silent */
    kv_gate_result_release(r);
    free(r);
  }
  unsetenv("KEVO_NO_LEND");
  kv_task_free(t);
}

static int print_table(void **state) {
  (void)state;
  printf("\npath  candidate              verdict            speedup  outcome\n");
  for (int i = 0; i < nrows; i++)
    printf("%s\n", table[i]);
  return 0;
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s/gpu-verdict", c && *c ? c : "/tmp/kevo-gpu-verdict");
  unsetenv("KEVO_LEND"); /* the default lends (lib/gate/lend.c) */
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_lent), cmocka_unit_test(test_old_path)};
  return cmocka_run_group_tests(tests, NULL, print_table);
}
