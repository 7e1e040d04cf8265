/* Executors (see exec.h): a table of ways to start gate servers, and one
 * dispatcher that sends them jobs, reads their verdicts and survives their
 * deaths. */
#include "kevo/exec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "internal.h"
#include "kevo/serve.h"
#include "kevo/util.h"
#include "kevo/wire.h"
#include "kevo/surface.h"

extern char **environ;

#define ARGV_MAX 96
#define ENV_MAX 48
#define ERRTAIL 2048
#define HELD_MAX 64 /* task hashes remembered per host */
#define SEND_DEADLINE_S 120.0
#define BUNDLES_MAX 8192 /* tasks one executor judges (a bench's suite) */

/* ---- pieces ---------------------------------------------------------------- */

struct bundle {
  char dir[PATH_MAX];
  char hash[65];
  struct kv_task *task;  /* loaded from its files, for the compile pool; NULL: not loaded */
  char deps_surface[16]; /* the surface its sources were built for ("": not yet) */
  int ndeps;
  struct kvx_compile *deps[2]; /* reference.EXT and baseline.EXT, built by the pool */
  int nfiles;
  struct kv_job_file files[KV_JOB_FILES_MAX];
  uint8_t *data; /* the files, back to back */
  size_t len;
};

struct job {
  uint64_t seq;
  char id[32];
  const struct bundle *b;
  char *cand;
  size_t cand_len;
  char cand_name[80];
  char surface[16], torch_compile[32];
  int has_seed, timing;
  uint64_t seed;
  double budget_s, deadline_s;
  double timing_ci;
  void *ud;
  int attempts;
  int with_files;
  char last_error[900];
  pthread_t owner;             /* the thread that submitted it: only it takes the result */
  struct kvx_compile *cc;      /* its entry in the compile pool; NULL: the server compiles */
  const struct bundle *b_deps; /* its task's sources it waits for too (bundle->deps), or NULL */
  int shared;                  /* its content was built for an earlier job */
  double submitted_s, ready_s, sent_s; /* submitted, compiled (in the queue), dispatched */
};

struct host {
  char name[256]; /* "local", "gpu 1", "gpu2" (ssh), "slurm" */
  int failures;   /* in a row */
  int dropped;
  int nheld;
  char held[HELD_MAX][65];
  int confirmed[HELD_MAX]; /* 0: its files are on the way in a job not yet answered */
};

enum srv_state { S_DOWN, S_STARTING, S_IDLE, S_BUSY };

struct server {
  char label[128];
  char hint[600]; /* what to check when it does not start */
  int host;       /* index into x->hosts */
  char gpu[64];
  char *argv[ARGV_MAX];
  char *envp[ENV_MAX];
  enum srv_state state;
  pid_t pid;
  int fd, errfd;
  struct kv_frame_parser fp;
  double deadline; /* STARTING: the hello's; BUSY: the verdict's */
  char errtail[ERRTAIL];
  size_t errlen;
  struct kvx_hello hello;
  struct job *job;
  int jobs_done, task_sends;
  double busy_s, busy_since;
};

/* A finished job, for the thread that submitted it. */
struct done_item {
  struct kv_exec_done d;
  pthread_t owner;
};

struct kv_exec {
  /* Every field below is under mu. One thread (the loop) talks to the
   * servers; the compile pool's threads build; callers submit and take. */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a job finished, or every server is gone */
  pthread_t loop;
  int loop_started, stopping;
  int wake[2]; /* written to wake the loop from poll */
  const char *name;
  struct kv_exec_config cfg;
  int concurrency;
  char surface[16];
  char kevo[PATH_MAX];
  double idle_s;
  void (*note)(void *, const char *);
  void *ud;
  int nhosts;
  struct host hosts[KV_EXEC_HOSTS_MAX + KV_EXEC_SERVERS_MAX];
  int nservers;
  struct server servers[KV_EXEC_SERVERS_MAX];
  int nbundles, capbundles;
  struct bundle **bundles; /* a bench's tasks share one executor: as many as it has */
  /* queued jobs, compiled and ready for a server (front first), and
   * finished ones (oldest first) */
  struct job **queue;
  int nqueue, capqueue;
  struct done_item *done;
  int ndone, capdone;
  uint64_t seq;
  char last_fault[1024];
  /* The compile pool (local and gpus: the servers share this host's object
   * cache), its entries by content, and the jobs waiting for theirs. */
  struct kvx_pool *pool;
  struct kvx_compile **compiles;
  int ncompiles, capcompiles;
  struct job **waiting;
  int nwaiting, capwaiting;
  char cache_dir[PATH_MAX]; /* the servers' (KEVO_CACHE_DIR, given to them) */
  char pool_note[600];
  struct kv_exec_stats st;
  double opened_s, tick_s;
};

static void on_compiled(void *ud, struct kvx_compile *c);
struct job;
static int built(const struct job *j);
static void note(struct kv_exec *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct kv_exec *x, const char *fmt, ...) {
  char msg[1400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (x->note)
    x->note(x->ud, msg);
}

/* ---- the table --------------------------------------------------------------- */

struct plan_ctx {
  struct kv_exec *x;
  const struct kv_exec_opts *o;
};
struct executor {
  const char *name;
  const char *what;
  int (*plan)(struct plan_ctx *p, char *err, size_t errlen);
};

static int plan_local(struct plan_ctx *p, char *err, size_t errlen);
static int plan_gpus(struct plan_ctx *p, char *err, size_t errlen);
static int plan_ssh(struct plan_ctx *p, char *err, size_t errlen);
static int plan_slurm(struct plan_ctx *p, char *err, size_t errlen);

static const struct executor executors[] = {
    {"local", "gate servers on this machine, as many as --concurrency", plan_local},
    {"gpus", "gate servers per visible GPU (CUDA_VISIBLE_DEVICES), jobs to the least-loaded one",
     plan_gpus},
    {"ssh", "`ssh HOST kevo gate serve --stdio` on the configuration file's ssh.hosts", plan_ssh},
    {"slurm", "`srun ... kevo gate serve --stdio`, one long-lived server per allocation",
     plan_slurm},
};

const char *const *kv_exec_names(void) {
  static const char *names[KV_ARRAY_LEN(executors) + 1];
  for (size_t i = 0; i < KV_ARRAY_LEN(executors); i++)
    names[i] = executors[i].name;
  return names;
}

const char *kv_exec_describe(const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(executors); i++)
    if (name && !strcmp(name, executors[i].name))
      return executors[i].what;
  return NULL;
}

/* ---- planning servers ------------------------------------------------------------ */

static int add_host(struct kv_exec *x, const char *name) {
  for (int i = 0; i < x->nhosts; i++)
    if (!strcmp(x->hosts[i].name, name))
      return i;
  if (x->nhosts >= (int)KV_ARRAY_LEN(x->hosts))
    return -1;
  struct host *h = &x->hosts[x->nhosts];
  memset(h, 0, sizeof *h);
  snprintf(h->name, sizeof h->name, "%s", name);
  return x->nhosts++;
}

static struct server *add_server(struct kv_exec *x, int host, const char *label, char *err,
                                 size_t errlen) {
  if (host < 0 || x->nservers >= KV_EXEC_SERVERS_MAX) {
    kv_error(err, errlen,
             "executor %s: more than %d gate servers; lower --concurrency or the "
             "configuration's servers",
             x->name, KV_EXEC_SERVERS_MAX);
    return NULL;
  }
  struct server *s = &x->servers[x->nservers++];
  memset(s, 0, sizeof *s);
  s->host = host;
  s->fd = s->errfd = -1;
  snprintf(s->label, sizeof s->label, "%s", label);
  return s;
}

static int arg(struct server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int arg(struct server *s, const char *fmt, ...) {
  int n = 0;
  while (s->argv[n])
    n++;
  if (n >= ARGV_MAX - 1)
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int rc = vasprintf(&s->argv[n], fmt, ap);
  va_end(ap);
  return rc < 0 ? -1 : 0;
}

static int env_add(struct server *s, const char *name, const char *value) {
  int n = 0;
  while (s->envp[n])
    n++;
  if (n >= ENV_MAX - 1)
    return -1;
  return asprintf(&s->envp[n], "%s=%s", name, value) < 0 ? -1 : 0;
}

/* A variable a gate server may see: never keys, tokens or secrets. */
static int env_passes(const char *name, size_t n, int kevo_vars) {
  static const char *const keep[] = {"PATH",      "HOME",          "USER",       "LOGNAME",
                                     "LANG",      "LC_ALL",        "TMPDIR",     "LD_LIBRARY_PATH",
                                     "CUDA_HOME", "SSH_AUTH_SOCK", "SLURM_CONF", NULL};
  char nm[128];
  if (n >= sizeof nm)
    return 0;
  memcpy(nm, name, n);
  nm[n] = 0;
  for (int i = 0; keep[i]; i++)
    if (!strcmp(nm, keep[i]))
      return 1;
  if (kevo_vars && !strncmp(nm, "KEVO_", 5) && !strstr(nm, "KEY") && !strstr(nm, "TOKEN") &&
      !strstr(nm, "SECRET") && strcmp(nm, "KEVO_DB"))
    return 1;
  return 0;
}

static void env_scrubbed(struct server *s, int kevo_vars) {
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || !env_passes(*e, (size_t)(eq - *e), kevo_vars))
      continue;
    if (!strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21))
      continue;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
    env_add(s, name, eq + 1);
  }
}

