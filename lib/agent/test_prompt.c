/* Prompts: blocks in order, switchable, left out without data, capped;
 * templates overridable from a directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/prompt.h"

static struct kv_task *rowsum(void) {
  struct kv_task *t = NULL;
  char err[512];
  assert_int_equal(kv_task_load(KEVO_SOURCE_DIR "/examples/tasks/rowsum", &t, err, sizeof err), 0);
  return t;
}

static struct kv_prompts *defaults(void) {
  struct kv_prompts *p = NULL;
  char err[512];
  assert_int_equal(kv_prompts_load(NULL, &p, err, sizeof err), 0);
  return p;
}

static void test_mask_parse(void **state) {
  (void)state;
  unsigned m = 0;
  char err[512];
  assert_int_equal(kv_prompt_blocks_parse("all", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL);
  assert_int_equal(kv_prompt_blocks_parse("task,parent", &m, err, sizeof err), 0);
  assert_int_equal(m, (1u << KV_PB_TASK) | (1u << KV_PB_PARENT));
  assert_int_equal(kv_prompt_blocks_parse("-profile,-history", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL & ~(1u << KV_PB_PROFILE) & ~(1u << KV_PB_HISTORY));
  assert_int_equal(kv_prompt_blocks_parse("all,-rules", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL & ~(1u << KV_PB_RULES));
  assert_int_equal(kv_prompt_blocks_parse("task,profil", &m, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown block 'profil'"));
  assert_non_null(strstr(err, "profile"));
  assert_int_equal(kv_prompt_blocks_parse("", &m, err, sizeof err), -1);
}

/* The task alone: summary, signature, reference, sizes, surface, device; no
 * feedback blocks without a parent; the instruction last. */
static void test_task_only(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_prompt_ctx c = {
      .task = t, .surface = "cpu", .device = "cpu:test", .reference = "REFCODE\n"};
  char err[512];
  char *s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "## Task: rowsum"));
  assert_non_null(strstr(s, "Sum of each row of a float32 matrix."));
  assert_non_null(strstr(s, "void rowsum(const float *x, float *y, int rows, int cols);"));
  assert_non_null(strstr(s, "REFCODE"));
  assert_non_null(strstr(s, "rows=8192 cols=8192"));
  assert_non_null(strstr(s, "device: cpu:test"));
  assert_null(strstr(s, "## Current kernel"));
  assert_null(strstr(s, "## Correctness"));
  assert_null(strstr(s, "## Compiler output"));
  assert_null(strstr(s, "## Profile"));
  assert_null(strstr(s, "## Rules"));
  assert_null(strstr(s, "kevo:launch")); /* the kernel-only form is cuda's */
  const char *ins = strstr(s, "Write a new kernel");
  assert_non_null(ins);
  assert_true(ins > strstr(s, "REFCODE"));
  assert_non_null(strstr(s, "defines `rowsum`"));
  free(s);
  kv_prompts_free(p);
  kv_task_free(t);
}

/* The torch surface: the field's form (a ModelNew from Model, Triton or
 * inline CUDA), the Python contract, a python block defining ModelNew; the C
 * entry's wording and the kernel-only form are not there. */
static void test_torch_surface(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_prompt_ctx c = {.task = t, .surface = "torch", .reference = "class Model:\n"};
  char err[512];
  char *s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "Optimize the architecture named Model"));
  assert_non_null(strstr(s, "Name your optimized architecture ModelNew"));
  assert_non_null(strstr(s, "```python\n# kevo: what a candidate"));
  assert_non_null(strstr(s, "class ModelNew(torch.nn.Module)"));
  assert_non_null(strstr(s, "one ```python block that defines `ModelNew`"));
  assert_null(strstr(s, "Define exactly this entry point"));
  assert_null(strstr(s, "void rowsum("));
  assert_null(strstr(s, "kevo:launch"));
  free(s);
  c.surface = "cpu"; /* and the C wording stays where it was */
  s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "Define exactly this entry point (kevo includes the prototype"));
  assert_null(strstr(s, "ModelNew"));
  free(s);
  kv_prompts_free(p);
  kv_task_free(t);
}

