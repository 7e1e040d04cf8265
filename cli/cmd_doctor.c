/* kevo doctor: what kevo needs, and what protects a run. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/gate/internal.h" /* the compile caps, the object cache's cap, the lock dir */
#include "cli.h"
#include "kevo/store.h"
#include "kevo/util.h"

static int version_of(const char *cmd, const char *flag, char *out, size_t cap) {
  char *argv[] = {(char *)cmd, (char *)flag, NULL};
  struct kv_buf b;
  kv_buf_init(&b, 4096);
  struct kv_proc_result r;
  char err[256];
  int ok = kv_run(argv, NULL, NULL, 10, NULL, NULL, &b, &r, err, sizeof err) == 0 && r.exited &&
           r.status == 0;
  const char *line = b.data ? b.data : "";
  if (ok && !strcmp(cmd, "nvcc")) {
    const char *rel = strstr(line, "release");
    if (rel)
      line = rel;
  }
  snprintf(out, cap, "%.*s", (int)strcspn(line, "\n"), line);
  kv_buf_release(&b);
  return ok ? 0 : -1;
}

/* ---- every child kevo runs: its sandbox, probed ---- */

/* Runs argv (scrubbed environment, HOME and TMPDIR the probe's scratch) and
 * keeps its output in out. 0 when it exited 0. */
static int probe_run(char **argv, const char *scratch, char *out, size_t cap) {
  char home[PATH_MAX + 8], tmp[PATH_MAX + 8], err[256];
  snprintf(home, sizeof home, "HOME=%s", scratch);
  snprintf(tmp, sizeof tmp, "TMPDIR=%s", scratch);
  char *envp[] = {"PATH=/usr/bin:/bin", home, tmp, "LANG=C", "CUDA_VISIBLE_DEVICES=", NULL};
  struct kv_buf b;
  kv_buf_init(&b, 16384);
  struct kv_proc_result r;
  int ok = kv_run(argv, envp, scratch, 60, NULL, NULL, &b, &r, err, sizeof err) == 0 && r.exited &&
           r.status == 0;
  snprintf(out, cap, "%.*s", (int)strcspn(b.data ? b.data : "", "\n"), b.data ? b.data : "");
  if (!ok && !out[0])
    snprintf(out, cap, "%s", err[0] ? err : "it failed");
  kv_buf_release(&b);
  return ok ? 0 : -1;
}

/* kevo-sandbox (the compilers' and the import/synthesize helper's): a shell
 * inside it reports no_new_privs, seccomp, its network interfaces, whether
 * it can write beside its scratch and its CPU limit. */
static void probe_kevo_sandbox(const char *base, char *line, size_t cap) {
  char sbx[PATH_MAX], scratch[PATH_MAX + 16], out[512];
  const char *e = getenv("KEVO_SANDBOX");
  if (e && *e)
    snprintf(sbx, sizeof sbx, "%s", e);
  else if (kv_find_shipped("kevo-sandbox", NULL, 0, sbx, sizeof sbx) < 0) {
    snprintf(line, cap, "kevo-sandbox NOT FOUND beside kevo (rebuild kevo)");
    return;
  }
  snprintf(scratch, sizeof scratch, "%s/s", base);
  mkdir(scratch, 0700);
  char *argv[] = {sbx, scratch, "10", "0", "--", "/bin/sh", "-c",
                  /* builtins only: /proc/self of a child would be another process's */
                  "p=; while read -r k v r; do case $k in NoNewPrivs:|Seccomp:) p=\"$p$k$v \";; "
                  "esac; done </proc/$$/status; n=0; while read -r l; do n=$((n+1)); done "
                  "</proc/$$/net/dev; if (: >../outside) 2>/dev/null; then w=open; else w=closed; "
                  "fi; echo \"$p net=$((n-2)) write=$w cpu=$(ulimit -t)\"",
                  NULL};
  if (probe_run(argv, scratch, out, sizeof out) < 0) {
    snprintf(line, cap, "kevo-sandbox FAILED: %s", out);
    return;
  }
  snprintf(line, cap, "netns %s, no_new_privs %s, landlock %s, rlimits %s, seccomp %s",
           strstr(out, "net=1 ") ? "active" : "UNAVAILABLE",
           strstr(out, "NoNewPrivs:1") ? "active" : "UNAVAILABLE",
           strstr(out, "write=closed") ? "active" : "UNAVAILABLE",
           strstr(out, "cpu=10") ? "active" : "UNAVAILABLE",
           strstr(out, "Seccomp:0") ? "off" : "active");
}

