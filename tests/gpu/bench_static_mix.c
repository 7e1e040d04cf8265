/* The static instruction mix (kevo/sass.h) of each example's starter and
 * good CUDA kernels, built the way the gate builds them (nvcc, then
 * cuobjdump -sass of the candidate's own object), as a markdown table: no
 * GPU needed, only the toolkit (KEVO_CUDA_ARCH defaults to sm_90).
 * usage: bench_static_mix SOURCE_DIR   (BENCHMARKS.md, issue 10) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/gate/internal.h"
#include "env_opts.h"
#include "kevo/sass.h"
#include "kevo/task.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SOURCE_DIR\n", argv[0]);
    return 2;
  }
  setenv("KEVO_CUDA_ARCH", getenv("KEVO_CUDA_ARCH") ? getenv("KEVO_CUDA_ARCH") : "sm_90", 1);
  char cache[PATH_MAX], err[2048];
  snprintf(cache, sizeof cache, "/tmp/kevo-bench-mix-%d", (int)getpid());
  if (kv_mkdirs(cache, 0700, err, sizeof err) < 0)
    return fprintf(stderr, "%s\n", err), 1;
  static const char *ex[] = {"conv1d", "layernorm", "matmul", "rowsum", "softmax", "transpose"};
  static const char *kinds[] = {"starter", "good"};
  printf("| task | kernel | cuda kernel | registers | static mix |\n|---|---|---|---|---|\n");
  int rc = 0;
  for (int e = 0; e < 6; e++) {
    char dir[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "%s/examples/tasks/%s", argv[1], ex[e]);
    struct kv_task *t;
    if (kv_task_load(dir, &t, err, sizeof err) != 0)
      return fprintf(stderr, "%s\n", err), 1;
    for (int k = 0; k < 2; k++) {
      char in[PATH_MAX * 3];
      snprintf(in, sizeof in, "%s/%s.cu", dir, kinds[k]);
      struct kv_build b;
      if (kv_build_cuda(t, env_opts(), in, cache, 300, &b, err, sizeof err) != 0 || !b.ok) {
        fprintf(stderr, "%s: %s\n%s\n", in, err, b.log ? b.log : "");
        rc = 1;
        continue;
      }
      if (b.static_note[0] || b.nkernels == 0)
        printf("| %s | %s | | | %s |\n", ex[e], kinds[k], b.static_note);
      for (int i = 0; i < b.nkernels; i++) {
        char line[512] = "";
        if (b.kernels[i].has_sass)
          kv_sass_mix_line(&b.kernels[i].sass, line, sizeof line);
        printf("| %s | %s | `%.60s` | %d | %s |\n", ex[e], kinds[k], b.kernels[i].name,
               b.kernels[i].registers, line[0] ? line : b.static_note);
      }
      kv_build_release(&b);
    }
    kv_task_free(t);
  }
  kv_rmtree(cache);
  return rc;
}