static int serve_args(struct kv_exec *x, struct server *s) {
  int rc = arg(s, "gate") | arg(s, "serve") | arg(s, "--stdio") | arg(s, "--idle") |
           arg(s, "%.0f", x->idle_s);
  const struct kv_surface *sf = kv_surface_find(x->surface);
  if (sf && sf != kv_surface_at(0)) /* the default goes unsaid */
    rc |= arg(s, "--surface") | arg(s, "%s", kv_surface_name(sf));
  return rc;
}

static int plan_local(struct plan_ctx *p, char *err, size_t errlen) {
  struct kv_exec *x = p->x;
  int h = add_host(x, "local");
  for (int i = 0; i < x->concurrency; i++) {
    char label[64];
    snprintf(label, sizeof label, "local #%d", i);
    struct server *s = add_server(x, h, label, err, errlen);
    if (!s)
      return -1;
    if (arg(s, "%s", x->kevo) || serve_args(x, s))
      return kv_error(err, errlen, "out of memory");
    env_scrubbed(s, 1);
  }
  return 0;
}

/* The GPUs this host shows: --gpus, else CUDA_VISIBLE_DEVICES, else the
 * driver's list. */
static int visible_gpus(const char *list, char ids[][64], int cap, char *err, size_t errlen) {
  const char *src = list && *list ? list : getenv("CUDA_VISIBLE_DEVICES");
  int n = 0;
  if (src && *src) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", src);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      while (*t == ' ')
        t++;
      if (!*t)
        continue;
      for (const char *c = t; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              *c == '-'))
          return kv_error(err, errlen,
                          "%s: \"%s\" is not a GPU index or UUID; give a list like 0,1",
                          list && *list ? "--gpus" : "CUDA_VISIBLE_DEVICES", t);
      if (n >= cap)
        return kv_error(err, errlen, "more than %d GPUs named; name fewer with --gpus", cap);
      snprintf(ids[n++], 64, "%s", t);
    }
    return n;
  }
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) && n < cap)
      if (e->d_name[0] != '.')
        snprintf(ids[n], 64, "%d", n), n++;
    closedir(d);
  }
  return n;
}

static int plan_gpus(struct plan_ctx *p, char *err, size_t errlen) {
  struct kv_exec *x = p->x;
  char ids[KV_EXEC_SERVERS_MAX][64];
  int n = visible_gpus(p->o->gpus, ids, KV_EXEC_SERVERS_MAX, err, errlen);
  if (n < 0)
    return -1;
  if (n == 0)
    return kv_error(err, errlen,
                    "executor gpus: this host shows no GPU (no /proc/driver/nvidia/gpus, no "
                    "CUDA_VISIBLE_DEVICES); use --executor local, or name GPUs with --gpus 0,1");
  /* Servers per GPU: enough for the concurrency (compiles and checks
   * overlap; timing takes turns per GPU through the device lock). */
  int per = (x->concurrency + n - 1) / n;
  for (int k = 0; k < per; k++)
    for (int g = 0; g < n; g++) {
      char hn[80], label[128];
      snprintf(hn, sizeof hn, "gpu %s", ids[g]);
      snprintf(label, sizeof label, "gpu %s #%d", ids[g], k);
      struct server *s = add_server(x, add_host(x, hn), label, err, errlen);
      if (!s)
        return -1;
      snprintf(s->gpu, sizeof s->gpu, "%s", ids[g]);
      if (arg(s, "%s", x->kevo) || serve_args(x, s))
        return kv_error(err, errlen, "out of memory");
      env_scrubbed(s, 1);
      env_add(s, "CUDA_VISIBLE_DEVICES", ids[g]);
    }
  return 0;
}

static int plan_ssh(struct plan_ctx *p, char *err, size_t errlen) {
  struct kv_exec *x = p->x;
  const struct kv_exec_config *c = &x->cfg;
  if (c->nhosts == 0)
    return kv_error(err, errlen,
                    "executor ssh: %s names no hosts; add {\"ssh\": {\"hosts\": [\"gpu1\"]}} and "
                    "pass it with --executor-config FILE",
                    c->path[0] ? c->path : "no configuration file was given, so it");
  char ssh[PATH_MAX];
  if (kv_which("ssh", ssh, sizeof ssh) < 0)
    return kv_error(err, errlen, "executor ssh: no ssh on PATH; install openssh-client");
  for (int i = 0; i < c->nhosts; i++) {
    const struct kv_exec_host *hc = &c->hosts[i];
    int h = add_host(x, hc->host);
    for (int k = 0; k < hc->servers; k++) {
      char label[320];
      snprintf(label, sizeof label, "ssh %s #%d", hc->host, k);
      struct server *s = add_server(x, h, label, err, errlen);
      if (!s)
        return -1;
      snprintf(s->hint, sizeof s->hint,
               "check ssh.hosts[%d] in %s: `ssh %s %s gate serve --stdio` must start without a "
               "password prompt",
               i, c->path[0] ? c->path : "the configuration", hc->host, hc->kevo);
      int rc = arg(s, "%s", ssh) | arg(s, "-T") | arg(s, "-o") | arg(s, "BatchMode=yes") |
               arg(s, "-o") | arg(s, "ConnectTimeout=15") | arg(s, "-o") |
               arg(s, "ServerAliveInterval=15") | arg(s, "-o") | arg(s, "ServerAliveCountMax=4");
      for (int a = 0; a < c->nssh_args; a++)
        rc |= arg(s, "%s", c->ssh_args[a]);
      /* The remote command: words quoted for the remote shell (every word
       * was checked to hold no quote). */
      rc |= arg(s, "--") | arg(s, "%s", hc->host) | arg(s, "env");
      for (int e = 0; e < hc->nenv; e++)
        rc |= arg(s, "'%s=%s'", hc->env[e].name, hc->env[e].value);
      rc |= arg(s, "'%s'", hc->kevo) | serve_args(x, s);
      if (rc)
        return kv_error(err, errlen, "out of memory");
      env_scrubbed(s, 0);
    }
  }
  return 0;
}

static int plan_slurm(struct plan_ctx *p, char *err, size_t errlen) {
  struct kv_exec *x = p->x;
  const struct kv_exec_config *c = &x->cfg;
  char srun[PATH_MAX];
  if (kv_which("srun", srun, sizeof srun) < 0)
    return kv_error(err, errlen,
                    "executor slurm: no srun on PATH; run kevo on a Slurm login node (or install "
                    "slurm-client)");
  int n = c->slurm_servers > 0 ? c->slurm_servers : x->concurrency;
  int h = add_host(x, "slurm");
  for (int i = 0; i < n; i++) {
    char label[64];
    snprintf(label, sizeof label, "slurm #%d", i);
    struct server *s = add_server(x, h, label, err, errlen);
    if (!s)
      return -1;
    snprintf(s->hint, sizeof s->hint,
             "check slurm.partition, gres and time in %s; sinfo lists the partitions",
             c->path[0] ? c->path : "the configuration");
    int rc = arg(s, "%s", srun) | arg(s, "--job-name=kevo-gate") | arg(s, "--nodes=1") |
             arg(s, "--ntasks=1") | arg(s, "--quiet") |
             /* without it slurmstepd holds stdout until a newline: frames
              * have none (the server makes the pseudo-terminal raw) */
             arg(s, "--unbuffered");
    if (c->partition[0])
      rc |= arg(s, "--partition=%s", c->partition);
    if (c->gres[0])
      rc |= arg(s, "--gres=%s", c->gres);
    if (c->time_limit[0])
      rc |= arg(s, "--time=%s", c->time_limit);
    for (int a = 0; a < c->nsrun_args; a++)
      rc |= arg(s, "%s", c->srun_args[a]);
    rc |= arg(s, "%s", c->slurm_kevo[0] ? c->slurm_kevo : x->kevo) | serve_args(x, s);
    if (rc)
      return kv_error(err, errlen, "out of memory");
    /* srun hands its environment to the job: only the scrubbed one. */
    env_scrubbed(s, 1);
    for (int e = 0; e < c->nslurm_env; e++)
      env_add(s, c->slurm_env[e].name, c->slurm_env[e].value);
  }
  return 0;
}

/* ---- server processes ------------------------------------------------------------ */

