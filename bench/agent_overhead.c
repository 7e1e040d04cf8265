/* Orchestrator overhead of the ada search, without LLM latency or gate time:
 * a synthetic run of N nodes (default 10000) where each step selects (UCB),
 * samples a pool when the step is large, builds the prompt (task, parent,
 * feedback, history) and records the source and the node in a store, with a
 * fake verdict and speedup. Prints the mean and p99 time per step and the
 * peak resident memory.
 *   bench_agent [N] [DB]   (DB default: a temporary file, removed) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../lib/agent/internal.h"
#include "kevo/prompt.h"
#include "kevo/util.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000;
  char db[256];
  snprintf(db, sizeof db, "%s", argc > 2 ? argv[2] : "/tmp/kevo-bench-agent.db");
  unlink(db);
  char err[1024];
  struct kv_task *t;
  if (kv_task_load(KEVO_SOURCE_DIR "/examples/tasks/rowsum", &t, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  struct kv_store *st;
  struct kv_prompts *p;
  if (kv_store_open(db, &st, err, sizeof err) < 0 || kv_prompts_load(NULL, &p, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  int64_t task_id, run_id;
  kv_store_put_task(st, "rowsum", t->dir, "bench", t->json, &task_id, err, sizeof err);
  kv_store_run_create(st, task_id, "ada", "{}", &run_id, err, sizeof err);
  struct kva_ada_node *tree = calloc((size_t)n, sizeof *tree);
  int64_t *ids = calloc((size_t)n, sizeof *ids);
  double *dt = calloc((size_t)n, sizeof *dt);
  char code[2048];
  memset(code, 'x', sizeof code - 2);
  code[sizeof code - 2] = '\n';
  code[sizeof code - 1] = 0;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  uint64_t rng = 1;
  for (int i = 0; i < n; i++) {
    double t0 = kv_now_s();
    int at = kva_ada_select(tree, i, 1.0);
    int large = at < 0 || kva_ada_uniform(&rng) < 0.3 || tree[at].small >= 4;
    int pool[3], np = 0;
    if (large)
      np = kva_ada_pool(tree, i, 3, &rng, pool);
    struct kv_prompt_attempt hist[11];
    int nh = 0;
    for (int k = 0; k < np; k++)
      hist[nh++] = (struct kv_prompt_attempt){pool[k], "large", "ok", 1.5, code};
    for (int k = i - 1; k >= 0 && k >= i - 8; k--)
      hist[nh++] = (struct kv_prompt_attempt){k, "refine", "ok", 1.2, NULL};
    r->verdict = KV_V_WRONG_OUTPUT;
    r->nchecks = 0;
    struct kv_prompt_ctx c = {.task = t,
                              .surface = "cpu",
                              .reference = code,
                              .parent_code = large ? NULL : code,
                              .parent = large ? NULL : r,
                              .history = hist,
                              .nhistory = nh};
    char *text =
        kv_prompt_build(p, large ? KV_PK_WRITE : KV_PK_REFINE, KV_PB_ALL, &c, err, sizeof err);
    free(text);
    /* A fake judgement, recorded as the real loop records it. */
    int verdict = (int)(kva_ada_rand(&rng) % 3) == 0 ? KV_V_WRONG_OUTPUT : KV_V_OK;
    double speedup = verdict == KV_V_OK ? 0.5 + kva_ada_uniform(&rng) * 3 : -1;
    char hash[65], src[64];
    snprintf(src, sizeof src, "kernel %d", i);
    kv_sha256_hex(src, strlen(src), hash);
    kv_store_put_source(st, hash, src, strlen(src), err, sizeof err);
    struct kv_node_record nr = {.run_id = run_id,
                                .parent_id = large ? 0 : ids[at],
                                .step = i,
                                .source_hash = hash,
                                .action = large ? "large" : "refine",
                                .verdict = kv_verdict_name(verdict),
                                .speedup = speedup,
                                .reward = kva_ada_reward(verdict, speedup)};
    if (kv_store_node_add(st, &nr, &ids[i], err, sizeof err) < 0) {
      fprintf(stderr, "%s\n", err);
      return 1;
    }
    tree[i] = (struct kva_ada_node){.parent = large ? -1 : at,
                                    .chain = large ? i : tree[at].chain,
                                    .small = large ? 0 : tree[at].small + 1,
                                    .has_code = 1,
                                    .reward = nr.reward};
    kva_ada_backprop(tree, i);
    dt[i] = kv_now_s() - t0;
  }
  double sum = 0, last = 0;
  for (int i = 0; i < n; i++)
    sum += dt[i];
  for (int i = n - n / 10; i < n; i++)
    last += dt[i];
  qsort(dt, (size_t)n, sizeof *dt, cmp);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("nodes %d: mean %.3f ms/step, last 10%% %.3f ms/step, p99 %.3f ms, peak RSS %.1f MiB\n", n,
         1e3 * sum / n, 1e3 * last / (n / 10 ? n / 10 : 1), 1e3 * dt[n * 99 / 100],
         ru.ru_maxrss / 1024.0);
  kv_store_close(st);
  kv_prompts_free(p);
  kv_task_free(t);
  free(tree);
  free(ids);
  free(dt);
  free(r);
  if (argc <= 2)
    unlink(db);
  return 0;
}
