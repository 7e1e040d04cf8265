/* Executors: where evaluations run. Each starts gate servers (`kevo gate
 * serve --stdio`, include/kevo/serve.h) and sends them jobs: `local` (servers
 * on this machine), `gpus` (servers per visible GPU, each with its own
 * CUDA_VISIBLE_DEVICES), `ssh` (`ssh HOST kevo gate serve --stdio`, hosts from
 * a configuration file) and `slurm` (`srun ... kevo gate serve --stdio`, one
 * long-lived server per allocation). A const table like surfaces and
 * providers. Task bundles are content-addressed (a host receives each task
 * once); every verdict says which executor, host, server and GPU judged it.
 * A server or host that dies mid-job costs only that job, which is retried on
 * another server up to a limit and then reported as failed; a host that keeps
 * failing is dropped with a note. A thread of its own talks to the servers
 * and a compile pool builds ahead of them; the calls below may come from
 * several threads at once (a bench's tasks sharing one executor): each
 * thread takes only the results of the jobs it submitted (kv_exec_next,
 * kv_exec_take, kv_exec_has and kv_exec_pending see that thread's jobs).
 * Never prints, never exits (the note callback runs on the executor's
 * thread). */
#ifndef KEVO_EXEC_H
#define KEVO_EXEC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kevo/gate.h"
#include "kevo/task.h"

/* ---- the configuration file (ssh hosts, Slurm settings, fault limits) ---- */

enum {
  KV_EXEC_HOSTS_MAX = 64,
  KV_EXEC_ARGS_MAX = 16, /* extra ssh / srun arguments */
  KV_EXEC_ENV_MAX = 4,   /* KEVO_* variables given to a remote server */
  KV_EXEC_SERVERS_MAX = 64,
  KV_EXEC_CONFIG_MAX = 256 << 10, /* bytes of the file */
};

struct kv_exec_env {
  char name[64];
  char value[256];
};
struct kv_exec_host {
  char host[256]; /* an ssh destination: "gpu3", "me@gpu3.lab", an ssh_config alias */
  int servers;    /* gate servers on it (default 1) */
  char kevo[256]; /* kevo's path there (default "kevo") */
  int nenv;
  struct kv_exec_env env[KV_EXEC_ENV_MAX];
};
/* The file (JSON), every field optional:
 *   {"ssh": {"hosts": ["gpu1", {"host": "me@gpu2", "servers": 2, "kevo": "/opt/kevo/bin/kevo",
 *                               "env": {"KEVO_CACHE_DIR": "/scratch/kevo"}}],
 *            "options": ["-p", "2222", "-i", "/home/me/.ssh/kevo"]},
 *    "slurm": {"partition": "gpu", "gres": "gpu:1", "time": "02:00:00", "servers": 2,
 *              "kevo": "kevo", "srun": ["--account=lab"], "env": {...}},
 *    "max_tries": 3, "drop_after": 3, "job_timeout_s": 1800, "start_timeout_s": 120} */
struct kv_exec_config {
  char path[512]; /* the file it was read from (messages name it) */
  int nhosts;
  struct kv_exec_host hosts[KV_EXEC_HOSTS_MAX];
  int nssh_args;
  char ssh_args[KV_EXEC_ARGS_MAX][256];
  char partition[64], gres[64], time_limit[32];
  int slurm_servers; /* allocations, one gate server each (default: the concurrency) */
  char slurm_kevo[256];
  int nsrun_args;
  char srun_args[KV_EXEC_ARGS_MAX][256];
  int nslurm_env;
  struct kv_exec_env slurm_env[KV_EXEC_ENV_MAX];
  int max_tries;          /* servers a job may try before it is reported failed (default 3) */
  int drop_after;         /* failures in a row after which a host is dropped (default 3) */
  double job_timeout_s;   /* a job's verdict must arrive within this (default 1800) */
  double start_timeout_s; /* a server's hello must arrive within this (default 120) */
};
void kv_exec_config_default(struct kv_exec_config *c);
/* Parses the file's text (outside input: every field checked, unknown fields
 * refused, host names that could be read as options refused). `path` only
 * names the file in messages. 0, or -1 with err naming the file, the field
 * and the fix. */
int kv_exec_config_parse(const char *text, size_t len, const char *path, struct kv_exec_config *c,
                         char *err, size_t errlen);
int kv_exec_config_load(const char *path, struct kv_exec_config *c, char *err, size_t errlen);

/* ---- the executor --------------------------------------------------------- */