static void errtail_add(struct server *s, const char *buf, size_t n) {
  if (n >= ERRTAIL - 1) {
    buf += n - (ERRTAIL - 1);
    n = ERRTAIL - 1;
  }
  if (s->errlen + n >= ERRTAIL) {
    size_t drop = s->errlen + n - (ERRTAIL - 1);
    memmove(s->errtail, s->errtail + drop, s->errlen - drop);
    s->errlen -= drop;
  }
  memcpy(s->errtail + s->errlen, buf, n);
  s->errlen += n;
  s->errtail[s->errlen] = 0;
}

static void drain_err(struct server *s) {
  char buf[4096];
  for (;;) {
    if (s->errfd < 0)
      return;
    ssize_t n = read(s->errfd, buf, sizeof buf);
    if (n > 0) {
      errtail_add(s, buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0) {
      close(s->errfd);
      s->errfd = -1;
    }
    return;
  }
}

/* The last two lines the server wrote on stderr, for messages. */
static const char *last_words(struct server *s, char *out, size_t cap) {
  drain_err(s);
  char t[ERRTAIL];
  snprintf(t, sizeof t, "%s", s->errtail);
  size_t n = strlen(t);
  while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' '))
    t[--n] = 0;
  /* the last two lines: srun and ssh put the reason on the last one */
  size_t start = 0;
  int lines = 0;
  for (size_t i = n; i > 0; i--)
    if (t[i - 1] == '\n' && ++lines == 2) {
      start = i;
      break;
    }
  size_t k = 0;
  for (const char *c = t + start; *c && k + 1 < cap; c++)
    out[k++] = *c == '\n' ? ';' : *c;
  out[k] = 0;
  return out;
}

static int spawn(struct kv_exec *x, struct server *s, char *err, size_t errlen) {
  int sv[2], ep[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return kv_error(err, errlen, "socketpair: %s", strerror(errno));
  if (pipe2(ep, O_CLOEXEC) < 0) {
    close(sv[0]);
    close(sv[1]);
    return kv_error(err, errlen, "pipe: %s", strerror(errno));
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]), close(sv[1]), close(ep[0]), close(ep[1]);
    return kv_error(err, errlen, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0 || dup2(ep[1], 2) < 0)
      _exit(126);
    close_range(3, ~0U, 0);
    execve(s->argv[0], s->argv, s->envp);
    dprintf(2, "kevo: cannot run %s: %s\n", s->argv[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(sv[1]);
  close(ep[1]);
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  fcntl(ep[0], F_SETFL, O_NONBLOCK);
  s->pid = pid;
  s->fd = sv[0];
  s->errfd = ep[0];
  s->errlen = 0;
  s->errtail[0] = 0;
  memset(&s->hello, 0, sizeof s->hello);
  kv_frame_parser_init(&s->fp, 0);
  s->state = S_STARTING;
  s->deadline = kv_now_s() + x->cfg.start_timeout_s;
  return 0;
}

/* Ends a server's process (and its process group: ssh or srun and what
 * they started here). */
static void reap(struct server *s) {
  if (s->pid > 0) {
    /* SIGTERM first: srun then cancels its step and ssh closes its
     * connection; SIGKILL for whatever is left after 3 s. */
    kill(-s->pid, SIGTERM);
    kill(s->pid, SIGTERM);
    int st, gone = 0;
    double until = kv_now_s() + 3;
    while (!gone && kv_now_s() < until) {
      pid_t w = waitpid(s->pid, &st, WNOHANG);
      if (w == s->pid || (w < 0 && errno != EINTR))
        gone = 1;
      else
        usleep(20000);
    }
    kill(-s->pid, SIGKILL);
    if (!gone) {
      kill(s->pid, SIGKILL);
      while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
        ;
    }
  }
  drain_err(s);
  if (s->fd >= 0)
    close(s->fd);
  if (s->errfd >= 0)
    close(s->errfd);
  s->fd = s->errfd = -1;
  s->pid = 0;
  kv_frame_parser_release(&s->fp);
  s->state = S_DOWN;
}

/* A finished job's slot, for the thread that submitted it (the callers
 * waiting are woken). */
static struct kv_exec_done *done_slot(struct kv_exec *x, pthread_t owner) {
  if (x->ndone == x->capdone) {
    int cap = x->capdone ? x->capdone * 2 : 16;
    struct done_item *d = realloc(x->done, sizeof *d * (size_t)cap);
    if (!d)
      return NULL;
    x->done = d;
    x->capdone = cap;
  }
  struct done_item *it = &x->done[x->ndone++];
  memset(it, 0, sizeof *it);
  it->owner = owner;
  pthread_cond_broadcast(&x->cv);
  return &it->d;
}

static void job_free(struct job *j) {
  if (j) {
    free(j->cand);
    free(j);
  }
}

static int requeue_front(struct kv_exec *x, struct job *j) {
  if (x->nqueue == x->capqueue) {
    int cap = x->capqueue ? x->capqueue * 2 : 16;
    struct job **q = realloc(x->queue, sizeof *q * (size_t)cap);
    if (!q)
      return -1;
    x->queue = q;
    x->capqueue = cap;
  }
  memmove(x->queue + 1, x->queue, sizeof *x->queue * (size_t)x->nqueue);
  x->queue[0] = j;
  x->nqueue++;
  return 0;
}

/* A job that no server could judge within its tries. */
static void job_failed(struct kv_exec *x, struct job *j) {
  struct kv_exec_done *d = done_slot(x, j->owner);
  if (d) {
    d->ud = j->ud;
    d->ok = 0;
    d->attempts = j->attempts;
    if (j->attempts > 0)
      snprintf(d->error, sizeof d->error, "no server could judge it in %d tries; the last: %s",
               j->attempts, j->last_error);
    else
      snprintf(d->error, sizeof d->error, "no server could judge it: %s", j->last_error);
  }
  if (j->attempts > 0)
    note(x, "job %s: given up after %d tries (max_tries): %s", j->id, j->attempts, j->last_error);
  else
    note(x, "job %s: not judged: %s", j->id, j->last_error);
  job_free(j);
}

static void drop_host(struct kv_exec *x, int h, const char *why, int for_good);

/* A server failed: its process is ended, its job (if any) retried elsewhere
 * or reported, its host's failures counted (and the host dropped when they
 * keep coming). */
static void server_fault(struct kv_exec *x, struct server *s, const char *why, int count) {
  int was_starting = s->state == S_STARTING;
  int status = -1;
  if (s->pid > 0 && s->fd >= 0 && was_starting) {
    /* A server that ended before its hello: its exit status says whether
     * the refusal is for good (KV_EXEC_REFUSED: no GPU for cuda). */
    double until = kv_now_s() + 2;
    int st;
    while (kv_now_s() < until) {
      pid_t w = waitpid(s->pid, &st, WNOHANG);
      if (w == s->pid) {
        status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        s->pid = 0;
        break;
      }
      if (w < 0 && errno != EINTR)
        break;
      usleep(10000);
    }
  }
  char words[400];
  last_words(s, words, sizeof words);
  reap(s);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s: %s%s%s", s->label, why, words[0] ? ": " : "", words);
  if (status > 0 && !words[0])
    snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (exit status %d)", status);
  if (was_starting && s->hint[0] && status != KV_EXEC_REFUSED)
    snprintf(msg + strlen(msg), sizeof msg - strlen(msg), " (%s)", s->hint);
  snprintf(x->last_fault, sizeof x->last_fault, "%s", msg);
  struct job *j = s->job;
  s->job = NULL;
  if (j) {
    j->attempts++;
    snprintf(j->last_error, sizeof j->last_error, "%s", msg);
    if (j->attempts >= x->cfg.max_tries)
      job_failed(x, j);
    else {
      note(x, "%s; job %s goes to another server (try %d of %d)", msg, j->id, j->attempts + 1,
           x->cfg.max_tries);
      if (requeue_front(x, j) < 0)
        job_failed(x, j);
    }
  } else
    note(x, "%s", msg);
  struct host *h = &x->hosts[s->host];
  h->nheld = 0; /* a new server may have a new cache: ask again */
  if (status == KV_EXEC_REFUSED && !h->dropped)
    drop_host(x, s->host, msg, 1);
  else if (count && ++h->failures >= x->cfg.drop_after && !h->dropped)
    drop_host(x, s->host, msg, 0);
}

static void drop_host(struct kv_exec *x, int hi, const char *why, int for_good) {
  struct host *h = &x->hosts[hi];
  h->dropped = 1;
  if (for_good)
    note(x, "%s: dropped (%s)", h->name, why);
  else
    note(x, "%s: dropped after %d failures in a row (drop_after; the last: %s)", h->name,
         h->failures, why);
  for (int i = 0; i < x->nservers; i++) {
    struct server *s = &x->servers[i];
    if (s->host != hi)
      continue;
    struct job *j = s->job;
    s->job = NULL;
    reap(s);
    if (j && requeue_front(x, j) < 0)
      job_failed(x, j);
  }
}

/* ---- frames ---------------------------------------------------------------------- */

static int send_all(int fd, const void *p, size_t n, double deadline) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w > 0) {
      b += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      double left = deadline - kv_now_s();
      if (left <= 0) {
        errno = ETIMEDOUT;
        return -1;
      }
      struct pollfd pf = {fd, POLLOUT, 0};
      poll(&pf, 1, (int)(left * 1000) + 1);
      continue;
    }
    return -1;
  }
  return 0;
}

