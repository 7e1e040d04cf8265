/* A task of hundreds of packed weights (KernelBench's ResNet101: 626
 * tensors in 14 buffers, tests/import/big/10_ResNet101, made by kevo
 * import): its prototype (over 30 KiB with the table of offsets), its shim
 * and the prompt that shows it are complete, where the fixed 8 and 16 KiB
 * buffers kevo used before cut them off. No torch needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/prompt.h"
#include "kevo/task.h"

static struct kv_task *resnet(void) {
  char dir[PATH_MAX], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/import/big/10_ResNet101", KEVO_SOURCE_DIR);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    fail_msg("%s", err);
  return t;
}

/* The last tensor of the last pack and the entry's last parameter. */
#define LAST_ROW "layer4.2.bn3.num_batches_tracked [] */\n"
#define ENTRY_END "int layers_0, int num_classes);\n#endif\n"

static void test_prototype_whole(void **state) {
  (void)state;
  struct kv_task *t = resnet();
  int packed = 0;
  for (int i = 0; i < t->nparams; i++)
    packed += t->params[i].npack;
  assert_true(packed >= 600);
  char small[16384];
  /* what kevo's fixed buffers held: too small for this table */
  assert_true(kv_task_prototype(t, KV_LANG_C, small, sizeof small) < 0);
  for (int lang = KV_LANG_C; lang <= KV_LANG_CUDA; lang++) {
    char *p = kv_task_prototype_alloc(t, (enum kv_lang)lang);
    assert_non_null(p);
    assert_true(strlen(p) > sizeof small);
    assert_non_null(strstr(p, LAST_ROW));
    const char *end = lang == KV_LANG_C ? ENTRY_END : "int num_classes, cudaStream_t stream);\n";
    assert_non_null(strstr(p, end));
    char *s = kv_task_shim_alloc(t, (enum kv_lang)lang);
    assert_non_null(s);
    assert_non_null(strstr(s, LAST_ROW));
    assert_non_null(strstr(s, "kevo_shim_call"));
    assert_non_null(strstr(s, "*(const int *)args[20]"));
    free(s);
    free(p);
  }
  kv_task_free(t);
}

static void test_prompt_whole(void **state) {
  (void)state;
  struct kv_task *t = resnet();
  struct kv_prompts *p;
  char err[512];
  assert_int_equal(kv_prompts_load(NULL, &p, err, sizeof err), 0);
  for (int cuda = 0; cuda < 2; cuda++) {
    struct kv_prompt_ctx c = {.task = t,
                              .surface = cuda ? "cuda" : "cpu",
                              .device = "test",
                              .reference = "class Model:\n"};
    char *s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
    assert_non_null(s);
    assert_null(strstr(s, "too long to show"));
    assert_non_null(strstr(s, LAST_ROW));
    assert_non_null(strstr(s, "/*   0  conv1.weight [64][3][7][7] */"));
    assert_non_null(strstr(s, cuda ? "int num_classes, cudaStream_t stream);" : ENTRY_END));
    free(s);
  }
  kv_prompts_free(p);
  kv_task_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prototype_whole),
      cmocka_unit_test(test_prompt_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