/* A cuda task with "allow": the signature says which libraries and how to
 * set them up once; without allow, or on the cpu surface, nothing. */
static void test_allowed_libraries(void **state) {
  (void)state;
  struct kv_task *t = NULL, *plain = rowsum();
  char err[512];
  assert_int_equal(
      kv_task_load(KEVO_SOURCE_DIR "/tests/cuda/allow/gemm_bias_relu", &t, err, sizeof err), 0);
  struct kv_prompts *p = defaults();
  struct kv_prompt_ctx c = {.task = t, .surface = "cuda", .reference = "REF\n"};
  char *s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "This task allows vendor libraries"));
  assert_non_null(strstr(s, "#include <cublas_v2.h>"));
  assert_non_null(strstr(s, "if (!h) cublasCreate(&h); cublasSetStream(h, stream);"));
  assert_non_null(strstr(s, "Create handles and workspaces once (static)"));
  assert_null(strstr(s, "cudnn.h")); /* only what the task allows */
  assert_true(strstr(s, "This task allows") < strstr(s, "kevo:launch"));
  free(s);
  c.surface = "cpu";
  s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_null(strstr(s, "vendor libraries"));
  free(s);
  c.task = plain;
  c.surface = "cuda";
  s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_null(strstr(s, "vendor libraries"));
  free(s);
  kv_prompts_free(p);
  kv_task_free(t);
  kv_task_free(plain);
}

static void fill_failed(struct kv_gate_result *r) {
  memset(r, 0, sizeof *r);
  r->verdict = KV_V_WRONG_OUTPUT;
  snprintf(r->detail, sizeof r->detail, "y[3]: expected 1.25, got 0");
  r->nchecks = 5;
  for (int i = 0; i < 5; i++) {
    snprintf(r->checks[i].sizes, sizeof r->checks[i].sizes, "rows=%d cols=3", i + 1);
    r->checks[i].verdict = i == 0 ? KV_V_OK : KV_V_WRONG_OUTPUT;
    snprintf(r->checks[i].detail, sizeof r->checks[i].detail, "mismatch-%d", i);
  }
}

/* Every block in order when all have data; each switchable on its own. */
static void test_all_blocks_in_order_and_switchable(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_OK;
  r->timed = 1;
  r->timing.cand.median_us = 50;
  r->timing.ref.median_us = 200;
  r->timing.speedup = 4;
  r->timing.roofline = 0.42;
  snprintf(r->timing.sizes, sizeof r->timing.sizes, "rows=8192 cols=8192");
  r->nkernels = 1;
  snprintf(r->kernels[0].name, sizeof r->kernels[0].name, "_Z3foo");
  r->kernels[0].registers = 40;
  r->kernels[0].spill_store_bytes = 8;
  r->nchecks = 1;
  const char *rules[] = {"You cannot call malloc."};
  struct kv_prompt_attempt hist[] = {{1, "write", "compile_error", 0, NULL},
                                     {2, "refine", "ok", 1.5, "POOLCODE\n"}};
  struct kv_prompt_ctx c = {.task = t,
                            .surface = "cuda",
                            .parent_code = "PARENTCODE\n",
                            .parent_step = 7,
                            .parent = r,
                            .rules = rules,
                            .nrules = 1,
                            .plan = "Unroll by four.",
                            .history = hist,
                            .nhistory = 2,
                            .skill = "## OMP_ROWS\nSKILLCARD\n"};
  char err[512];
  char *s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  const char *heads[] = {"## Task",
                         "## Current kernel (step 7)",
                         "## Correctness",
                         "## Performance",
                         "## Profile",
                         "## Rules",
                         "## Plan to implement",
                         "## Earlier attempts",
                         "Make the current kernel"};
  const char *prev = s;
  for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
    const char *at = strstr(s, heads[i]);
    assert_non_null(at);
    assert_true(at >= prev);
    prev = at;
  }
  assert_non_null(strstr(s, "extern \"C\" void rowsum("));
  assert_non_null(strstr(s, "```cuda"));
  /* cuda: the kernel-only form is offered, with the task's sizes */
  assert_non_null(strstr(s, "// kevo:launch KERNEL grid=(EXPR"));
  assert_non_null(strstr(s, "the sizes (rows cols)"));
  assert_non_null(strstr(s, "4.00x; 42% of the roofline"));
  assert_non_null(strstr(s, "_Z3foo: 40 registers"));
  assert_non_null(strstr(s, "spills 8 B stores"));
  assert_non_null(strstr(s, "- You cannot call malloc."));
  assert_non_null(strstr(s, "step 2 (refine): ok, 1.50x"));
  assert_non_null(strstr(s, "POOLCODE"));
  assert_non_null(strstr(s, "## A skill to apply")); /* the card, verbatim */
  assert_non_null(strstr(s, "## OMP_ROWS\nSKILLCARD\n"));
  assert_null(strstr(s, "## Compiler output")); /* compiled fine */
  free(s);
  /* Switching each block off removes exactly its heading. */
  const char *own[KV_PB_COUNT] = {"## Task",
                                  "## Current kernel",
                                  NULL,
                                  "## Correctness",
                                  "## Performance",
                                  "## Profile",
                                  "## Rules",
                                  "## Plan to implement",
                                  "## Earlier attempts",
                                  "## A skill to apply"};
  for (int b = 0; b < KV_PB_COUNT; b++) {
    if (!own[b])
      continue;
    s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL & ~(1u << b), &c, err, sizeof err);
    assert_non_null(s);
    for (int o = 0; o < KV_PB_COUNT; o++)
      if (own[o])
        assert_true((strstr(s, own[o]) != NULL) == (o != b));
    free(s);
  }
  free(r);
  kv_prompts_free(p);
  kv_task_free(t);
}