static int send_frame(int fd, uint32_t type, uint64_t token, const char *json,
                      const struct bundle *b, int with_files, const char *cand, size_t clen) {
  uint64_t blob = (with_files && b ? b->len : 0) + clen;
  struct kv_frame_header h = {KV_WIRE_MAGIC, type, token, (uint32_t)strlen(json), blob};
  uint8_t hdr[KV_WIRE_HEADER];
  kv_wire_pack_header(&h, hdr);
  double dl = kv_now_s() + SEND_DEADLINE_S;
  if (send_all(fd, hdr, sizeof hdr, dl) < 0 || send_all(fd, json, strlen(json), dl) < 0)
    return -1;
  if (with_files && b && b->len && send_all(fd, b->data, b->len, dl) < 0)
    return -1;
  if (clen && send_all(fd, cand, clen, dl) < 0)
    return -1;
  return 0;
}

/* 0: the host does not hold the task; 1: it does; 2: its files are on the
 * way (a job carrying them is not answered yet). */
static int host_holds(const struct host *h, const char *hash) {
  for (int i = 0; i < h->nheld; i++)
    if (!strcmp(h->held[i], hash))
      return h->confirmed[i] ? 1 : 2;
  return 0;
}

static void host_hold(struct host *h, const char *hash, int confirmed) {
  for (int i = 0; i < h->nheld; i++)
    if (!strcmp(h->held[i], hash)) {
      h->confirmed[i] |= confirmed;
      return;
    }
  if (h->nheld == HELD_MAX) {
    memmove(h->held, h->held + 1, sizeof h->held[0] * (HELD_MAX - 1));
    memmove(h->confirmed, h->confirmed + 1, sizeof h->confirmed[0] * (HELD_MAX - 1));
    h->nheld--;
  }
  snprintf(h->held[h->nheld], 65, "%s", hash);
  h->confirmed[h->nheld++] = confirmed;
}

static char *job_json(const struct job *j) {
  json_t *task = json_pack("{s:s}", "hash", j->b->hash);
  if (j->with_files) {
    json_t *files = json_array();
    for (int i = 0; i < j->b->nfiles; i++)
      json_array_append_new(files, json_pack("{s:s,s:I}", "name", j->b->files[i].name, "bytes",
                                             (json_int_t)j->b->files[i].len));
    json_object_set_new(task, "files", files);
  }
  json_t *o = json_pack("{s:s,s:b,s:f,s:f}", "surface", j->surface, "timing", j->timing, "budget_s",
                        j->budget_s, "deadline_s", j->deadline_s);
  if (j->has_seed)
    json_object_set_new(o, "seed", json_integer((json_int_t)(j->seed & 0x7fffffffffffffffull)));
  if (j->torch_compile[0])
    json_object_set_new(o, "torch_compile", json_string(j->torch_compile));
  json_object_set_new(o, "timing_ci", json_real(j->timing_ci));
  json_t *root = json_pack("{s:i,s:s,s:o,s:{s:s,s:I},s:o}", "protocol", KV_GATE_PROTOCOL, "id",
                           j->id, "task", task, "candidate", "name", j->cand_name, "bytes",
                           (json_int_t)j->cand_len, "options", o);
  char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;
  json_decref(root);
  return s;
}

static int dispatch(struct kv_exec *x, struct server *s, struct job *j) {
  struct host *h = &x->hosts[s->host];
  j->with_files = !host_holds(h, j->b->hash);
  /* On the way: other servers of this host wait for the answer to this job
   * (then the host's cache holds the files) instead of receiving them too. */
  host_hold(h, j->b->hash, 0);
  char *js = job_json(j);
  if (!js)
    return -1;
  int rc = send_frame(s->fd, KV_GATE_EVAL, j->seq, js, j->b, j->with_files, j->cand, j->cand_len);
  free(js);
  s->job = j;
  s->state = S_BUSY;
  s->busy_since = kv_now_s();
  if (!j->sent_s) {
    j->sent_s = s->busy_since;
    x->st.sent++;
    x->st.sent_built += j->cc && j->cc->done && j->cc->rc == 0;
  }
  s->deadline = s->busy_since + x->cfg.job_timeout_s;
  if (j->with_files)
    s->task_sends++;
  if (rc < 0) {
    char why[128];
    snprintf(why, sizeof why, "the job could not be sent (%s)", strerror(errno));
    server_fault(x, s, why, 1);
  }
  return 0;
}

/* Seconds since the executor opened (0 for a moment not reached). */
static double since(const struct kv_exec *x, double t) {
  return t > 0 ? t - x->opened_s : 0;
}

/* The verdict's "executor" object: who judged it, and the job's way through
 * the pipeline (seconds from the executor's start, and the parts: waiting
 * for a compiler, compiling, waiting for a server, at the server; the
 * gate's own compile / check / timing / lock wait beside them). */
static json_t *executor_json(struct kv_exec *x, const struct server *s, const struct job *j,
                             json_t *res) {
  double now = kv_now_s();
  const struct kvx_compile *c = j->cc;
  int built = c && c->done && c->rc == 0;
  json_t *secs = json_object_get(res, "seconds");
  json_t *o =
      json_pack("{s:s,s:s,s:s,s:s,s:I,s:i,s:b,s:b}", "name", x->name, "host", s->hello.host,
                "server", s->label, "gpu", s->gpu, "pid", (json_int_t)s->hello.pid, "attempts",
                j->attempts, "compiled_ahead", built, "shared_compile", j->shared);
  double cq =
      built ? c->started_s - (c->queued_s > j->submitted_s ? c->queued_s : j->submitted_s) : 0;
  json_object_set_new(
      o, "seconds",
      json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "compile_queue", cq > 0 ? cq : 0,
                "compile_ahead", built && !j->shared ? c->ended_s - c->started_s : 0, "ready_wait",
                j->ready_s > 0 && j->sent_s > j->ready_s ? j->sent_s - j->ready_s : 0, "judge",
                now - j->sent_s, "compile", json_number_value(json_object_get(secs, "compile")),
                "check", json_number_value(json_object_get(secs, "check")), "timing",
                json_number_value(json_object_get(secs, "timing")), "lock_wait",
                json_number_value(json_object_get(secs, "lock_wait"))));
  json_object_set_new(o, "at",
                      json_pack("{s:f,s:f,s:f,s:f,s:f}", "submitted", since(x, j->submitted_s),
                                "compile_start", built ? since(x, c->started_s) : 0, "compile_end",
                                built ? since(x, c->ended_s) : 0, "sent", since(x, j->sent_s),
                                "verdict", since(x, now)));
  return o;
}

