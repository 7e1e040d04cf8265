/* kevo doctor: what kevo needs, and what protects a run. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/gate/internal.h" /* the compile caps, the object cache's cap, the lock dir */
#include "../lib/gate/toolcall.h" /* the layers a profiler's target runs without */
#include "cli.h"
#include "kevo/import.h"
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
static int probe_run_capped(char **argv, const char *scratch, struct kv_compile_caps *caps,
                            char *out, size_t cap) {
  char home[PATH_MAX + 8], tmp[PATH_MAX + 8], err[256];
  snprintf(home, sizeof home, "HOME=%s", scratch);
  snprintf(tmp, sizeof tmp, "TMPDIR=%s", scratch);
  char *envp[] = {"PATH=/usr/bin:/bin", home, tmp, "LANG=C", "CUDA_VISIBLE_DEVICES=", NULL};
  struct kv_buf b;
  kv_buf_init(&b, 16384);
  struct kv_proc_result r;
  int ok = kv_run(argv, envp, scratch, 60, caps ? kv_compile_caps_apply : NULL, caps, &b, &r, err,
                  sizeof err) == 0 &&
           r.exited && r.status == 0;
  snprintf(out, cap, "%.*s", (int)strcspn(b.data ? b.data : "", "\n"), b.data ? b.data : "");
  if (!ok && !out[0])
    snprintf(out, cap, "%s", err[0] ? err : "it failed");
  kv_buf_release(&b);
  return ok ? 0 : -1;
}

static int probe_run(char **argv, const char *scratch, char *out, size_t cap) {
  return probe_run_capped(argv, scratch, NULL, out, cap);
}

/* A Python probe's JSON line: NULL when it failed or refused to run (line
 * says so), else the object (the caller's to release). */
static json_t *probe_json(char **argv, const char *scratch, char *line, size_t cap) {
  char out[1024];
  if (probe_run(argv, scratch, out, sizeof out) < 0) {
    snprintf(line, cap, "FAILED: %s", out);
    return NULL;
  }
  json_t *j = json_loads(out, 0, NULL);
  const char *refused = json_string_value(json_object_get(j, "refused"));
  if (!j || refused) {
    snprintf(line, cap, j ? "REFUSES to run: %s" : "FAILED: unreadable answer: %s",
             j ? refused : out);
    json_decref(j);
    return NULL;
  }
  return j;
}

/* A probe's field, "?" where it has none. */
static const char *jstr(json_t *j, const char *k) {
  const char *v = json_string_value(json_object_get(j, k));
  return v ? v : "?";
}

/* kevo-sandbox (the compilers' and the import/synthesize helper's): a shell
 * inside it (started with `extra`: the helper's -s -d BYTES -R) reports
 * no_new_privs, seccomp, its network interfaces, whether it can write beside
 * its scratch, in /dev/shm and in /tmp, its CPU limit and its memory caps. */