/* Compile failures show capped diagnostics; wrong kernels their first
 * mismatches, at most KV_PROMPT_MISMATCH_MAX. */
static void test_feedback_compile_and_correctness(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_COMPILE_ERROR;
  size_t big = 20000;
  r->compile_log = malloc(big + 1);
  for (size_t i = 0; i < big; i++)
    r->compile_log[i] = i % 50 == 49 ? '\n' : 'e';
  memcpy(r->compile_log, "error: 'foo' undeclared", 23);
  r->compile_log[big] = 0;
  struct kv_prompt_ctx c = {.task = t, .surface = "cpu", .parent_code = "X\n", .parent = r};
  char err[512];
  char *s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "## Compiler output (compile_error)"));
  assert_non_null(strstr(s, "error: 'foo' undeclared"));
  assert_non_null(strstr(s, "more bytes cut]"));
  assert_true(strlen(s) < 12000);
  assert_non_null(strstr(s, "The current kernel failed"));
  free(s);
  free(r->compile_log);
  fill_failed(r);
  s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_null(strstr(s, "## Compiler output"));
  assert_non_null(strstr(s, "Verdict: wrong_output: y[3]: expected 1.25, got 0"));
  assert_non_null(strstr(s, "mismatch-1"));
  assert_non_null(strstr(s, "mismatch-3"));
  assert_null(strstr(s, "mismatch-4"));
  assert_null(strstr(s, "mismatch-0"));
  free(s);
  free(r);
  kv_prompts_free(p);
  kv_task_free(t);
}

/* A directory overrides the templates it has; unknown variables are errors
 * naming the file. */