/* A whole frame from server s. */
static void on_frame(struct kv_exec *x, struct server *s) {
  struct kv_frame_header hd = s->fp.h;
  char *json = s->fp.json;
  s->fp.json = NULL;
  kv_frame_parser_release(&s->fp);
  kv_frame_parser_init(&s->fp, 0);
  char e[1024];
  if (s->state == S_STARTING) {
    if (hd.type != KV_GATE_HELLO || kvx_hello_parse(json, &s->hello, e, sizeof e) < 0) {
      if (hd.type != KV_GATE_HELLO)
        snprintf(e, sizeof e, "its first frame is not a hello; is it a kevo gate server?");
      free(json);
      /* Another version: no use trying it again. */
      char why[1200];
      snprintf(why, sizeof why, "refused: %s", e);
      server_fault(x, s, why, 0);
      if (!x->hosts[s->host].dropped)
        drop_host(x, s->host, why, 1);
      return;
    }
    free(json);
    if (!s->gpu[0] && s->hello.gpu[0])
      snprintf(s->gpu, sizeof s->gpu, "%s", s->hello.gpu);
    s->state = S_IDLE;
    return;
  }
  struct job *j = s->job;
  if (s->state != S_BUSY || !j || hd.type != KV_GATE_VERDICT || hd.token != j->seq) {
    free(json);
    server_fault(x, s, "sent a frame it should not have (not this job's verdict)", 1);
    return;
  }
  json_t *res = NULL;
  int need = 0;
  int v = kvx_verdict_parse(json, j->id, &res, &need, e, sizeof e);
  free(json);
  if (v < 0) {
    server_fault(x, s, e, 1);
    return;
  }
  s->job = NULL;
  s->state = S_IDLE;
  s->busy_s += kv_now_s() - s->busy_since;
  struct host *h = &x->hosts[s->host];
  if (v == 1 && need && j->with_files == 0) {
    /* Its host lost the task (a new cache): send the files this time. */
    h->nheld = 0;
    if (requeue_front(x, j) < 0)
      job_failed(x, j);
    return;
  }
  host_hold(h, j->b->hash, 1);
  if (v == 1) {
    /* The server could not judge it (kevo's own error there): another may. */
    j->attempts++;
    snprintf(j->last_error, sizeof j->last_error, "%s: %s", s->label, e);
    h->failures++;
    if (j->attempts >= x->cfg.max_tries)
      job_failed(x, j);
    else if (requeue_front(x, j) < 0)
      job_failed(x, j);
    if (h->failures >= x->cfg.drop_after && !h->dropped)
      drop_host(x, s->host, e, 0);
    return;
  }
  h->failures = 0;
  s->jobs_done++;
  j->attempts++;
  json_object_set_new(res, "executor", executor_json(x, s, j, res));
  struct kv_exec_done *d = done_slot(x, j->owner);
  if (!d) {
    json_decref(res);
    job_free(j);
    return;
  }
  d->ud = j->ud;
  d->ok = 1;
  d->attempts = j->attempts;
  snprintf(d->host, sizeof d->host, "%s", s->hello.host);
  snprintf(d->gpu, sizeof d->gpu, "%s", s->gpu);
  d->result_json = json_dumps(res, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(res);
  if (!d->result_json) {
    d->ok = 0;
    snprintf(d->error, sizeof d->error, "out of memory");
  }
  job_free(j);
}

static void on_readable(struct kv_exec *x, struct server *s) {
  uint8_t buf[65536];
  for (;;) {
    if (s->fd < 0)
      return;
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      server_fault(x, s,
                   s->state == S_STARTING ? "could not start a gate server"
                   : s->job               ? "the server or its connection died mid-job"
                                          : "the server ended",
                   s->state != S_IDLE || s->job);
      return;
    }
    size_t used = 0;
    while (used < (size_t)n && s->fd >= 0) {
      used += kv_frame_parser_feed(&s->fp, buf + used, (size_t)n - used);
      if (s->fp.bad) {
        server_fault(x, s, "sent bytes that are not kevo frames", 1);
        return;
      }
      if (s->fp.done)
        on_frame(x, s);
    }
  }
}

/* ---- the loop ---------------------------------------------------------------------- */

static int busy_count(const struct kv_exec *x) {
  int n = 0;
  for (int i = 0; i < x->nservers; i++)
    n += x->servers[i].state == S_BUSY;
  return n;
}

static int gpu_load(const struct kv_exec *x, const char *gpu) {
  int n = 0;
  for (int i = 0; i < x->nservers; i++)
    n += x->servers[i].state == S_BUSY && !strcmp(x->servers[i].gpu, gpu);
  return n;
}

/* Starts servers that are down while there is work they could take. */
static void start_needed(struct kv_exec *x) {
  int idle = 0, starting = 0;
  for (int i = 0; i < x->nservers; i++) {
    idle += x->servers[i].state == S_IDLE;
    starting += x->servers[i].state == S_STARTING;
  }
  int want = x->nqueue + x->nwaiting - idle - starting;
  for (int i = 0; i < x->nservers && want > 0; i++) {
    struct server *s = &x->servers[i];
    if (s->state != S_DOWN || x->hosts[s->host].dropped)
      continue;
    char e[512];
    if (spawn(x, s, e, sizeof e) < 0)
      server_fault(x, s, e, 1);
    else
      want--;
  }
}

static void assign(struct kv_exec *x) {
  while (x->nqueue > 0 && busy_count(x) < x->concurrency) {
    struct server *best = NULL;
    int best_load = 0;
    for (int i = 0; i < x->nservers; i++) {
      struct server *s = &x->servers[i];
      if (s->state != S_IDLE)
        continue;
      int load = gpu_load(x, s->gpu);
      if (!best || load < best_load || (load == best_load && s->busy_s < best->busy_s))
        best = s, best_load = load;
    }
    if (!best)
      return;
    struct job *j = x->queue[0];
    if (host_holds(&x->hosts[best->host], j->b->hash) == 2) {
      /* its task is on the way to that host: another host's idle server, or wait */
      struct server *other = NULL;
      for (int i = 0; i < x->nservers && !other; i++)
        if (x->servers[i].state == S_IDLE &&
            host_holds(&x->hosts[x->servers[i].host], j->b->hash) != 2)
          other = &x->servers[i];
      if (!other)
        return;
      best = other;
    }
    memmove(x->queue, x->queue + 1, sizeof *x->queue * (size_t)--x->nqueue);
    dispatch(x, best, j);
  }
}

static int alive(const struct kv_exec *x) {
  for (int i = 0; i < x->nservers; i++)
    if (!x->hosts[x->servers[i].host].dropped)
      return 1;
  return 0;
}

/* The servers' seconds since the last tick: busy ones, and idle ones while
 * nothing was ready but a job waited for its compile (starved). */
static void tick(struct kv_exec *x) {
  double now = kv_now_s(), dt = x->tick_s > 0 ? now - x->tick_s : 0;
  x->tick_s = now;
  int busy = 0, idle = 0;
  for (int i = 0; i < x->nservers; i++) {
    busy += x->servers[i].state == S_BUSY;
    idle += x->servers[i].state == S_IDLE;
  }
  x->st.slot_busy_s += dt * busy;
  if (x->nqueue == 0 && x->nwaiting > 0)
    x->st.slot_starved_s += dt * idle;
}

/* Every host is dropped: the jobs not yet judged are reported failed. */
static void fail_all(struct kv_exec *x) {
  while (x->nqueue > 0 || x->nwaiting > 0) {
    struct job *j;
    if (x->nqueue > 0) {
      j = x->queue[0];
      memmove(x->queue, x->queue + 1, sizeof *x->queue * (size_t)--x->nqueue);
    } else {
      j = x->waiting[--x->nwaiting];
    }
    if (!j->last_error[0])
      snprintf(j->last_error, sizeof j->last_error, "every server is gone (%s)", x->last_fault);
    job_failed(x, j);
  }
  pthread_cond_broadcast(&x->cv);
}

/* One round: start, assign, wait up to `wait_s` for anything (the lock let
 * go meanwhile), handle it. Called with mu held. */
static void pump(struct kv_exec *x, double wait_s) {
  start_needed(x);
  assign(x);
  tick(x);
  struct pollfd pf[2 * KV_EXEC_SERVERS_MAX + 1];
  int who[2 * KV_EXEC_SERVERS_MAX + 1], n = 0;
  double now = kv_now_s(), until = now + wait_s;
  for (int i = 0; i < x->nservers; i++) {
    struct server *s = &x->servers[i];
    if (s->state == S_DOWN)
      continue;
    if ((s->state == S_STARTING || s->state == S_BUSY) && s->deadline < until)
      until = s->deadline;
    if (s->fd >= 0)
      pf[n] = (struct pollfd){s->fd, POLLIN, 0}, who[n++] = i;
    if (s->errfd >= 0)
      pf[n] = (struct pollfd){s->errfd, POLLIN, 0}, who[n++] = -1 - i;
  }
  if (x->wake[0] >= 0)
    pf[n] = (struct pollfd){x->wake[0], POLLIN, 0}, who[n++] = INT_MIN;
  int ms = until > now ? (int)((until - now) * 1000) + 1 : 0;
  if (ms > 1000)
    ms = 1000;
  pthread_mutex_unlock(&x->mu); /* callers submit and take meanwhile */
  int r = n ? poll(pf, (nfds_t)n, ms) : (usleep((useconds_t)ms * 1000), 0);
  pthread_mutex_lock(&x->mu);
  tick(x);
  for (int k = 0; r > 0 && k < n; k++) {
    if (!pf[k].revents)
      continue;
    if (who[k] == INT_MIN) {
      char buf[256];
      while (read(x->wake[0], buf, sizeof buf) > 0)
        ;
    } else if (who[k] >= 0)
      on_readable(x, &x->servers[who[k]]);
    else
      drain_err(&x->servers[-1 - who[k]]);
  }
  now = kv_now_s();
  for (int i = 0; i < x->nservers; i++) {
    struct server *s = &x->servers[i];
    if (s->state == S_STARTING && now > s->deadline) {
      char why[128];
      snprintf(why, sizeof why, "no hello within %.0f s (start_timeout_s)", x->cfg.start_timeout_s);
      server_fault(x, s, why, 1);
    } else if (s->state == S_BUSY && now > s->deadline) {
      char why[128];
      snprintf(why, sizeof why, "no verdict within %.0f s (job_timeout_s); killed",
               x->cfg.job_timeout_s);
      server_fault(x, s, why, 1);
    }
  }
  if (!alive(x))
    fail_all(x);
  start_needed(x);
  assign(x);
}