static void probe_kevo_sandbox(const char *base, const char *name, const char *const *extra,
                               struct kv_compile_caps *caps, char *line, size_t cap) {
  char sbx[PATH_MAX], scratch[PATH_MAX + 16], out[512];
  const char *e = getenv("KEVO_SANDBOX");
  if (e && *e)
    snprintf(sbx, sizeof sbx, "%s", e);
  else if (kv_find_shipped("kevo-sandbox", NULL, 0, sbx, sizeof sbx) < 0) {
    snprintf(line, cap, "kevo-sandbox NOT FOUND beside kevo (rebuild kevo)");
    return;
  }
  snprintf(scratch, sizeof scratch, "%s/%s", base, name);
  mkdir(scratch, 0700);
  char *argv[24] = {sbx, scratch, "10", "0"};
  int a = 4;
  for (int i = 0; extra && extra[i] && a < 16; i++)
    argv[a++] = (char *)extra[i];
  argv[a++] = "--";
  argv[a++] = "/bin/sh";
  argv[a++] = "-c";
  /* builtins only: /proc/self of a child would be another process's */
  argv[a++] =
      "p=; while read -r k v r; do case $k in NoNewPrivs:|Seccomp:) p=\"$p$k$v \";; "
      "esac; done </proc/$$/status; n=0; while read -r l; do n=$((n+1)); done "
      "</proc/$$/net/dev; w=closed; s=closed; t=closed; "
      "if (: >../outside) 2>/dev/null; then w=open; fi; "
      "if (: >/dev/shm/kevo-doctor-$$) 2>/dev/null; then s=open; rm -f /dev/shm/kevo-doctor-$$; "
      "fi; if (: >/tmp/kevo-doctor-$$) 2>/dev/null; then t=open; rm -f /tmp/kevo-doctor-$$; "
      "fi; "
      "echo \"$p net=$((n-2)) write=$w shm=$s tmp=$t cpu=$(ulimit -t) as=$(ulimit -v) "
      "data=$(ulimit -d) \"";
  argv[a] = NULL;
  int ran = probe_run_capped(argv, scratch, caps, out, sizeof out);
  if (ran < 0) {
    snprintf(line, cap, "kevo-sandbox REFUSES or FAILED: %s", out);
    return;
  }
  char mem[96] = "";
  const char *as = strstr(out, " as="), *data = strstr(out, " data=");
  long long as_k = as ? atoll(as + 4) : 0, data_k = data ? atoll(data + 6) : 0;
  if (as && strncmp(as + 4, "unlimited", 9))
    snprintf(mem, sizeof mem, "address space %lld MiB", as_k >> 10);
  if (data && strncmp(data + 6, "unlimited", 9)) {
    size_t u = strlen(mem);
    snprintf(mem + u, sizeof mem - u, "%sdata %lld MiB", u ? ", " : "", data_k >> 10);
  }
  snprintf(
      line, cap,
      "netns %s, no_new_privs %s, landlock %s, rlimits %s, seccomp %s; memory: %s; writes "
      "beside scratch %s, in /dev/shm %s, in /tmp %s",
      strstr(out, "net=1 ") ? "active" : "UNAVAILABLE",
      strstr(out, "NoNewPrivs:1") ? "active" : "UNAVAILABLE",
      strstr(out, "write=closed") ? "active" : "UNAVAILABLE",
      strstr(out, "cpu=10") ? "active" : "UNAVAILABLE", strstr(out, "Seccomp:0") ? "off" : "active",
      mem[0] ? mem : "UNCAPPED", strstr(out, "write=closed") ? "closed" : "OPEN",
      strstr(out, "shm=closed") ? "closed" : "OPEN", strstr(out, "tmp=closed") ? "closed" : "OPEN");
}

/* The torch reference worker's two stages (kevo_torch_worker.py), applied to
 * a Python process that then tries to write beside its scratch. */
static void probe_torch(const char *base, char *line, size_t cap) {
  char script[PATH_MAX], dir[PATH_MAX], py[PATH_MAX], scratch[PATH_MAX + 16];
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
                  "  for d, k in (('/dev/shm', 'shm_w'), ('/tmp', 'tmp_w')):\n"
                  "    p = '%s/kevo-doctor-%d' % (d, os.getpid())\n"
                  "    try: open(p, 'w').close(); os.unlink(p); st[k] = 'OPEN'\n"
                  "    except OSError: st[k] = 'closed'\n"
                  "  if st.get('shm') == 'private' and st['shm_w'] == 'OPEN':\n"
                  "    st['shm_w'] = 'private (a tmpfs of its own)'\n"
                  "print(json.dumps(st))\n",
                  dir,
                  scratch,
                  NULL};
  json_t *j = probe_json(argv, scratch, line, cap);
  if (!j)
    return;
  snprintf(line, cap,
           "netns %s, no_new_privs %s, rlimits %s (memory %lld GiB) at start; at the first "
           "LOAD landlock %s (ABI %d, writes beside scratch %s), seccomp %s (execve, fork "
           "and PROT_EXEC allowed: torch.compile runs compilers and loads their code); writes "
           "in /dev/shm %s, in /tmp %s",
           jstr(j, "netns"), jstr(j, "no_new_privs"), jstr(j, "rlimits"),
           (long long)json_integer_value(json_object_get(j, "data_limit_bytes")) >> 30,
           jstr(j, "landlock"), (int)json_integer_value(json_object_get(j, "landlock_abi")),
           jstr(j, "write"), jstr(j, "seccomp"), jstr(j, "shm_w"), jstr(j, "tmp_w"));
  json_decref(j);
}

/* A profiler's or debugger's target (kevo profile / sanitize, --profile,
 * --debug): the candidate worker's layers but those the tool cannot work
 * under, and where the tool's network is. Not probed: these tools need a GPU. */