static void test_override_dir(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-prompt-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/task.md", dir);
  FILE *f = fopen(path, "w");
  fputs("TASK={{name}} ENTRY-SIG={{signature}}", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/write.md", dir);
  f = fopen(path, "w");
  fputs("Just write {{entry}}.\n", f);
  fclose(f);
  struct kv_prompts *p = NULL;
  assert_int_equal(kv_prompts_load(dir, &p, err, sizeof err), 0);
  struct kv_task *t = rowsum();
  struct kv_prompt_ctx c = {.task = t, .surface = "cpu"};
  char *s = kv_prompt_build(p, KV_PK_WRITE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  assert_non_null(strstr(s, "TASK=rowsum ENTRY-SIG="));
  assert_non_null(strstr(s, "void rowsum(const float *x"));
  assert_non_null(strstr(s, "Just write rowsum."));
  assert_null(strstr(s, "## Task"));
  free(s);
  kv_prompts_free(p);
  snprintf(path, sizeof path, "%s/parent.md", dir);
  f = fopen(path, "w");
  fputs("{{code}} {{speedup}}", f);
  fclose(f);
  assert_int_equal(kv_prompts_load(dir, &p, err, sizeof err), -1);
  assert_non_null(strstr(err, "parent.md: unknown variable {{speedup}}"));
  assert_non_null(strstr(err, "step lang code"));
  unlink(path);
  snprintf(path, sizeof path, "%s/task.md", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/write.md", dir);
  unlink(path);
  rmdir(dir);
  kv_task_free(t);
}

/* "static=off|summary|raw" and "-static" in the mask. */
static void test_static_mask(void **state) {
  (void)state;
  unsigned m = 0, st = 1u << KV_PB_STATIC, raw = KV_PB_RAW(KV_PB_STATIC);
  char err[512];
  assert_int_equal(kv_prompt_blocks_parse("all", &m, err, sizeof err), 0);
  assert_true((m & st) && !(m & raw)); /* on, in kevo's rendering, by default */
  assert_int_equal(kv_prompt_blocks_parse("all,static=raw", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL | raw);
  assert_int_equal(kv_prompt_blocks_parse("all,static=raw,static=summary", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL);
  assert_int_equal(kv_prompt_blocks_parse("task,static=raw,-static", &m, err, sizeof err), 0);
  assert_int_equal(m, 1u << KV_PB_TASK);
  assert_int_equal(kv_prompt_blocks_parse("all,static=off", &m, err, sizeof err), 0);
  assert_int_equal(m, KV_PB_ALL & ~st);
  assert_int_equal(kv_prompt_blocks_parse("static=verbose", &m, err, sizeof err), -1);
  assert_non_null(strstr(err, "static=off, profile=summary or debug=raw"));
  assert_int_equal(kv_prompt_blocks_parse("history=raw", &m, err, sizeof err), -1);
  assert_non_null(strstr(err, "only static, profile and debug take a form"));
  /* profile and debug take the same forms. */
  unsigned pr = KV_PB_RAW(KV_PB_PROFILE), dr = KV_PB_RAW(KV_PB_DEBUG);
  unsigned pb = 1u << KV_PB_PROFILE, db = 1u << KV_PB_DEBUG;
  assert_int_equal(kv_prompt_blocks_parse("all,profile=raw,debug=off", &m, err, sizeof err), 0);
  assert_int_equal(m, (KV_PB_ALL & ~db) | pr);
  assert_int_equal(kv_prompt_blocks_parse("task,debug=raw,profile=summary", &m, err, sizeof err),
                   0);
  assert_int_equal(m, (1u << KV_PB_TASK) | db | dr | pb);
  assert_int_equal(kv_prompt_blocks_parse("debug", &m, err, sizeof err), 0);
  assert_int_equal(m, db);
}

/* The debug block (compute-sanitizer's findings) and the profile block's
 * Nsight Compute part: off, summary, raw, the analyze summary line; left out
 * without data. */
static void test_profile_debug_blocks(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_CRASH;
  snprintf(r->detail, sizeof r->detail, "at rows=7 cols=1001: illegal address");
  struct kv_prompt_ctx c = {0};
  c.task = t;
  c.surface = "cuda";
  c.parent_code = "__global__ void k() {}";
  c.parent = r;
  char err[512];
  unsigned db = 1u << KV_PB_DEBUG, pb = 1u << KV_PB_PROFILE;
  /* No sanitizer run: no debug block. */
  char *s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL, &c, err, sizeof err);
  assert_null(strstr(s, "## Debugger"));
  free(s);
  r->debug = calloc(1, sizeof *r->debug);
  snprintf(r->debug->tools, sizeof r->debug->tools, "memcheck");
  r->debug->nfindings = 1;
  struct kv_san_finding *f = &r->debug->f[0];
  snprintf(f->tool, sizeof f->tool, "memcheck");
  snprintf(f->kind, sizeof f->kind, "Invalid __global__ write of size 4 bytes");
  snprintf(f->kernel, sizeof f->kernel, "rowsum_oob");
  snprintf(f->file, sizeof f->file, "/tmp/x/candidate.cu");
  f->line = 13;
  f->count = 1;
  r->debug->raw = strdup("== memcheck\nRAW-REPORT-TEXT\n");
  s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "## Debugger: compute-sanitizer on one failing call (findings"));
  assert_non_null(strstr(s, "memcheck: Invalid __global__ write of size 4 bytes in rowsum_oob at "
                            "candidate.cu:13"));
  assert_null(strstr(s, "RAW-REPORT-TEXT"));
  free(s);
  s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL | KV_PB_RAW(KV_PB_DEBUG), &c, err, sizeof err);
  assert_non_null(strstr(s, "RAW-REPORT-TEXT"));
  assert_null(strstr(s, "in rowsum_oob at candidate.cu:13"));
  free(s);
  s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL & ~db, &c, err, sizeof err);
  assert_null(strstr(s, "## Debugger"));
  free(s);
  c.summary_mask = db;
  s = kv_prompt_build(p, KV_PK_DEBUG, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "## Debugger (summary)\n1 findings; the first: memcheck Invalid "
                            "__global__ write of size 4 bytes at line 13."));
  free(s);
  c.summary_mask = 0;
  /* The profile block: Nsight Compute's metrics beside ptxas's. */
  r->verdict = KV_V_OK;
  r->nkernels = 1;
  snprintf(r->kernels[0].name, sizeof r->kernels[0].name, "rowsum_rows");
  r->kernels[0].registers = 30;
  r->profile = calloc(1, sizeof *r->profile);
  r->profile->nkernels = 1;
  struct kv_ncu_kernel *k = &r->profile->k[0];
  snprintf(k->name, sizeof k->name, "rowsum_rows");
  k->mem_pct = 89.7;
  k->sm_pct = 31.6;
  k->achieved_occ = 91.4;
  k->theoretical_occ = 100;
  snprintf(k->top_stall, sizeof k->top_stall, "long_scoreboard");
  k->top_stall_cycles = 38.9;
  k->cpi = 44.2;
  r->profile->raw = strdup("NCU-DETAILS-PAGE\n");
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "- rowsum_rows: 30 registers"));
  assert_non_null(strstr(s, "SOL sm 32% mem 90%"));
  assert_non_null(strstr(s, "top stall long_scoreboard"));
  assert_null(strstr(s, "NCU-DETAILS-PAGE"));
  free(s);
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL | KV_PB_RAW(KV_PB_PROFILE), &c, err, sizeof err);
  assert_non_null(strstr(s, "NCU-DETAILS-PAGE"));
  assert_null(strstr(s, "SOL sm 32%"));
  free(s);
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL & ~pb, &c, err, sizeof err);
  assert_null(strstr(s, "## Profile"));
  free(s);
  c.summary_mask = pb;
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "Longest kernel: SOL memory 90%, compute 32%; occupancy 91%; top "
                            "stall long_scoreboard."));
  free(s);
  /* A profiler that refused: its note, never a failure. */
  c.summary_mask = 0;
  r->profile->nkernels = 0;
  snprintf(r->profile->note, sizeof r->profile->note, "not available: ERR_NVGPUCTRPERM");
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "Nsight Compute: not available: ERR_NVGPUCTRPERM"));
  free(s);
  kv_gate_result_release(r);
  free(r);
  kv_prompts_free(p);
  kv_task_free(t);
}