static void wake_loop(struct kv_exec *x) {
  if (x->wake[1] >= 0 && write(x->wake[1], "w", 1) < 0) {
    /* full: the loop is woken already */
  }
}

/* The executor's own thread: talks to the servers until closed. */
static void *loop_main(void *arg) {
  struct kv_exec *x = arg;
  pthread_mutex_lock(&x->mu);
  while (!x->stopping)
    pump(x, 1.0);
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* ---- the interface -------------------------------------------------------------------- */

int kv_exec_open(const struct kv_exec_opts *o, struct kv_exec **out, char *err, size_t errlen) {
  *out = NULL;
  const struct executor *ex = NULL;
  for (size_t i = 0; i < KV_ARRAY_LEN(executors); i++)
    if (o->name && !strcmp(o->name, executors[i].name))
      ex = &executors[i];
  if (!ex)
    return kv_error(err, errlen, "--executor %s: not an executor; use local, gpus, ssh or slurm",
                    o->name ? o->name : "(none)");
  struct kv_exec *x = calloc(1, sizeof *x);
  if (!x)
    return kv_error(err, errlen, "out of memory");
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->cv, NULL);
  x->wake[0] = x->wake[1] = -1;
  if (pipe2(x->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
    x->wake[0] = x->wake[1] = -1;
    kv_exec_close(x);
    return kv_error(err, errlen, "pipe: %s", strerror(errno));
  }
  x->opened_s = kv_now_s();
  x->name = ex->name;
  if (o->config)
    x->cfg = *o->config;
  else
    kv_exec_config_default(&x->cfg);
  x->concurrency = o->concurrency > 0 ? o->concurrency : 1;
  if (x->concurrency > KV_EXEC_SERVERS_MAX)
    x->concurrency = KV_EXEC_SERVERS_MAX;
  snprintf(x->surface, sizeof x->surface, "%s", o->surface ? o->surface : "cpu");
  x->idle_s = o->idle_s > 0 ? o->idle_s : 600;
  x->note = o->note;
  x->ud = o->ud;
  if (o->kevo)
    snprintf(x->kevo, sizeof x->kevo, "%s", o->kevo);
  else {
    char d[PATH_MAX - 8];
    if (kv_exe_dir(d, sizeof d) < 0) {
      free(x);
      return kv_error(err, errlen, "cannot find kevo's own binary (/proc/self/exe)");
    }
    snprintf(x->kevo, sizeof x->kevo, "%s/kevo", d);
  }
  /* Servers on this host share its object cache with the compile pool:
   * they are told where it is (KEVO_CACHE_DIR), as the pool builds there. */
  int same_host = ex->plan == plan_local || ex->plan == plan_gpus;
  if (same_host) {
    const char *c = getenv("KEVO_CACHE_DIR");
    if (c && *c)
      snprintf(x->cache_dir, sizeof x->cache_dir, "%s", c);
    else if (kv_cache_dir(x->cache_dir, sizeof x->cache_dir) < 0)
      x->cache_dir[0] = 0;
  }
  struct plan_ctx pc = {x, o};
  if (ex->plan(&pc, err, errlen) < 0) {
    kv_exec_close(x);
    return -1;
  }
  if (same_host && x->cache_dir[0] && !getenv("KEVO_CACHE_DIR"))
    for (int i = 0; i < x->nservers; i++)
      env_add(&x->servers[i], "KEVO_CACHE_DIR", x->cache_dir);
  int ncomp = same_host && x->cache_dir[0] ? kvx_pool_size(x->nservers) : 0;
  if (ncomp > 0 && kvx_pool_new(ncomp, on_compiled, x, &x->pool) < 0)
    x->pool = NULL; /* no threads: the servers compile, as before */
  x->st.compilers = kvx_pool_threads(x->pool);
  /* Start every server now, so that a bad host or partition shows at once. */
  pthread_mutex_lock(&x->mu);
  for (int i = 0; i < x->nservers; i++) {
    char e[512];
    if (spawn(x, &x->servers[i], e, sizeof e) < 0) {
      pthread_mutex_unlock(&x->mu);
      kv_exec_close(x);
      return kv_error(err, errlen, "%s: %s", x->servers[i].label, e);
    }
  }
  for (;;) {
    int starting = 0;
    for (int i = 0; i < x->nservers; i++)
      starting += x->servers[i].state == S_STARTING;
    if (!starting)
      break;
    pump(x, 1.0);
  }
  int up = 0;
  for (int i = 0; i < x->nservers; i++)
    up += x->servers[i].state == S_IDLE;
  pthread_mutex_unlock(&x->mu);
  if (up == 0) {
    kv_error(err, errlen, "executor %s: no gate server started; %s", x->name,
             x->last_fault[0] ? x->last_fault : "(no reason given)");
    kv_exec_close(x);
    return -1;
  }
  if (pthread_create(&x->loop, NULL, loop_main, x) != 0) {
    kv_exec_close(x);
    return kv_error(err, errlen, "executor %s: cannot start its thread", x->name);
  }
  x->loop_started = 1;
  *out = x;
  return 0;
}

int kv_exec_alive(struct kv_exec *x, char *err, size_t errlen) {
  pthread_mutex_lock(&x->mu);
  int a = alive(x);
  if (!a)
    kv_error(err, errlen, "executor %s: every server is gone; the last failure: %s", x->name,
             x->last_fault);
  pthread_mutex_unlock(&x->mu);
  return a;
}

int kv_exec_width(struct kv_exec *x) {
  pthread_mutex_lock(&x->mu);
  int live = 0;
  for (int i = 0; i < x->nservers; i++)
    live += !x->hosts[x->servers[i].host].dropped;
  int w = live < x->concurrency ? (live > 0 ? live : 1) : x->concurrency;
  w += x->st.compilers; /* built ahead while the servers judge */
  pthread_mutex_unlock(&x->mu);
  return w;
}

/* The caller's jobs not yet taken (queued, compiling, in flight, finished). */
static int pending_of(const struct kv_exec *x, pthread_t me) {
  int n = 0;
  for (int i = 0; i < x->ndone; i++)
    n += pthread_equal(x->done[i].owner, me) != 0;
  for (int i = 0; i < x->nqueue; i++)
    n += pthread_equal(x->queue[i]->owner, me) != 0;
  for (int i = 0; i < x->nwaiting; i++)
    n += pthread_equal(x->waiting[i]->owner, me) != 0;
  for (int i = 0; i < x->nservers; i++)
    n += x->servers[i].job && pthread_equal(x->servers[i].job->owner, me);
  return n;
}

int kv_exec_pending(struct kv_exec *x) {
  pthread_mutex_lock(&x->mu);
  int n = pending_of(x, pthread_self());
  pthread_mutex_unlock(&x->mu);
  return n;
}

void kv_exec_stats(struct kv_exec *x, struct kv_exec_stats *out) {
  pthread_mutex_lock(&x->mu);
  tick(x);
  *out = x->st;
  out->wall_s = kv_now_s() - x->opened_s;
  pthread_mutex_unlock(&x->mu);
}

/* ---- the compile pool's side ------------------------------------------------------ */

static int grow(void **arr, int *cap, int n, size_t each) {
  if (n < *cap)
    return 0;
  int nc = *cap ? *cap * 2 : 16;
  void *p = realloc(*arr, each * (size_t)nc);
  if (!p)
    return -1;
  *arr = p;
  *cap = nc;
  return 0;
}

/* Puts j in the ready queue by submission order (a retried job goes to the
 * front instead: requeue_front). */
static int ready_put(struct kv_exec *x, struct job *j) {
  if (grow((void **)&x->queue, &x->capqueue, x->nqueue, sizeof *x->queue) < 0)
    return -1;
  int at = x->nqueue;
  while (at > 0 && x->queue[at - 1]->seq > j->seq && x->queue[at - 1]->attempts == 0)
    at--;
  memmove(x->queue + at + 1, x->queue + at, sizeof *x->queue * (size_t)(x->nqueue - at));
  x->queue[at] = j;
  x->nqueue++;
  j->ready_s = kv_now_s();
  return 0;
}

/* From a compiler thread: c is built; its jobs go to the servers. */
static void on_compiled(void *ud, struct kvx_compile *c) {
  struct kv_exec *x = ud;
  pthread_mutex_lock(&x->mu);
  c->done = 1;
  x->st.compiles++;
  x->st.compile_s += c->ended_s - c->started_s;
  if (c->rc < 0) {
    x->st.compile_failures++;
    if (!x->pool_note[0]) {
      snprintf(x->pool_note, sizeof x->pool_note, "%.500s", c->err);
      note(x,
           "executor %s: the compile pool could not build a candidate (%s); its server "
           "compiles it instead",
           x->name, x->pool_note);
    }
  }
  for (int i = 0; i < x->nwaiting;) {
    struct job *j = x->waiting[i];
    if (!built(j)) {
      i++;
      continue;
    }
    memmove(x->waiting + i, x->waiting + i + 1, sizeof *x->waiting * (size_t)(x->nwaiting - i - 1));
    x->nwaiting--;
    if (ready_put(x, j) < 0)
      job_failed(x, j);
  }
  wake_loop(x);
  pthread_mutex_unlock(&x->mu);
}

/* The pool's entry for content src of bundle b on a surface: an existing
 * one (built or on the way; *shared set), or a new one queued. NULL when
 * there is no pool or no memory. */
static struct kvx_compile *entry_of(struct kv_exec *x, const struct bundle *b, const char *surface,
                                    const char *src, size_t len, int compile_only,
                                    const struct kv_gate_opts *g, int *shared) {
  *shared = 0;
  if (!x->pool || !b->task)
    return NULL;
  char key[65];
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, b->hash, 65);
  kv_sha256_update(h, surface, strlen(surface) + 1);
  kv_sha256_update(h, src, len);
  kv_sha256_final(h, key);
  for (int i = x->ncompiles - 1; i >= 0; i--)
    if (!strcmp(x->compiles[i]->ckey, key)) {
      *shared = 1;
      return x->compiles[i];
    }
  if (grow((void **)&x->compiles, &x->capcompiles, x->ncompiles, sizeof *x->compiles) < 0)
    return NULL;
  struct kvx_compile *c = calloc(1, sizeof *c);
  if (!c || !(c->src = malloc(len ? len : 1))) {
    free(c);
    return NULL;
  }
  memcpy(c->src, src, len);
  c->len = len;
  c->compile_only = compile_only;
  memcpy(c->ckey, key, sizeof key);
  c->task = b->task;
  snprintf(c->surface, sizeof c->surface, "%s", surface);
  c->cache_dir = strdup(x->cache_dir);
  c->worker_path = strdup(g && g->worker_path ? g->worker_path : "");
  c->nvcc_path = strdup(g && g->nvcc_path ? g->nvcc_path : "");
  if (g) {
    snprintf(c->cuda_arch, sizeof c->cuda_arch, "%s", g->cuda_arch ? g->cuda_arch : "");
    c->compile_deadline_s = g->compile_deadline_s;
  }
  if (!c->cache_dir || !c->worker_path || !c->nvcc_path) {
    kvx_compile_free(c);
    return NULL;
  }
  x->compiles[x->ncompiles++] = c;
  kvx_pool_put(x->pool, c);
  return c;
}