static void tool_target(const char *label, const char *tool, const char *var, const char *why) {
  const char *off[16];
  char store[256], list[256] = "";
  int n = kv_tool_layers_off(tool, off, 16, store, sizeof store), host_net = 0;
  for (int i = 0; i < n; i++) {
    if (!strcmp(off[i], "tool_netns")) {
      host_net = 1;
      continue;
    }
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", off[i]);
  }
  printf("  %-23s the candidate worker's layers but %s off (%s); the tool %s\n", label,
         list[0] ? list : "none", getenv(var) ? var : why,
         host_net ? "in the host's network (tool_netns)"
                  : "and its target in a network namespace of their own (loopback only)");
}

/* The torch surface's candidate worker (kevo_torch_cand.py): its three
 * stages applied to a Python process that then tries to write beside its
 * scratch, in /dev/shm and /tmp, and to fork once the third is on. */
static void probe_torch_cand(const char *base, char *line, size_t cap) {
  char script[PATH_MAX], dir[PATH_MAX], py[PATH_MAX], scratch[PATH_MAX + 16];
  if (kv_find_shipped("kevo_torch_cand.py", NULL, 1, script, sizeof script) < 0) {
    snprintf(line, cap, "kevo_torch_cand.py not found (rebuild kevo)");
    return;
  }
  if (kv_which(kv_python(), py, sizeof py) < 0) {
    snprintf(line, cap, "not tried: no %s (set KEVO_PYTHON)", kv_python());
    return;
  }
  snprintf(dir, sizeof dir, "%s", script);
  *strrchr(dir, '/') = 0;
  snprintf(scratch, sizeof scratch, "%s/c", base);
  mkdir(scratch, 0700);
  char *argv[] = {
      py,
      "-B",
      "-c",
      "import sys, os, json\n"
      "sys.path.insert(0, sys.argv[1]); s = sys.argv[2]\n"
      "import kevo_torch_cand as c\n"
      "w = c.ktw\n"
      "st = {'netns': 'off', 'landlock': 'off', 'seccomp': 'off', 'scratch': 'off',\n"
      "      'no_process': 'off'}\n"
      "why = w.sb_start(st, [])\n"
      "def tryw(p):\n"
      "  try: open(p, 'w').close(); os.unlink(p); return 'OPEN'\n"
      "  except OSError: return 'closed'\n"
      "if why: st['refused'] = why\n"
      "else:\n"
      "  c.sb_scratch(st, [], s)\n"
      "  w.jail.update({'on': True, 'st': st, 'notes': [], 'scratch': s, 'cuda': False})\n"
      "  c.sb_lock2(None)\n"
      "  st['write'] = tryw(os.path.join(s, '..', 'outside'))\n"
      "  st['shm_w'] = tryw('/dev/shm/kevo-doctor-%d' % os.getpid())\n"
      "  st['tmp_w'] = tryw('/tmp/kevo-doctor-%d' % os.getpid())\n"
      "  c.sb_lock3()\n"
      "  try: pid = os.fork()\n"
      "  except OSError: st['fork'] = 'closed'\n"
      "  else:\n"
      "    if pid == 0: os._exit(0)\n"
      "    os.waitpid(pid, 0); st['fork'] = 'OPEN'\n"
      "print(json.dumps(st))\n",
      dir,
      scratch,
      NULL};
  json_t *j = probe_json(argv, scratch, line, cap);
  if (!j)
    return;
  snprintf(line, cap,
           "netns %s, no_new_privs %s, rlimits %s, scratch %s (a private tmpfs: Triton's and "
           "torch's caches) at start; at LOAD landlock %s (writes beside scratch %s, in "
           "/dev/shm %s, in /tmp %s), seccomp %s; once ModelNew is built no new processes %s "
           "(fork %s)",
           jstr(j, "netns"), jstr(j, "no_new_privs"), jstr(j, "rlimits"), jstr(j, "scratch"),
           jstr(j, "landlock"), jstr(j, "write"), jstr(j, "shm_w"), jstr(j, "tmp_w"),
           jstr(j, "seccomp"), jstr(j, "no_process"), jstr(j, "fork"));
  json_decref(j);
}