/* The static block: off, summary (kevo's mix per kernel), raw (the listing,
 * capped), the analyze summary line; left out without a mix. */
static void test_static_block(void **state) {
  (void)state;
  struct kv_task *t = rowsum();
  struct kv_prompts *p = defaults();
  struct kv_gate_result *r = calloc(1, sizeof *r);
  r->verdict = KV_V_OK;
  r->nkernels = 2;
  snprintf(r->kernels[0].name, sizeof r->kernels[0].name, "rowsum_vec");
  r->kernels[0].has_sass = 1;
  r->kernels[0].sass.total = 266;
  r->kernels[0].sass.ldg[KV_SASS_W128] = 29;
  r->kernels[0].sass.shfl = 10;
  snprintf(r->kernels[1].name, sizeof r->kernels[1].name, "rowsum_mma");
  r->kernels[1].has_sass = 1;
  r->kernels[1].sass.total = 809;
  r->kernels[1].sass.hmma = 24;
  r->kernels[1].sass.stl = 3;
  size_t big = 3 * KV_PROMPT_SASS_MAX;
  r->sass = malloc(big + 1);
  for (size_t i = 0; i < big; i += 40)
    snprintf(r->sass + i, big + 1 - i, "%-39s\n",
             i ? "        /*0010*/  LDG.E.128 R4 ;" : "\t\tFunction : rowsum_vec");
  struct kv_prompt_ctx c = {.task = t, .surface = "cuda", .parent_code = "CODE\n", .parent = r};
  unsigned st = 1u << KV_PB_STATIC, raw = KV_PB_RAW(KV_PB_STATIC);
  char err[512];
  /* off */
  char *s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL & ~st, &c, err, sizeof err);
  assert_non_null(s);
  assert_null(strstr(s, "Static analysis"));
  free(s);
  /* summary: kevo's rendering, after the profile block */
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(s);
  const char *b = strstr(s, "## Static analysis of the compiled kernel (instruction mix");
  assert_non_null(b);
  assert_true(b > strstr(s, "## Profile"));
  assert_non_null(strstr(b, "- rowsum_vec: 266 instr; global ld 128b:29;"));
  assert_non_null(strstr(b, "shfl 10"));
  assert_non_null(strstr(b, "- rowsum_mma: 809 instr;"));
  assert_non_null(strstr(b, "local ld 0 st 3; tensor hmma:24 imma:0 gmma:0;"));
  assert_null(strstr(s, "/*0010*/"));
  free(s);
  /* raw: the listing, capped at a line */
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL | raw, &c, err, sizeof err);
  assert_non_null(s);
  b = strstr(s, "## Static analysis of the compiled kernel (listing");
  assert_non_null(b);
  assert_non_null(strstr(b, "```\n\t\tFunction : rowsum_vec"));
  assert_non_null(strstr(b, "/*0010*/  LDG.E.128 R4 ;"));
  assert_non_null(strstr(b, "more bytes cut]"));
  assert_null(strstr(b, "- rowsum_vec: 266 instr"));
  assert_true(strlen(b) < KV_PROMPT_SASS_MAX + 1000);
  free(s);
  /* raw without a listing falls back to the mix */
  char *keep = r->sass;
  r->sass = NULL;
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL | raw, &c, err, sizeof err);
  assert_non_null(strstr(s, "- rowsum_vec: 266 instr"));
  free(s);
  r->sass = keep;
  /* kevo analyze's one-line summary */
  c.summary_mask = st;
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
  assert_non_null(strstr(s, "## Static analysis (summary)\n2 kernels; 128-bit loads or stores: "
                            "yes; tensor-core instructions: yes; local memory: yes."));
  free(s);
  c.summary_mask = 0;
  /* no mix (a cpu candidate, or cuobjdump not available): left out */
  r->kernels[0].has_sass = r->kernels[1].has_sass = 0;
  s = kv_prompt_build(p, KV_PK_REFINE, KV_PB_ALL | raw, &c, err, sizeof err);
  assert_null(strstr(s, "Static analysis"));
  free(s);
  free(r->sass);
  free(r);
  kv_prompts_free(p);
  kv_task_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torch_surface),
      cmocka_unit_test(test_static_mask),
      cmocka_unit_test(test_static_block),
      cmocka_unit_test(test_profile_debug_blocks),
      cmocka_unit_test(test_mask_parse),
      cmocka_unit_test(test_task_only),
      cmocka_unit_test(test_allowed_libraries),
      cmocka_unit_test(test_all_blocks_in_order_and_switchable),
      cmocka_unit_test(test_feedback_compile_and_correctness),
      cmocka_unit_test(test_override_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