/* The task's own sources that every evaluation builds beside the candidate
 * (reference.EXT, baseline.EXT), built by the pool before the task's first
 * job goes to a server: else every server builds them at once on its first
 * job. Entries like the candidates' (a candidate of the same bytes shares
 * one). */
static void task_sources(struct kv_exec *x, struct bundle *b, const char *surface,
                         const struct kv_gate_opts *g) {
  if (b->deps_surface[0])
    return; /* done for its first surface; another surface's servers build their own */
  snprintf(b->deps_surface, sizeof b->deps_surface, "%s", surface);
  const char *ext = kv_surface_ext(kv_surface_find(surface));
  const char *names[2] = {"reference", "baseline"};
  for (int k = 0; k < 2 && ext; k++) {
    char want[80];
    snprintf(want, sizeof want, "%s.%s", names[k], ext);
    for (int i = 0; i < b->nfiles; i++) {
      int shared;
      if (strcmp(b->files[i].name, want))
        continue;
      b->deps[b->ndeps] =
          entry_of(x, b, surface, (const char *)b->files[i].data, b->files[i].len, 1, g, &shared);
      b->ndeps += b->deps[b->ndeps] != NULL;
    }
  }
}

/* j's entry in the pool (and its task's sources'). */
static struct kvx_compile *compile_of(struct kv_exec *x, struct job *j, struct bundle *b,
                                      const struct kv_gate_opts *g) {
  if (!x->pool || !b->task)
    return NULL;
  task_sources(x, b, j->surface, g);
  if (!strcmp(b->deps_surface, j->surface))
    j->b_deps = b;
  struct kvx_compile *c = entry_of(x, b, j->surface, j->cand, j->cand_len, 0, g, &j->shared);
  x->st.compiles_shared += j->shared;
  return c;
}

/* Built: its entry and its task's sources. */
static int built(const struct job *j) {
  if (j->cc && !j->cc->done)
    return 0;
  for (int i = 0; j->b_deps && i < j->b_deps->ndeps; i++)
    if (!j->b_deps->deps[i]->done)
      return 0;
  return 1;
}

static int is_plain(const char *s) {
  size_t n = strlen(s);
  if (!n || n > KV_JOB_NAME_MAX || s[0] == '.')
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
      return 0;
  return 1;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct kv_job_file *)a)->name, ((const struct kv_job_file *)b)->name);
}

