/* Compile time alone, kernel-only (NVRTC, kevo-nvrtc sandboxed) against
 * host-entry (nvcc: candidate object, shared object, and the static
 * analysis both get), no GPU needed: each example's good.cu and good_k.cu
 * built the way the gate builds them, as new candidates (a unique comment;
 * the task's call shim cached), RUNS times each, cold cache directory; then
 * N tune-like variants (#defines first) built at once by the compile pool.
 * Prints markdown tables (bench/verdict_latency.py measures source to verdict
 * on a GPU).
 * usage: bench_nvrtc_compile SOURCE_DIR [RUNS] [VARIANTS]   (KEVO_CUDA_ARCH defaults to sm_90) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/gate/internal.h"
#include "env_opts.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SOURCE_DIR [RUNS] [VARIANTS]\n", argv[0]);
    return 2;
  }
  const char *src = argv[1];
  int runs = argc > 2 ? atoi(argv[2]) : 3, nvar = argc > 3 ? atoi(argv[3]) : 16;
  if (runs < 1 || runs > 50 || nvar < 1 || nvar > 256)
    return fprintf(stderr, "RUNS 1..50, VARIANTS 1..256\n"), 2;
  setenv("KEVO_CUDA_ARCH", getenv("KEVO_CUDA_ARCH") ? getenv("KEVO_CUDA_ARCH") : "sm_90", 1);
  char cache[PATH_MAX], err[2048];
  snprintf(cache, sizeof cache, "/tmp/kevo-bench-nvrtc-%d", (int)getpid());
  if (kv_mkdirs(cache, 0700, err, sizeof err) < 0)
    return fprintf(stderr, "%s\n", err), 1;
  static const char *ex[] = {"rowsum", "softmax", "layernorm", "transpose", "matmul", "conv1d"};
  double med[2][6];
  printf("| task | nvcc s (good.cu) | NVRTC s (good_k.cu) | ratio |\n|---|---|---|---|\n");
  for (int e = 0; e < 6; e++) {
    char dir[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s/examples/tasks/%s", src, ex[e]);
    struct kv_task *t;
    if (kv_task_load(dir, &t, err, sizeof err) != 0)
      return fprintf(stderr, "%s\n", err), 1;
    for (int form = 0; form < 2; form++) {
      double s[50];
      char in[PATH_MAX * 3];
      snprintf(in, sizeof in, "%s/%s", dir, form ? "good_k.cu" : "good.cu");
      char *text = NULL;
      size_t len = 0;
      if (kv_read_file(in, 1 << 20, &text, &len, err, sizeof err) < 0)
        return fprintf(stderr, "%s\n", err), 1;
      for (int r = -1; r < runs; r++) { /* r = -1: builds the shim, not counted */
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/%s-%d-%d.cu", cache, ex[e], form, r);
        char *v = malloc(len + 64);
        int vl = snprintf(v, len + 64, "%s\n// bench %d %d\n", text, r, (int)getpid());
        kv_write_file(p, v, (size_t)vl, err, sizeof err);
        free(v);
        struct kv_build b;
        if (kv_build_cuda(t, env_opts(), p, cache, 300, &b, err, sizeof err) != 0 || !b.ok)
          return fprintf(stderr, "%s: %s\n%s\n", in, err, b.log ? b.log : ""), 1;
        if (r >= 0)
          s[r] = b.seconds;
        kv_build_release(&b);
      }
      free(text);
      med[form][e] = median(s, runs);
    }
    printf("| %s | %.3f | %.3f | %.1fx |\n", ex[e], med[0][e], med[1][e], med[0][e] / med[1][e]);
    fflush(stdout);
    kv_task_free(t);
  }
  printf("| median | %.3f | %.3f | %.1fx |\n", median(med[0], 6), median(med[1], 6),
         median(med[0], 6) / median(med[1], 6));
  /* Tune-like variants built at once by the compile pool. */
  char dir[PATH_MAX * 2];
  snprintf(dir, sizeof dir, "%s/tests/gpu/rowsum", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    return fprintf(stderr, "%s\n", err), 1;
  printf("\n| %d variants at once (compile pool, %ld cores) | wall s | variants/min "
         "|\n|---|---|---|\n",
         nvar, sysconf(_SC_NPROCESSORS_ONLN));
  for (int form = 0; form < 2; form++) {
    char in[PATH_MAX * 3];
    snprintf(in, sizeof in, "%s/bench/nvrtc/%s", src, form ? "rowsum_tune_k.cu" : "rowsum_tune.cu");
    char *text = NULL;
    size_t len = 0;
    if (kv_read_file(in, 1 << 20, &text, &len, err, sizeof err) < 0)
      return fprintf(stderr, "%s\n", err), 1;
    struct kv_build_job *jobs = calloc((size_t)nvar, sizeof *jobs);
    char(*paths)[PATH_MAX + 64] = calloc((size_t)nvar, sizeof *paths);
    for (int i = 0; i < nvar; i++) {
      snprintf(paths[i], sizeof paths[i], "%s/tune-%d-%d.cu", cache, form, i);
      char *v = malloc(len + 128);
      int vl = snprintf(v, len + 128, "#define WARPS %d\n#define UNROLL %d\n// %d\n#line 1\n%s",
                        1 << (i % 5), 1 << ((i / 5) % 4), i, text);
      kv_write_file(paths[i], v, (size_t)vl, err, sizeof err);
      free(v);
      jobs[i].t = t;
      jobs[i].src = paths[i];
      jobs[i].o = env_opts();
      jobs[i].cache_dir = cache;
      jobs[i].deadline_s = 300;
    }
    double t0 = kv_now_s();
    kv_build_pool(kv_build_cuda, jobs, nvar);
    double w = kv_now_s() - t0;
    int ok = 0;
    for (int i = 0; i < nvar; i++) {
      ok += jobs[i].rc == 0 && jobs[i].b.ok;
      kv_build_release(&jobs[i].b);
    }
    printf("| %s (%d/%d built) | %.2f | %.0f |\n", form ? "NVRTC" : "nvcc", ok, nvar, w,
           nvar / w * 60);
    free(jobs);
    free(paths);
    free(text);
  }
  kv_task_free(t);
  kv_rmtree(cache);
  return 0;
}