/* The torch reference worker's two stages (kevo_torch_worker.py), applied to
 * a Python process that then tries to write beside its scratch. */
static void probe_torch(const char *base, char *line, size_t cap) {
  char script[PATH_MAX], dir[PATH_MAX], py[PATH_MAX], scratch[PATH_MAX + 16], out[1024];
  if (kv_find_shipped("kevo_torch_worker.py", NULL, 1, script, sizeof script) < 0) {
    snprintf(line, cap, "kevo_torch_worker.py not found (rebuild kevo)");
    return;
  }
  if (kv_which(kv_python(), py, sizeof py) < 0) {
    snprintf(line, cap, "not tried: no %s (set KEVO_PYTHON)", kv_python());
    return;
  }
  snprintf(dir, sizeof dir, "%s", script);
  *strrchr(dir, '/') = 0;
  snprintf(scratch, sizeof scratch, "%s/t", base);
  mkdir(scratch, 0700);
  char *argv[] = {py,
                  "-B",
                  "-c",
                  "import sys, os, json\n"
                  "sys.path.insert(0, sys.argv[1]); s = sys.argv[2]\n"
                  "import kevo_torch_worker as w\n"
                  "st = {'netns': 'off', 'landlock': 'off', 'seccomp': 'off', 'landlock_abi': 0}\n"
                  "why = w.sb_start(st, [])\n"
                  "if why: st['refused'] = why\n"
                  "else:\n"
                  "  w.sb_lock(st, [], s, s, [], False)\n"
                  "  try: open(os.path.join(s, '..', 'outside'), 'w'); st['write'] = 'open'\n"
                  "  except OSError: st['write'] = 'closed'\n"
                  "print(json.dumps(st))\n",
                  dir,
                  scratch,
                  NULL};
  if (probe_run(argv, scratch, out, sizeof out) < 0) {
    snprintf(line, cap, "FAILED: %s", out);
    return;
  }
  json_t *j = json_loads(out, 0, NULL);
#define S(k)                                                                                       \
  (json_string_value(json_object_get(j, k)) ? json_string_value(json_object_get(j, k)) : "?")
  if (json_object_get(j, "refused"))
    snprintf(line, cap, "REFUSES to run: %s", S("refused"));
  else
    snprintf(line, cap,
             "netns %s, no_new_privs %s, rlimits %s (memory %lld GiB) at start; at the first "
             "LOAD landlock %s (ABI %d, writes beside scratch %s), seccomp %s",
             S("netns"), S("no_new_privs"), S("rlimits"),
             (long long)json_integer_value(json_object_get(j, "data_limit_bytes")) >> 30,
             S("landlock"), (int)json_integer_value(json_object_get(j, "landlock_abi")), S("write"),
             S("seccomp"));
#undef S
  json_decref(j);
}

static void children(const struct kv_probe *p, int probed) {
  printf("sandbox of every child kevo runs\n");
  char worker[256] = "not probed (see above)";
  if (probed)
    snprintf(worker, sizeof worker,
             "netns %s, no_new_privs %s, landlock %s, seccomp %s, rlimits %s, scratch %s",
             kv_layer_state_name(p->layers.netns), kv_layer_state_name(p->layers.no_new_privs),
             kv_layer_state_name(p->layers.landlock), kv_layer_state_name(p->layers.seccomp),
             kv_layer_state_name(p->layers.rlimits), kv_layer_state_name(p->layers.scratch));
  printf("  candidate worker        %s, exec_lock %s\n", worker,
         probed ? kv_layer_state_name(p->layers.exec_lock) : "?");
  printf("  reference worker        %s, exec_lock off (it runs the task's own objects)\n", worker);
  char base[PATH_MAX], err[256], sbx[512], torch[1024];
  const char *tmp = getenv("TMPDIR");
  if (kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-doctor", base, sizeof base, err, sizeof err) <
      0) {
    printf("  (no temporary directory for the probes: %s)\n", err);
    return;
  }
  probe_kevo_sandbox(base, sbx, sizeof sbx);
  probe_torch(base, torch, sizeof torch);
  kv_rmtree(base);
  printf("  compilers               %s (the compiler driver runs cc1, as and ld)\n", sbx);
  printf("  import/synth helper     %s (Python and torch start processes)\n", sbx);
  printf("  torch reference worker  %s\n", torch);
}