struct kv_exec_opts {
  const char *name;    /* "local", "gpus", "ssh", "slurm" */
  int concurrency;     /* jobs in flight at once (>= 1) */
  const char *gpus;    /* gpus: "0,1" (default: every visible GPU) */
  const char *surface; /* "cpu" or "cuda": a cuda server refuses to start without a GPU */
  const char *kevo;    /* this machine's kevo binary (local, gpus) */
  const struct kv_exec_config *config; /* ssh, slurm; limits for all (NULL: defaults) */
  double idle_s;                       /* a server ends after this long without a job (600) */
  /* Notes for the user ("ssh gpu2: dropped after 3 failures in a row: ..."). */
  void (*note)(void *ud, const char *msg);
  void *ud;
};

struct kv_exec;

/* Names of the executors (NULL-terminated), and one line on each. */
const char *const *kv_exec_names(void);
const char *kv_exec_describe(const char *name);

/* Starts the servers and waits for their hellos (each checked: the protocol,
 * and for cuda a usable GPU). Fails, naming each server's reason, when none
 * came up. */
int kv_exec_open(const struct kv_exec_opts *o, struct kv_exec **out, char *err, size_t errlen);
void kv_exec_close(struct kv_exec *x);
/* Jobs worth keeping submitted: those the servers judge at once (the
 * concurrency, capped by the live servers) plus one per compiler of the
 * compile pool, which builds them ahead. */
int kv_exec_width(struct kv_exec *x);

/* Queues an evaluation of src (a candidate of task t) under g's options
 * (surface, seed, timing, budget, deadline, torch_compile). ud comes back
 * with its result. 0, or -1 (the task's files cannot be bundled). */
int kv_exec_submit(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                   const struct kv_gate_opts *g, void *ud, char *err, size_t errlen);

struct kv_exec_done {
  void *ud;
  int ok;            /* 1: a verdict (result_json); 0: no server could judge it (error) */
  char *result_json; /* the gate's result JSON, with "executor": {name, host, server, gpu,
                        pid, attempts} added (malloc'd) */
  char error[1024];
  int attempts;
  char host[256], gpu[64];
};
void kv_exec_done_release(struct kv_exec_done *d);
/* Waits up to timeout_s for a finished job: 1 (d filled), 0 (none yet), -1
 * with err when jobs remain but every server is gone. */
int kv_exec_next(struct kv_exec *x, double timeout_s, struct kv_exec_done *d, char *err,
                 size_t errlen);
/* The same for the job submitted with ud (others finished meanwhile stay
 * for later calls): 1, 0, or -1 (also when no job has that ud). */
int kv_exec_take(struct kv_exec *x, const void *ud, double timeout_s, struct kv_exec_done *d,
                 char *err, size_t errlen);
/* 1 when a job submitted with ud is queued, in flight or finished and not
 * yet taken. */
int kv_exec_has(struct kv_exec *x, const void *ud);
/* 1 while some host is not dropped; 0 with err (the last failure) when
 * every server is gone: nothing more can be judged. */
int kv_exec_alive(struct kv_exec *x, char *err, size_t errlen);
/* Jobs submitted and not yet returned by kv_exec_next or kv_exec_take. */
int kv_exec_pending(struct kv_exec *x);

/* What the pipeline did (tests, bench/gpus.sh). With a compile pool
 * (executors local and gpus: their servers share this host's object cache)
 * every job's candidate is built by the pool, first submitted first built,
 * before it goes to a server, which then finds it built; one build per
 * content however many jobs carry it. */
struct kv_exec_stats {
  int compilers;         /* the pool's threads (0: none, the servers compile) */
  int compiles;          /* entries the pool built (cache hits and compile errors included) */
  int compiles_shared;   /* jobs whose content an earlier job's entry built */
  int compile_failures;  /* entries kevo could not build: their servers compiled */
  double compile_s;      /* the pool's seconds, summed */
  int sent, sent_built;  /* jobs sent to servers; of those, built by the pool first */
  double slot_busy_s;    /* servers' seconds with a job in flight, summed */
  double slot_starved_s; /* servers' seconds idle while a job waited for its compile */
  double wall_s;         /* since kv_exec_open */
};
void kv_exec_stats(struct kv_exec *x, struct kv_exec_stats *out);

/* What the servers are doing (tests, progress). */
struct kv_exec_server_info {
  char label[128]; /* "local #0", "gpu 1 #0", "ssh gpu2 #0", "slurm #1" */
  char host[256];  /* as the server's hello says */
  char gpu[64];    /* its CUDA_VISIBLE_DEVICES, or "" */
  pid_t pid;       /* the local process (kevo, ssh or srun); 0 when not running */
  pid_t remote_pid;
  int busy;       /* a job in flight */
  int jobs_done;  /* verdicts returned */
  int task_sends; /* jobs that carried a task's files to its host */
  int dropped;    /* its host was dropped */
};
int kv_exec_servers(struct kv_exec *x, struct kv_exec_server_info *out, int cap);

#endif
