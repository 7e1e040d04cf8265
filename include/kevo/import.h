/* kevo import: KernelBench-style PyTorch modules in, task directories out.
 *
 * A module (`class Model(nn.Module)`, module-level size constants,
 * `get_inputs()`, `get_init_inputs()`) is run once by a Python helper
 * (python/kevo_import.py) in a child process with a deadline and a scrubbed
 * environment; the helper prints one line `KEVO_IMPORT_JSON {...}` with the
 * real shapes and dtypes of every input, parameter, buffer and output at the
 * module's own sizes (the bench run) and at its size constants scaled down
 * (the check runs), and an init for every input and weight. kevo turns that
 * into task.json (shape expressions over the constants' names), copies the
 * module verbatim to reference.py and writes a README line, into a temporary
 * directory renamed into place: nothing is ever half-written.
 *
 * The library never prints and never exits. */
#ifndef KEVO_IMPORT_H
#define KEVO_IMPORT_H

#include <stddef.h>
#include <stdint.h>

/* The helper's reply is at most this long; the module's source at most this. */
#define KV_IMPORT_MAX_OUTPUT (4 << 20)
#define KV_IMPORT_MAX_SOURCE (1 << 20)
/* The bench run, check runs and probes (runs that are evidence for the
 * shapes but never size sets). */
#define KV_IMPORT_MAX_RUNS 8
/* The helper's data cap (RLIMIT_DATA, kv_import_data_cap): twice the most
 * the CPU runs may hold, plus this for Python and torch themselves. */
#define KV_IMPORT_DATA_BASE ((int64_t)4 << 30)
/* The vendor libraries `kevo import --allow` accepts. */
#define KV_IMPORT_ALLOW_NAMES "cublas, cudnn, cublaslt"
#define KV_IMPORT_MAX_ALLOW 3

struct kv_import_opts {
  const char *python;  /* NULL: $KEVO_PYTHON, else python3 from PATH */
  const char *helper;  /* NULL: kv_import_find_helper */
  double deadline_s;   /* per module; default 120 */
  int64_t max_bytes;   /* most the CPU runs may hold; default 2 GiB */
  int64_t check_bytes; /* most a check run may hold; default 64 MiB */
  int threads;         /* torch's CPU threads; default 1 */
  int force;           /* replace an existing task directory */
  const char *sandbox; /* kevo-sandbox; NULL: $KEVO_SANDBOX, else beside the executable */
  /* Vendor libraries a candidate of the task may call: written as task.json's
   * "allow" (kv_import_parse_allow fills them from --allow). */
  int nallow;
  const char *allow[KV_IMPORT_MAX_ALLOW];
  /* Run the module even where a sandbox layer is unavailable on this host
   * (never where one fails): KEVO_IMPORT_ALLOW_UNSANDBOXED=1, read by
   * kv_import_opts_default. Off: such a host imports nothing and says which
   * layer is missing. */
  int allow_unsandboxed;
};

/* Why a module was not imported: a short cause (grouped in summaries) and a
 * one-line detail naming the file, the cause and the fix. */
struct kv_import_result {
  int ok;
  char name[64];     /* the task's name (from the file name) */
  char cause[32];    /* "" when ok; e.g. syntax, no_model, not_tensor, too_large, timeout, crash */
  char detail[1536]; /* "" when ok */
  char task_dir[4096]; /* where the task was written, when ok */
  double seconds;
};

/* Defaults; max_bytes from this host's memory (an eighth of it, from 2 to 16
 * GiB): the most a module run at its own sizes on the CPU may hold. */
void kv_import_opts_default(struct kv_import_opts *o);

/* "cublas,cudnn" (--allow's value) into o->allow. Only the names of
 * KV_IMPORT_ALLOW_NAMES; an unknown or repeated name is -1 with err naming
 * `flag` and the accepted names. */
int kv_import_parse_allow(struct kv_import_opts *o, const char *list, const char *flag, char *err,
                          size_t errlen);