static void limits(void) {
  struct kv_compile_caps c;
  kv_compile_caps_get(&c);
  printf("limits\n");
  printf("  compilers     memory %llu MiB, CPU %d s each (KEVO_COMPILE_MEM_MB, "
         "KEVO_COMPILE_CPU_S)\n",
         c.mem_mb, c.cpu_s);
  printf("  object cache  at most %llu MiB (KEVO_CACHE_MAX_MB)\n", kv_obj_cap_bytes() >> 20);
  char dir[PATH_MAX], err[1024];
  if (kv_devlock_dir(dir, sizeof dir, err, sizeof err) < 0)
    printf("  lock dir      BROKEN %s\n", err);
  else
    printf("  lock dir      %s%s%s\n", dir, kv_devlock_note()[0] ? ": " : "", kv_devlock_note());
}

int cmd_doctor(int argc, char **argv) {
  (void)argv;
  if (argc > 1)
    return cli_usage("doctor");
  int bad = 0;
  char v[512];
  printf("tools\n");
  if (version_of("cc", "--version", v, sizeof v) == 0)
    printf("  cc        ok       %s\n", v);
  else {
    printf("  cc        MISSING  install a C compiler: apt-get install gcc\n");
    bad = 1;
  }
  if (version_of("nm", "--version", v, sizeof v) == 0)
    printf("  nm        ok       %s\n", v);
  else {
    printf("  nm        MISSING  the policy check needs it: apt-get install binutils\n");
    bad = 1;
  }
  if (version_of("nvcc", "--version", v, sizeof v) == 0)
    printf("  nvcc      ok       %s\n", v);
  else
    printf("  nvcc      absent   needed only for the cuda surface\n");

  struct kv_gate_opts o;
  cli_gate_opts_default(&o);
  struct kv_probe p;
  memset(&p, 0, sizeof p);
  int probed = 0;
  char err[1024];
  printf("sandbox of the worker\n");
  if (kv_gate_probe(&o, &p, err, sizeof err) < 0) {
    printf("  worker    BROKEN   %s\n", err);
    bad = 1;
  } else {
    probed = 1;
    printf("  worker    ok       %s\n", p.worker_path);
    const struct kv_sandbox_status *s = &p.layers;
    printf("  no_new_privs %-12s\n", kv_layer_state_name(s->no_new_privs));
    printf("  netns        %-12s new, empty network namespace\n", kv_layer_state_name(s->netns));
    printf("  landlock     %-12s ABI %d: writes only to scratch, reads only system dirs\n",
           kv_layer_state_name(s->landlock), s->landlock_abi);
    printf("  seccomp      %-12s no exec, fork, sockets, ptrace, signals to others\n",
           kv_layer_state_name(s->seccomp));
    printf("  rlimits      %-12s\n", kv_layer_state_name(s->rlimits));
    char fsize[48] = "any size";
    if (s->file_limit_bytes)
      snprintf(fsize, sizeof fsize, "at most %llu MiB",
               (unsigned long long)(s->file_limit_bytes >> 20));
    if (s->scratch == KV_LAYER_ACTIVE)
      printf("  scratch      %-12s private tmpfs of %llu MiB and %llu inodes, freed with the "
             "worker; files %s\n",
             kv_layer_state_name(s->scratch), (unsigned long long)(s->scratch_bytes >> 20),
             (unsigned long long)s->scratch_inodes, fsize);
    else
      printf("  scratch      %-12s no size cap on the whole: only files are capped (%s, "
             "RLIMIT_FSIZE)\n",
             kv_layer_state_name(s->scratch), fsize);
    if (s->exec_lock == KV_LAYER_ACTIVE)
      printf("  exec_lock    %-12s once loaded: no new executable memory, no file opened for "
             "writing, %d segments sealed%s\n",
             kv_layer_state_name(s->exec_lock), s->sealed,
             s->sealed ? "" : " (no mseal: code and GOT could be made writable)");
    else
      printf("  exec_lock    %-12s once loaded: W^X, no writes through /proc, loaded objects "
             "sealed\n",
             kv_layer_state_name(s->exec_lock));
    printf("  environment  %d variables (scrubbed: no API keys)\n", p.env_vars);
    if (s->note[0])
      printf("  note: %s\n", s->note);
    printf("escape attempts from inside the worker\n");
    for (int i = 0; i < p.nprobes; i++) {
      int want_blocked = strcmp(p.name[i], "write_scratch") != 0;
      int good = p.blocked[i] == want_blocked;
      printf("  %-22s %-8s %s\n", p.name[i], p.blocked[i] ? "blocked" : "allowed",
             good ? "ok" : "EXPOSED");
      if (!good)
        bad = 1;
    }
  }
  children(&p, probed);
  limits();
  /* The cuda surface: a sandboxed cuda worker reports the GPU it reaches.
   * Its absence is no problem for the cpu surface. */
  char gpu[512], gerr[1024];
  printf("gpu (cuda surface)\n");
  int gpu_ok = kv_gate_cuda_device(NULL, gpu, sizeof gpu, gerr, sizeof gerr) == 0;
  if (gpu_ok)
    printf("  cuda      ok       %s (inside the worker's sandbox)\n", gpu);
  else
    printf("  cuda      absent   %s\n", gerr);
  /* The profiler and the debugger: found or not, their version, and the
   * layers a worker keeps on while each runs it (a worker started under the
   * tool, as the gate starts it; needs the GPU). */
  printf("developer tools (cuda surface: profile and debug feedback)\n");
  static const char *const tools[] = {"ncu", "compute-sanitizer"};
  for (int i = 0; i < 2; i++) {
    int ncu = i == 0;
    char path[4096];
    if (ncu)
      kv_ncu_path(&o, path, sizeof path);
    else
      kv_san_path(&o, path, sizeof path);
    if (!path[0]) {
      printf("  %-18s absent   %s\n", tools[i],
             ncu ? "no profile feedback; install Nsight Compute or set KEVO_NCU"
                 : "no debug feedback; install compute-sanitizer or set KEVO_COMPUTE_SANITIZER");
      continue;
    }
    printf("  %-18s ok       %s (%s)\n", tools[i], ncu ? kv_ncu_version(&o) : kv_san_version(&o),
           path);
    if (!gpu_ok) {
      printf("    worker under it: not tried (no GPU for the cuda surface here)\n");
      continue;
    }
    struct kv_sandbox_status ts;
    char off[256], terr[1024];
    double secs = 0;
    if (kv_devtool_probe(NULL, tools[i], NULL, &ts, off, sizeof off, &secs, terr, sizeof terr) <
        0) {
      printf("    worker under it: not available: %s\n", terr);
      /* Layer by layer: which one does the tool not tolerate here? Each
       * alone off, then all of them. */
      static const char *const layers[] = {"netns", "landlock", "seccomp", "lock", "scratch"};
      int found = 0;
      for (int l = 0; l < 5 && !found; l++) {
        const char *one[] = {layers[l], NULL};
        if (kv_devtool_probe(NULL, tools[i], one, &ts, off, sizeof off, &secs, terr, sizeof terr) ==
            0) {
          printf("    it starts with only %s off: %s=%s\n", layers[l],
                 ncu ? "KEVO_NCU_WITHOUT" : "KEVO_SANITIZER_WITHOUT", layers[l]);
          found = 1;
        }
      }
      const char *all[] = {"netns", "landlock", "seccomp", "lock", "scratch", NULL};
      if (!found && kv_devtool_probe(NULL, tools[i], all, &ts, off, sizeof off, &secs, terr,
                                     sizeof terr) == 0)
        printf("    it starts only with several layers off (all: %s=%s); none alone was "
               "enough\n",
               ncu ? "KEVO_NCU_WITHOUT" : "KEVO_SANITIZER_WITHOUT", off);
      else if (!found)
        printf("    it does not start even with every layer off: %s\n", terr);
      continue;
    }
    printf("    worker under it (started in %.1f s): no_new_privs %s, netns %s, landlock %s, "
           "seccomp %s, rlimits %s, scratch %s, exec_lock %s\n",
           secs, kv_layer_state_name(ts.no_new_privs), kv_layer_state_name(ts.netns),
           kv_layer_state_name(ts.landlock), kv_layer_state_name(ts.seccomp),
           kv_layer_state_name(ts.rlimits), kv_layer_state_name(ts.scratch),
           strstr(off, "lock") ? "off" : "on after loading");
    printf("    left off for the tool: %s\n", off[0] ? off : "none");
  }
  char db[PATH_MAX];
  printf("store\n");
  if (cli_store_path(db, sizeof db) == 0) {
    struct kv_store *st;
    if (kv_store_open(db, &st, err, sizeof err) == 0) {
      printf("  %s ok (schema %d)\n", db, kv_store_schema_version(st));
      kv_store_close(st);
    } else {
      printf("  BROKEN %s\n", err);
      bad = 1;
    }
  }
  printf("%s\n", bad ? "doctor: problems found (above)" : "doctor: all good");
  return bad ? 1 : 0;
}