/* "closed" when the worker's escape probe `name` was blocked. */
static const char *probe_word(const struct kv_probe *p, const char *name) {
  for (int i = 0; i < p->nprobes; i++)
    if (!strcmp(p->name[i], name))
      return p->blocked[i] ? "closed" : "OPEN";
  return "?";
}

static void children(const struct kv_probe *p, int probed) {
  printf("sandbox of every child kevo runs\n");
  char worker[512] = "not probed (see above)";
  if (probed)
    snprintf(worker, sizeof worker,
             "netns %s, no_new_privs %s, landlock %s, seccomp %s, rlimits %s, scratch %s; writes "
             "in /dev/shm %s, in /tmp %s",
             kv_layer_state_name(p->layers.netns), kv_layer_state_name(p->layers.no_new_privs),
             kv_layer_state_name(p->layers.landlock), kv_layer_state_name(p->layers.seccomp),
             kv_layer_state_name(p->layers.rlimits), kv_layer_state_name(p->layers.scratch),
             probe_word(p, "write_dev_shm"), probe_word(p, "write_outside_scratch"));
  printf("  candidate worker        %s; exec_lock %s\n", worker,
         probed ? kv_layer_state_name(p->layers.exec_lock) : "?");
  printf("  reference worker        %s; exec_lock off (it runs the task's own objects)\n", worker);
  char base[PATH_MAX], err[256], sbx[1024], helper[1024], torch[1024], datab[32], tcand[1024];
  const char *tmp = getenv("TMPDIR");
  if (kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-doctor", base, sizeof base, err, sizeof err) <
      0) {
    printf("  (no temporary directory for the probes: %s)\n", err);
    return;
  }
  struct kv_import_opts io;
  kv_import_opts_default(&io);
  snprintf(datab, sizeof datab, "%lld", (long long)kv_import_data_cap(&io));
  const char *helper_args[] = {"-s", "-d", datab, io.allow_unsandboxed ? NULL : "-R", NULL};
  struct kv_compile_caps caps; /* the compilers' caps, set before kevo-sandbox as the gate does */
  kv_compile_caps_get(&caps);
  probe_kevo_sandbox(base, "s", NULL, &caps, sbx, sizeof sbx);
  probe_kevo_sandbox(base, "h", helper_args, NULL, helper, sizeof helper);
  probe_torch(base, torch, sizeof torch);
  probe_torch_cand(base, tcand, sizeof tcand);
  kv_rmtree(base);
  printf("  compilers               %s (seccomp off: the compiler driver runs cc1, as and ld)\n",
         sbx);
  printf("  import/synth helper     %s (seccomp lets Python run programs; every layer %s)\n",
         helper,
         io.allow_unsandboxed ? "NOT required: KEVO_IMPORT_ALLOW_UNSANDBOXED=1"
                              : "required: a host without one imports nothing");
  printf("  torch reference worker  %s\n", torch);
  printf("  torch candidate worker  %s\n", tcand);
  tool_target("ncu's target", "ncu", "KEVO_NCU_WITHOUT",
              "ncu hangs under seccomp and patches code, which the lock forbids");
  tool_target("sanitizer's target", "compute-sanitizer", "KEVO_SANITIZER_WITHOUT",
              "under seccomp its cuInit fails");
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
      static const char *const layers[] = {"netns", "landlock", "seccomp",
                                           "lock",  "scratch",  "tool_netns"};
      int found = 0;
      for (int l = 0; l < 6 && !found; l++) {
        const char *one[] = {layers[l], NULL};
        if (kv_devtool_probe(NULL, tools[i], one, &ts, off, sizeof off, &secs, terr, sizeof terr) ==
            0) {
          printf("    it starts with only %s off: %s=%s\n", layers[l],
                 ncu ? "KEVO_NCU_WITHOUT" : "KEVO_SANITIZER_WITHOUT", layers[l]);
          found = 1;
        }
      }
      const char *all[] = {"netns", "landlock", "seccomp", "lock", "scratch", "tool_netns", NULL};
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
    printf("    left off for the tool: %s (why: README's \"The cuda surface\"; docs/sandbox.md)\n",
           off[0] ? off : "none");
    printf("    network: %s\n",
           !strncmp(ts.note, "tool_netns: active", 18)
               ? "the tool and the worker share a network namespace of their own (loopback "
                 "only): the candidate reaches no host port and no other machine"
               : "the tool runs in the host's network (tool_netns off): the candidate has it "
                 "too");
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
