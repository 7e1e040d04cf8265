/* kevo import: KernelBench-style PyTorch modules to task directories, in
 * parallel, with a progress line and a summary grouped by cause. */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/import.h"
#include "kevo/task.h"
#include "kevo/util.h"

#define MAX_MODULES 4096

struct job {
  char path[PATH_MAX];
  char outdir[PATH_MAX];
  struct kv_import_result r;
  int failed; /* kevo itself could not run it: err */
  char err[1024];
};

struct pool {
  struct job *jobs;
  int n, next, done, imported, skipped;
  int tty;
  int fatal; /* stop handing out work */
  const struct kv_import_opts *o;
  pthread_mutex_t mu;
};

static void progress(struct pool *p, const struct job *j) {
  if (p->tty) {
    fprintf(stderr, "\r\033[K[%d/%d] imported %d, skipped %d: %s", p->done, p->n, p->imported,
            p->skipped, j->r.name);
    if (p->done == p->n)
      fputc('\n', stderr);
  } else if (j->failed) {
    fprintf(stderr, "[%d/%d] %s: kevo could not import it: %s\n", p->done, p->n, j->r.name, j->err);
  } else if (j->r.ok) {
    fprintf(stderr, "[%d/%d] %s: imported -> %s (%.1f s)\n", p->done, p->n, j->r.name,
            j->r.task_dir, j->r.seconds);
  } else {
    fprintf(stderr, "[%d/%d] %s: skipped (%s, %.1f s): %s\n", p->done, p->n, j->r.name, j->r.cause,
            j->r.seconds, j->r.detail);
  }
  fflush(stderr);
}

static void *worker(void *arg) {
  struct pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int i = p->fatal ? p->n : p->next++;
    pthread_mutex_unlock(&p->mu);
    if (i >= p->n)
      return NULL;
    struct job *j = &p->jobs[i];
    if (kv_import_module(p->o, j->path, j->outdir, &j->r, j->err, sizeof j->err) < 0)
      j->failed = 1;
    pthread_mutex_lock(&p->mu);
    p->done++;
    if (j->failed)
      p->fatal = 1;
    else if (j->r.ok)
      p->imported++;
    else
      p->skipped++;
    progress(p, j);
    pthread_mutex_unlock(&p->mu);
  }
}

/* KernelBench names files "1_...", "2_...", "10_...": order by the leading
 * number, then by name. */
static int by_number(const void *a, const void *b) {
  const struct job *x = a, *y = b;
  const char *bx = strrchr(x->path, '/'), *by = strrchr(y->path, '/');
  bx = bx ? bx + 1 : x->path;
  by = by ? by + 1 : y->path;
  long nx = strtol(bx, NULL, 10), ny = strtol(by, NULL, 10);
  if (strcmp(x->outdir, y->outdir))
    return strcmp(x->outdir, y->outdir);
  if (nx != ny)
    return nx < ny ? -1 : 1;
  return strcmp(bx, by);
}

static int add_job(struct job *jobs, int *n, const char *path, const char *outdir) {
  if (*n >= MAX_MODULES)
    return cli_fail("import: more than %d modules; import them in several calls", MAX_MODULES);
  struct job *j = &jobs[(*n)++];
  memset(j, 0, sizeof *j);
  if (snprintf(j->path, sizeof j->path, "%s", path) >= (int)sizeof j->path ||
      snprintf(j->outdir, sizeof j->outdir, "%s", outdir) >= (int)sizeof j->outdir)
    return cli_fail("%s: path too long", path);
  kv_import_task_name(path, j->r.name, sizeof j->r.name);
  return 0;
}

struct cause_group {
  char cause[32];
  int count;
};

/* The one task imported: the entry a candidate defines on each surface. */
static void print_entry(const struct job *jobs, int n) {
  for (int i = 0; i < n; i++) {
    struct kv_task *t;
    char err[512];
    if (!jobs[i].r.ok || kv_task_load(jobs[i].r.task_dir, &t, err, sizeof err) < 0)
      continue;
    char *c = cli_entry_declaration(t, "cpu"), *cu = cli_entry_declaration(t, "cuda");
    if (c && cu)
      printf("a candidate of %s defines, on the cpu surface (C):\n%son the cuda surface:\n%s"
             "(%s/README.md has the whole header; kevo task starter %s writes a minimal "
             "correct candidate)\n",
             t->name, c, cu, jobs[i].r.task_dir, jobs[i].r.task_dir);
    free(c);
    free(cu);
    kv_task_free(t);
  }
}

