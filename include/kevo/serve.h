/* The gate as a server: evaluation jobs in, verdicts out, as frames (kevo's
 * wire format, include/kevo/wire.h) over a pair of descriptors, e.g. the
 * stdin and stdout of `kevo gate serve --stdio`, which is what an executor
 * starts locally, over ssh or under Slurm. Each job carries its task as a
 * bundle of files, content-addressed (sent once per server: later jobs name
 * it by hash), and the candidate's source; the server judges it with the
 * same gate, sandbox, deadlines and worker replacement as `kevo eval`. The
 * protocol has a version, and a client or server of another version is
 * refused with a message that says which. Never prints, never exits. */
#ifndef KEVO_SERVE_H
#define KEVO_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kevo/gate.h"

#define KV_GATE_PROTOCOL 1
/* The exit status of a server that refuses to serve on this host for good
 * (asked for the cuda surface where no GPU can be used): an executor drops
 * the host at once instead of retrying it. */
#define KV_EXEC_REFUSED 3

enum kv_gate_msg {
  KV_GATE_HELLO = 200, /* server -> client first: {"kevo", "protocol", "host", "pid",
                          "cuda_visible_devices", "device"} */
  KV_GATE_EVAL,        /* client -> server: a job (below); blob: its files, then the candidate */
  KV_GATE_VERDICT,     /* server -> client: {"id", "result"} or {"id", "error"[, "need_task"]} */
  KV_GATE_QUIT,        /* client -> server: end */
};

/* Caps on a job. */
enum {
  KV_JOB_FILES_MAX = 16,
  KV_JOB_FILE_MAX = 8 << 20,  /* bytes of one task file */
  KV_JOB_BLOB_MAX = 40 << 20, /* the files and the candidate together */
  KV_JOB_NAME_MAX = 64,
};

/* A job's JSON:
 *   {"protocol": 1, "id": "j42",
 *    "task": {"hash": "<sha256 of the bundle>", "files": [{"name": "task.json", "bytes": 812},
 *             ...]},          // files left out when the server already holds the hash
 *    "candidate": {"name": "good.c", "bytes": 901},
 *    "options": {"surface": "cpu", "seed": 7, "timing": true, "budget_s": 1.0,
 *                "deadline_s": 30, "torch_compile": "default",
 *                "timing_ci": 0.01}}
 * A bundle's hash: sha256 over, for each file in order, its name, a NUL, its
 * length in decimal, a NUL, and its bytes. */
struct kv_job_file {
  char name[KV_JOB_NAME_MAX + 1];
  const uint8_t *data; /* into the blob */
  size_t len;
};
struct kv_job {
  char id[128];
  char task_hash[65];
  int nfiles; /* 0: the server must already hold task_hash */
  struct kv_job_file files[KV_JOB_FILES_MAX];
  struct kv_job_file candidate;
  /* options (those absent keep kv_gate_opts_default's values) */
  char surface[16];
  char torch_compile[32];
  int has_seed, timing;
  uint64_t seed;
  double budget_s, deadline_s;
  int has_timing_ci; /* adaptive timing's target (kv_gate_opts.timing_ci) */
  double timing_ci;
};
/* Parses and checks a job (untrusted input: names are plain file names, every
 * length within its cap and within the blob, the files' hash is the hash it
 * claims). 0, or -1 with err saying what is wrong. */
int kv_job_parse(const char *json, const uint8_t *blob, uint64_t blob_len, struct kv_job *job,
                 char *err, size_t errlen);
/* The hash of a bundle of files (see above). */
void kv_job_bundle_hash(const struct kv_job_file *files, int n, char hex[65]);

struct kv_serve_opts {
  const char *cache_dir; /* where bundles are kept (default: gate->cache_dir, else the gate's) */
  /* Each job's options before the job's own (what a job names, calib and
   * the server's warm workers replace theirs): where the worker, compilers
   * and cache are (worker_path, nvcc_path, cuda_arch, cache_dir); NULL:
   * kv_gate_opts_default. */
  const struct kv_gate_opts *gate;
  const struct kv_calib *calib; /* cpu ceilings, as for kv_gate_eval */
  double idle_s;                /* the server ends after this long without a job (default 3600) */
  double frame_s;               /* the longest a started frame may take to arrive (default 60) */
  const char *device;           /* what the hello says of the device checked at start, or NULL */
};
/* Serves jobs read from in_fd, verdicts written to out_fd, until QUIT, the
 * end of the input, or idle_s without a job. Returns 0, or -1 with err when
 * the channel broke (a malformed frame, a write that failed). */
int kv_gate_serve(int in_fd, int out_fd, const struct kv_serve_opts *o, char *err, size_t errlen);

#endif
