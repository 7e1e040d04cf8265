/* Internal to the gate: one call of a compiled object in a kevo-worker that
 * a developer tool (Nsight Compute, compute-sanitizer) starts and watches
 * (toolcall.c). The tool launches the worker (its argv comes first), so the
 * worker still runs the object inside its own sandbox, less the layers the
 * tool cannot work under (kevo-worker --without NAME; found on an H100 by
 * starting the worker under each tool with one layer off at a time, see
 * docs/cuda.md, "Both tools run the candidate"). Below ncu.c, sanitize.c
 * and toolrun.c. Never prints, never exits. */
#ifndef KEVO_GATE_TOOLCALL_H
#define KEVO_GATE_TOOLCALL_H

#include <stdint.h>

#include "internal.h"

struct kv_tool_run {
  const char *const *wrap;      /* the tool's argv, NULL-terminated */
  const char *const *without;   /* layers left off in the worker, NULL-terminated */
  const char *const *extra_env; /* added to the worker's environment, NULL-terminated */
  const char *reads[4];         /* extra directories the worker may read (the tool's) */
  int nreads;
  double start_s;    /* the worker's start under the tool (HELLO) */
  double deadline_s; /* the call */
  double exit_s;     /* the tool's own exit once the worker has quit (its report) */
  int keep_stderr;   /* the worker's stderr into kv_tool_outcome.err_text */
};

struct kv_tool_outcome {
  enum kv_call_status call;        /* the call's status */
  char detail[512];                /* what the call said or how it ended */
  int tool_exited;                 /* the tool exited by itself (else it was killed) */
  struct kv_sandbox_status layers; /* what the worker had on, from its HELLO */
  double seconds;                  /* start to the tool's exit */
  char *err_text; /* keep_stderr: what the worker wrote to stderr (capped; malloc'd) */
  int tool_netns; /* the tool and the worker shared a network namespace of their own */
};

/* Starts a worker of surface `surface` under the tool, gives it the task,
 * loads `so` into slot 0 (as a candidate: locked afterwards, unless "lock" is
 * among `without`), runs one CHECK call at set[index] with `seed`, quits it
 * and waits for the tool to exit (or kills it). Returns 0 when the worker
 * started (whatever the call did: see out), -1 with err when it could not.
 * With no wrap (NULL), the worker is started directly (with extra_env and
 * the layers in `without`: the cpu surface's AddressSanitizer run). */
int kv_tool_call(const struct kv_session *s, const char *so, int candidate, const char *set,
                 int index, uint64_t seed, const struct kv_tool_run *tr,
                 struct kv_tool_outcome *out, char *err, size_t errlen);

/* The version a tool reports (`TOOL --version`'s "Version X" line): "" when
 * it does not answer. */
void kv_tool_version(const char *tool, char *out, size_t cap);
/* The same, asked once per tool path in the process ("" for none). */
const char *kv_tool_version_cached(const char *tool);

/* The layers the worker leaves off under `tool` ("ncu" or
 * "compute-sanitizer") into out (NULL-terminated, at most max - 1), names
 * kept in store. Returns their number. */
int kv_tool_layers_off(const char *tool, const char **out, int max, char *store, size_t cap);
/* Those layers as a reader sees them in a report ("netns, seccomp, exec
 * lockdown"; "" when none). */
void kv_tool_layers_said(const char *const *without, char *out, size_t cap);

/* The directory of a tool's executable, into out ("" when it has none). */
void kv_tool_dir(const char *tool, char *out, size_t cap);

/* The tool's argv inside its own network namespace (kevo-sandbox -n) into
 * out (NULL-terminated, at most cap), kevo-sandbox's path kept in sbx; the
 * layers for the worker, "tool_netns" left out, into worker_off. Returns 1
 * when wrapped, 0 when "tool_netns" is among `without` (the tool runs in the
 * host's network), -1 with err. */
int kv_tool_in_netns(const char *worker_path, const char *dir, const char *const *wrap,
                     const char *const *without, const char **out, int cap, const char **worker_off,
                     int offcap, char *sbx, size_t sbxcap, char *err, size_t errlen);

/* Asks the worker to quit and waits up to exit_s for the tool (the process
 * group's leader) to exit by itself (*exited), so that it writes its report;
 * then kills what is left of the group and releases the worker. */
void kv_tool_stop(struct kv_worker *w, double exit_s, int *exited);

#endif