/* The task's directory as a bundle: its plain files, sorted by name. */
static struct bundle *bundle_of(struct kv_exec *x, const struct kv_task *t, char *err,
                                size_t errlen) {
  for (int i = 0; i < x->nbundles; i++)
    if (!strcmp(x->bundles[i]->dir, t->dir))
      return x->bundles[i];
  if (x->nbundles >= BUNDLES_MAX ||
      grow((void **)&x->bundles, &x->capbundles, x->nbundles, sizeof *x->bundles) < 0) {
    kv_error(err, errlen, "more than %d tasks in one executor (or out of memory)", BUNDLES_MAX);
    return NULL;
  }
  struct bundle *b = calloc(1, sizeof *b);
  if (!b) {
    kv_error(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(b->dir, sizeof b->dir, "%s", t->dir);
  DIR *d = opendir(t->dir);
  if (!d) {
    kv_error(err, errlen, "%s: cannot read the task's directory: %s", t->dir, strerror(errno));
    free(b);
    return NULL;
  }
  struct dirent *e;
  char *bufs[KV_JOB_FILES_MAX] = {0};
  int rc = 0;
  size_t total = 0;
  while (rc == 0 && (e = readdir(d))) {
    if (!is_plain(e->d_name))
      continue;
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", t->dir, e->d_name);
    if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
      continue;
    if (b->nfiles >= KV_JOB_FILES_MAX) {
      rc = kv_error(err, errlen,
                    "%s: more than %d files; a task sent to a gate server holds at most %d "
                    "(move the others out of the task's directory)",
                    t->dir, KV_JOB_FILES_MAX, KV_JOB_FILES_MAX);
      break;
    }
    size_t len;
    if (kv_read_file(p, KV_JOB_FILE_MAX, &bufs[b->nfiles], &len, err, errlen) < 0) {
      rc = -1;
      break;
    }
    struct kv_job_file *f = &b->files[b->nfiles];
    snprintf(f->name, sizeof f->name, "%s", e->d_name);
    f->data = (const uint8_t *)bufs[b->nfiles];
    f->len = len;
    b->nfiles++;
    total += len;
  }
  closedir(d);
  if (rc == 0 && total > KV_JOB_BLOB_MAX - (1 << 20))
    rc = kv_error(err, errlen, "%s: the task's files hold %zu bytes, more than a job carries",
                  t->dir, total);
  if (rc == 0 && !(b->data = malloc(total ? total : 1)))
    rc = kv_error(err, errlen, "out of memory");
  if (rc == 0) {
    /* sort by name, then lay the bytes out in that order */
    qsort(b->files, (size_t)b->nfiles, sizeof b->files[0], cmp_name);
    size_t off = 0;
    for (int i = 0; i < b->nfiles; i++) {
      memcpy(b->data + off, b->files[i].data, b->files[i].len);
      b->files[i].data = b->data + off;
      off += b->files[i].len;
    }
    b->len = total;
    kv_job_bundle_hash(b->files, b->nfiles, b->hash);
    /* The task as its servers load it (from these files), for the pool;
     * without it the servers compile. */
    char e2[512];
    if (x->pool && kv_task_load(b->dir, &b->task, e2, sizeof e2) < 0)
      b->task = NULL;
  }
  for (int i = 0; i < KV_JOB_FILES_MAX; i++)
    free(bufs[i]);
  if (rc < 0) {
    free(b->data);
    free(b);
    return NULL;
  }
  x->bundles[x->nbundles++] = b;
  return b;
}

static int submit(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                  const struct kv_gate_opts *g, void *ud, char *err, size_t errlen) {
  if (len > KV_SOURCE_MAX)
    return kv_error(err, errlen, "a candidate of %zu bytes; a job carries at most %d", len,
                    KV_SOURCE_MAX);
  struct bundle *b = bundle_of(x, t, err, errlen);
  if (!b)
    return -1;
  struct job *j = calloc(1, sizeof *j);
  if (!j || !(j->cand = malloc(len ? len : 1))) {
    free(j);
    return kv_error(err, errlen, "out of memory");
  }
  memcpy(j->cand, src, len);
  j->cand_len = len;
  j->b = b;
  j->seq = ++x->seq;
  snprintf(j->id, sizeof j->id, "j%llu", (unsigned long long)j->seq);
  const char *sf = g && g->surface ? g->surface : x->surface;
  char h[65];
  kv_sha256_hex(src, len, h);
  /* content-addressed: the candidate is named by its hash */
  snprintf(j->cand_name, sizeof j->cand_name, "cand-%.16s.%s", h,
           kv_surface_ext(kv_surface_find(sf)));
  snprintf(j->surface, sizeof j->surface, "%s", sf);
  j->timing = g ? g->timing : 1;
  struct kv_gate_opts dflt;
  kv_gate_opts_default(&dflt);
  j->timing_ci = g && g->timing_ci >= 0 && g->timing_ci <= 0.5 ? g->timing_ci : dflt.timing_ci;
  if (g) {
    snprintf(j->torch_compile, sizeof j->torch_compile, "%s",
             g->torch_compile ? g->torch_compile : "");
    j->has_seed = g->seed != 0;
    j->seed = g->seed;
    j->budget_s = g->time_budget_s > 0 && g->time_budget_s <= 600 ? g->time_budget_s : 0;
    j->deadline_s = g->job_deadline_s > 0 && g->job_deadline_s <= 3600 ? g->job_deadline_s : 0;
  }
  j->ud = ud;
  j->owner = pthread_self();
  j->submitted_s = kv_now_s();
  /* To the compile pool first (its content built once), then the servers;
   * without a pool, straight to the servers. */
  j->cc = compile_of(x, j, b, g);
  int rc;
  if (!built(j)) {
    rc = grow((void **)&x->waiting, &x->capwaiting, x->nwaiting, sizeof *x->waiting);
    if (rc == 0)
      x->waiting[x->nwaiting++] = j;
  } else {
    rc = ready_put(x, j);
  }
  if (rc < 0) {
    job_free(j);
    return kv_error(err, errlen, "out of memory");
  }
  wake_loop(x);
  return 0;
}

int kv_exec_submit(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                   const struct kv_gate_opts *g, void *ud, char *err, size_t errlen) {
  pthread_mutex_lock(&x->mu);
  int rc = submit(x, t, src, len, g, ud, err, errlen);
  pthread_mutex_unlock(&x->mu);
  return rc;
}

static int mine(const struct job *j, pthread_t me, const void *ud) {
  return j && j->ud == ud && pthread_equal(j->owner, me);
}

static int has(const struct kv_exec *x, pthread_t me, const void *ud) {
  for (int i = 0; i < x->ndone; i++)
    if (x->done[i].d.ud == ud && pthread_equal(x->done[i].owner, me))
      return 1;
  for (int i = 0; i < x->nqueue; i++)
    if (mine(x->queue[i], me, ud))
      return 1;
  for (int i = 0; i < x->nwaiting; i++)
    if (mine(x->waiting[i], me, ud))
      return 1;
  for (int i = 0; i < x->nservers; i++)
    if (mine(x->servers[i].job, me, ud))
      return 1;
  return 0;
}

int kv_exec_has(struct kv_exec *x, const void *ud) {
  pthread_mutex_lock(&x->mu);
  int h = has(x, pthread_self(), ud);
  pthread_mutex_unlock(&x->mu);
  return h;
}

/* The caller's first finished job (any), or the one it submitted with ud;
 * called with mu held. */
static int next_of(struct kv_exec *x, int any, const void *ud, double timeout_s,
                   struct kv_exec_done *d, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  pthread_t me = pthread_self();
  double until = kv_now_s() + (timeout_s > 0 ? timeout_s : 0);
  for (;;) {
    for (int i = 0; i < x->ndone; i++)
      if (pthread_equal(x->done[i].owner, me) && (any || x->done[i].d.ud == ud)) {
        *d = x->done[i].d;
        memmove(x->done + i, x->done + i + 1, sizeof *x->done * (size_t)(x->ndone - i - 1));
        x->ndone--;
        return 1;
      }
    if (pending_of(x, me) == 0)
      return 0;
    if (!any && !has(x, me, ud))
      return kv_error(err, errlen, "executor %s: no such job", x->name);
    if (!alive(x)) {
      fail_all(x); /* the loop does it too; a caller need not wait for it */
      int mine_done = 0;
      for (int i = 0; i < x->ndone; i++)
        mine_done += pthread_equal(x->done[i].owner, me) != 0;
      if (mine_done > 0)
        continue;
      return kv_error(err, errlen, "executor %s: every server is gone; the last failure: %s",
                      x->name, x->last_fault);
    }
    double left = until - kv_now_s();
    if (left <= 0)
      return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double w = left < 1.0 ? left : 1.0;
    ts.tv_sec += (time_t)w;
    ts.tv_nsec += (long)((w - (double)(time_t)w) * 1e9);
    if (ts.tv_nsec >= 1000000000L)
      ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&x->cv, &x->mu, &ts);
  }
}

int kv_exec_next(struct kv_exec *x, double timeout_s, struct kv_exec_done *d, char *err,
                 size_t errlen) {
  pthread_mutex_lock(&x->mu);
  int rc = next_of(x, 1, NULL, timeout_s, d, err, errlen);
  pthread_mutex_unlock(&x->mu);
  return rc;
}

int kv_exec_take(struct kv_exec *x, const void *ud, double timeout_s, struct kv_exec_done *d,
                 char *err, size_t errlen) {
  pthread_mutex_lock(&x->mu);
  int rc = next_of(x, 0, ud, timeout_s, d, err, errlen);
  pthread_mutex_unlock(&x->mu);
  return rc;
}

void kv_exec_done_release(struct kv_exec_done *d) {
  free(d->result_json);
  d->result_json = NULL;
}

int kv_exec_servers(struct kv_exec *x, struct kv_exec_server_info *out, int cap) {
  pthread_mutex_lock(&x->mu);
  int n = 0;
  for (int i = 0; i < x->nservers && n < cap; i++, n++) {
    const struct server *s = &x->servers[i];
    struct kv_exec_server_info *o = &out[n];
    memset(o, 0, sizeof *o);
    snprintf(o->label, sizeof o->label, "%s", s->label);
    snprintf(o->host, sizeof o->host, "%s", s->hello.host);
    snprintf(o->gpu, sizeof o->gpu, "%s", s->gpu);
    o->pid = s->pid;
    o->remote_pid = s->hello.pid;
    o->busy = s->state == S_BUSY;
    o->jobs_done = s->jobs_done;
    o->task_sends = s->task_sends;
    o->dropped = x->hosts[s->host].dropped;
  }
  pthread_mutex_unlock(&x->mu);
  return n;
}

void kv_exec_close(struct kv_exec *x) {
  if (!x)
    return;
  if (x->loop_started) {
    pthread_mutex_lock(&x->mu);
    x->stopping = 1;
    wake_loop(x);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->loop, NULL);
  }
  kvx_pool_free(x->pool); /* compiles under way end (on_compiled takes mu: not held here) */
  x->pool = NULL;
  for (int i = 0; i < x->nservers; i++) {
    struct server *s = &x->servers[i];
    if (s->fd >= 0 && s->state == S_IDLE) {
      /* a polite end: QUIT, then a moment to leave */
      send_frame(s->fd, KV_GATE_QUIT, 0, "{}", NULL, 0, NULL, 0);
      struct pollfd pf = {s->fd, POLLIN, 0};
      poll(&pf, 1, 2000);
    }
    if (s->state != S_DOWN)
      reap(s);
    job_free(s->job);
    for (int a = 0; a < ARGV_MAX && s->argv[a]; a++)
      free(s->argv[a]);
    for (int e = 0; e < ENV_MAX && s->envp[e]; e++)
      free(s->envp[e]);
  }
  for (int i = 0; i < x->nqueue; i++)
    job_free(x->queue[i]);
  for (int i = 0; i < x->nwaiting; i++)
    job_free(x->waiting[i]);
  for (int i = 0; i < x->ndone; i++)
    kv_exec_done_release(&x->done[i].d);
  for (int i = 0; i < x->ncompiles; i++)
    kvx_compile_free(x->compiles[i]);
  for (int i = 0; i < x->nbundles; i++) {
    kv_task_free(x->bundles[i]->task);
    free(x->bundles[i]->data);
    free(x->bundles[i]);
  }
  free(x->bundles);
  free(x->queue);
  free(x->waiting);
  free(x->compiles);
  free(x->done);
  for (int i = 0; i < 2; i++)
    if (x->wake[i] >= 0)
      close(x->wake[i]);
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  free(x);
}