/* The smallest memory of this machine's GPUs, by nvidia-smi (10 s deadline);
 * -1 without one. The byte caps of the task (kv_task_max_set_bytes) come from
 * the device memory; kevo import sets it from here when it is less than what
 * kevo assumes (kv_task_device_memory) and neither --device-memory nor
 * KEVO_DEVICE_MEMORY_GIB is given. */
int kv_import_gpu_memory(int64_t *bytes);

/* RLIMIT_DATA of the helper's process: 2 * o->max_bytes + KV_IMPORT_DATA_BASE. */
int64_t kv_import_data_cap(const struct kv_import_opts *o);

/* The helper script: $KEVO_IMPORT_HELPER, else kevo_import.py beside the
 * executable, else ../share/kevo/kevo_import.py from it, else the source
 * tree's python/kevo_import.py. */
int kv_import_find_helper(char *out, size_t cap, char *err, size_t errlen);

/* The task name for a module path: its base name without .py, characters
 * other than letters, digits, '_', '-', '.' written '_', at most 63. */
void kv_import_task_name(const char *path, char *out, size_t cap);

/* The module runs (the helper executes it) inside kevo-sandbox: a new
 * network namespace, no_new_privs, Landlock (writes only in its scratch
 * directory; reads the system directories, the Python installation and
 * virtual environment, PYTHONPATH, ~/.local/lib, the helper's and the
 * module's directories), the seccomp filter of kevo's workers with program
 * execution allowed (kevo-sandbox -s), resource limits with its data capped
 * at kv_import_data_cap; HOME and TMPDIR are the scratch directory. Every
 * layer is required (kevo-sandbox -R) unless o->allow_unsandboxed. Without
 * kevo-sandbox nothing runs (-1, err says so); a layer that fails or is
 * missing is -1 too, err naming it.
 * Imports one module into OUTDIR/NAME. Returns 0 when the module was judged
 * (r->ok says whether it was imported; r->cause and r->detail say why not),
 * -1 when kevo itself could not run the helper (err says why: no Python, no
 * helper, no memory). Safe to call from several threads at once. */
int kv_import_module(const struct kv_import_opts *o, const char *py_path, const char *outdir,
                     struct kv_import_result *r, char *err, size_t errlen);

/* Turns the helper's output (any text holding one KEVO_IMPORT_JSON line; the
 * last one counts) into the task.json text for a task called `name` whose
 * module was `source_name`. On success *task_json is malloc'd and the result
 * validated by kv_task_parse. On failure returns -1 with a short cause in
 * `cause` (the helper's own for a module it refused, "helper" for a reply
 * that is not what kevo expects, "kevo_limits" for a task kevo cannot hold)
 * and a one-line message in err. */
int kv_import_task_json(const char *output, size_t len, const char *name, const char *source_name,
                        char **task_json, char *cause, size_t causecap, char *err, size_t errlen);

/* kevo task starter: a minimal correct candidate of an imported task,
 * written by kevo_starter.py ($KEVO_STARTER_HELPER, else beside the
 * executable, else the source tree's) from reference.py, traced by torch.fx
 * inside kevo-sandbox (o's python, sandbox and deadline). ok 0: the task has
 * an operator, a dtype or control flow the generator lacks; cause and detail
 * say which. */
#define KV_STARTER_MARK "KEVO_STARTER_JSON "
#define KV_STARTER_MAX_OUTPUT (32u << 20)
struct kv_starter {
  int ok;
  char *source;    /* the candidate (malloc'd), when ok */
  char *entry;     /* its entry alone, without the runtime pasted before it */
  char what[1024]; /* what it computes and how */
  char cause[32];  /* when not ok: unsupported, error */
  char detail[1024];
};
int kv_import_starter(const struct kv_import_opts *o, const char *task_dir, const char *surface,
                      struct kv_starter *s, char *err, size_t errlen);
void kv_starter_release(struct kv_starter *s);

#endif