int cmd_import(int argc, char **argv) {
  struct kv_import_opts o;
  kv_import_opts_default(&o);
  const char *outdir = ".";
  double jobs_d = 0, v;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1)
    ncpu = 1;
  int first_arg = 0;
  int64_t device_memory = 0;
  const char **args = calloc((size_t)argc, sizeof *args);
  if (!args)
    return cli_fail("out of memory");
  int nargs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "-o") && more)
      outdir = argv[++i];
    else if (!strcmp(a, "--jobs") && more) {
      if (cli_number("--jobs", argv[++i], &jobs_d) != 0 || jobs_d != (int)jobs_d || jobs_d > 64) {
        free(args);
        return cli_fail("--jobs: give a whole number from 1 to 64");
      }
    } else if (!strcmp(a, "--deadline") && more) {
      if (cli_number("--deadline", argv[++i], &o.deadline_s) != 0) {
        free(args);
        return 2;
      }
    } else if (!strcmp(a, "--max-gib") && more) {
      if (cli_number("--max-gib", argv[++i], &v) != 0 || v > 1024) {
        free(args);
        return cli_fail("--max-gib: give a number of GiB from 0 to 1024");
      }
      o.max_bytes = (int64_t)(v * (double)(1 << 30));
    } else if (!strcmp(a, "--device-memory") && more) {
      if (cli_number("--device-memory", argv[++i], &v) != 0 || v < 1 || v > 65536) {
        free(args);
        return cli_fail("--device-memory: give the device's memory in GiB, from 1 to 65536 "
                        "(80 for an H100, 141 for an H200)");
      }
      device_memory = (int64_t)(v * (double)(1 << 30));
    } else if (!strcmp(a, "--allow") && more) {
      char aerr[512];
      if (kv_import_parse_allow(&o, argv[++i], "--allow", aerr, sizeof aerr) < 0) {
        free(args);
        return cli_fail("%s", aerr);
      }
    } else if (!strcmp(a, "--python") && more)
      o.python = argv[++i];
    else if (!strcmp(a, "--force"))
      o.force = 1;
    else if (!strcmp(a, "--") && !first_arg)
      first_arg = 1;
    else if (a[0] == '-' && !first_arg) {
      free(args);
      cli_fail("import: unknown or incomplete option '%s'", a);
      return cli_usage("import");
    } else
      args[nargs++] = a;
  }
  if (!nargs) {
    free(args);
    cli_fail("import: needs at least one FILE.py or directory of them");
    return cli_usage("import");
  }
  /* The byte caps come from the device's memory: --device-memory, else
   * KEVO_DEVICE_MEMORY_GIB, else this machine's GPU where it has less than
   * kevo assumes (an H100's), else that. */
  const char *from;
  int64_t gpu;
  if (device_memory)
    kv_task_set_device_memory(device_memory);
  else if (kv_task_device_memory(&from) == KV_DEFAULT_DEVICE_MEMORY &&
           strcmp(from, "KEVO_DEVICE_MEMORY_GIB") && kv_import_gpu_memory(&gpu) == 0 &&
           gpu < KV_DEFAULT_DEVICE_MEMORY)
    kv_task_set_device_memory(gpu);
  char helper[PATH_MAX], err[1024];
  if (kv_import_find_helper(helper, sizeof helper, err, sizeof err) < 0) {
    free(args);
    return cli_fail("%s", err);
  }
  o.helper = helper;
  struct job *jobs = calloc(MAX_MODULES, sizeof *jobs);
  if (!jobs) {
    free(args);
    return cli_fail("out of memory");
  }
  int n = 0, rc = 0;
  for (int k = 0; k < nargs && !rc; k++) {
    struct stat st;
    if (stat(args[k], &st) != 0) {
      rc = cli_fail("%s: not found; pass a .py module or a directory of them", args[k]);
      break;
    }
    if (!S_ISDIR(st.st_mode)) {
      rc = add_job(jobs, &n, args[k], outdir);
      continue;
    }
    /* A directory: every *.py in it, into OUTDIR/<its name>/. */
    char sub[PATH_MAX], base[PATH_MAX];
    snprintf(base, sizeof base, "%s", args[k]);
    size_t bl = strlen(base);
    while (bl > 1 && base[bl - 1] == '/')
      base[--bl] = 0;
    const char *dn = strrchr(base, '/');
    dn = dn ? dn + 1 : base;
    if (!strcmp(dn, ".") || !strcmp(dn, ".."))
      snprintf(sub, sizeof sub, "%s", outdir);
    else
      snprintf(sub, sizeof sub, "%s/%s", outdir, dn);
    DIR *d = opendir(args[k]);
    if (!d) {
      rc = cli_fail("%s: cannot open the directory", args[k]);
      break;
    }
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !rc) {
      size_t l = strlen(e->d_name);
      if (l < 4 || strcmp(e->d_name + l - 3, ".py") || e->d_name[0] == '.')
        continue;
      char p[PATH_MAX];
      if (snprintf(p, sizeof p, "%s/%s", base, e->d_name) >= (int)sizeof p)
        continue;
      rc = add_job(jobs, &n, p, sub);
      found++;
    }
    closedir(d);
    if (!rc && !found)
      rc = cli_fail("%s: no *.py module in it", args[k]);
  }
  free(args);
  if (rc) {
    free(jobs);
    return rc;
  }
  qsort(jobs, (size_t)n, sizeof *jobs, by_number);
  /* Two modules of one call may not write the same task directory. */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < i; k++)
      if (!strcmp(jobs[i].outdir, jobs[k].outdir) && !strcmp(jobs[i].r.name, jobs[k].r.name)) {
        cli_fail("%s and %s both make the task %s/%s; import them into different -o directories",
                 jobs[k].path, jobs[i].path, jobs[i].outdir, jobs[i].r.name);
        free(jobs);
        return 2;
      }
  int nj = jobs_d > 0 ? (int)jobs_d : (int)(ncpu < 8 ? ncpu : 8);
  if (nj > n)
    nj = n;
  o.threads = (int)(ncpu / nj) > 0 ? (int)(ncpu / nj) : 1;
  struct pool p = {.jobs = jobs, .n = n, .o = &o, .tty = isatty(2)};
  pthread_mutex_init(&p.mu, NULL);
  double t0 = kv_now_s();
  pthread_t th[64];
  int started = 0;
  for (int i = 0; i < nj; i++)
    if (pthread_create(&th[i], NULL, worker, &p) == 0)
      started++;
  if (!started)
    worker(&p);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.mu);
  double wall = kv_now_s() - t0;

  for (int i = 0; i < n; i++)
    if (jobs[i].failed) {
      cli_fail("%s", jobs[i].err);
      free(jobs);
      return 2;
    }
  /* Summary: imported, and skipped grouped by cause. */
  double sum = 0, mx = 0;
  for (int i = 0; i < n; i++) {
    sum += jobs[i].r.seconds;
    if (jobs[i].r.seconds > mx)
      mx = jobs[i].r.seconds;
  }
  printf("kevo import: %d of %d modules imported, %d skipped, in %.1f s (%.1f s per module on "
         "average, %.1f s at most; %d at a time)\n",
         p.imported, n, p.skipped, wall, n ? sum / n : 0, mx, nj);
  char note[256];
  kv_task_cap_note(note, sizeof note);
  printf("byte caps: each size set's buffers at most %.1f GiB, %s\n",
         (double)kv_task_max_set_bytes() / (1 << 30), note);
  struct cause_group g[64];
  int ng = 0;
  for (int i = 0; i < n; i++) {
    if (jobs[i].r.ok)
      continue;
    int k = 0;
    while (k < ng && strcmp(g[k].cause, jobs[i].r.cause))
      k++;
    if (k == ng && ng < (int)KV_ARRAY_LEN(g)) {
      snprintf(g[ng].cause, sizeof g[ng].cause, "%s", jobs[i].r.cause);
      g[ng++].count = 0;
    }
    if (k < ng)
      g[k].count++;
  }
  for (int k = 0; k < ng; k++) {
    printf("skipped, %s (%d):\n", g[k].cause, g[k].count);
    for (int i = 0; i < n; i++)
      if (!jobs[i].r.ok && !strcmp(jobs[i].r.cause, g[k].cause))
        printf("  %s\n", jobs[i].r.detail);
  }
  if (p.imported)
    printf("tasks written under %s\n", outdir);
  if (p.imported == 1)
    print_entry(jobs, n);
  else if (p.imported)
    printf("each task's README.md shows the entry a candidate defines and a minimal correct "
           "candidate (kevo task starter DIR writes one)\n");
  /* Nothing imported because this Python has no torch: kevo could not try
   * (exit 2, as with no Python), not modules that failed. */
  int code = p.skipped ? 1 : 0;
  if (n > 0 && ng == 1 && !p.imported && !strcmp(g[0].cause, "no_torch"))
    code = 2;
  free(jobs);
  return code;
}
