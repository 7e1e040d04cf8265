/* kevo synthesize: practice tasks written by an LLM, each imported with kevo
 * import's machinery, checked like `kevo task check`, refused as a duplicate
 * when it is the same operator graph at the same shapes as a task already
 * there (see adapt.h). One thread talks to the model and the store; `jobs`
 * threads judge replies (a Python child per import, the torch reference
 * worker per check). */
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <signal.h>

#include <jansson.h>

#include "internal.h"
#include "kevo/adapt.h"
#include "kevo/import.h"
#include "kevo/llm.h"
#include "kevo/util.h"

#define REGISTRY_MAX 100000
#define HELPER_OUT_MAX (4u << 20)
#define EXAMPLE_MAX (24u << 10) /* a --from module shown in a prompt, bytes */
#define PROMPT_MAX (96u << 10)
#define MAX_LLM_FAILURES 5
#define MAX_CHECK_FAILURES 3

/* ---- the operators a composite module combines ------------------------------ */

const char *const kv_synth_default_ops[] = {
    "nn.Linear (a dense layer)",
    "torch.matmul (matrix product)",
    "torch.bmm (batched matrix product)",
    "nn.Conv1d",
    "nn.Conv2d",
    "nn.ConvTranspose2d",
    "nn.Conv3d",
    "F.relu",
    "F.gelu",
    "F.silu",
    "torch.sigmoid",
    "torch.tanh",
    "F.leaky_relu",
    "F.hardswish",
    "F.softplus",
    "F.mish",
    "torch.softmax over the last dimension",
    "torch.log_softmax",
    "nn.LayerNorm",
    "nn.BatchNorm1d (eval mode)",
    "nn.BatchNorm2d (eval mode)",
    "nn.GroupNorm",
    "nn.InstanceNorm2d",
    "RMS normalisation written out (x * rsqrt(mean(x^2) + eps))",
    "F.max_pool2d",
    "F.avg_pool2d",
    "F.adaptive_avg_pool2d",
    "torch.sum over one dimension",
    "torch.mean over one dimension",
    "torch.amax over one dimension",
    "torch.logsumexp",
    "torch.cumsum",
    "torch.argmax",
    "torch.clamp",
    "torch.where with a comparison",
    "an elementwise add of two tensors",
    "an elementwise multiply by a learned per-channel scale",
    "a residual connection (x + f(x))",
    "a broadcast add of a bias vector",
    "division by a constant",
    "torch.exp",
    "torch.log1p",
    "torch.sqrt of an absolute value",
    "torch.pow with a small integer exponent",
    "transpose / permute of two dimensions",
    "reshape (view) between layers",
    "torch.cat of two tensors along a dimension",
    "a gather along a dimension with integer indices",
    "F.normalize (L2 over a dimension)",
    "a scaled dot-product attention written out (q @ k^T / sqrt(d), softmax, @ v)",
    "F.cosine_similarity",
    "torch.triu masking",
    "F.embedding lookup",
    "torch.nn.functional.pad",
    "torch.diff",
    "an outer product (torch.einsum)",
};
const int kv_synth_ndefault_ops = (int)KV_ARRAY_LEN(kv_synth_default_ops);

/* AdaExplore's recipe (kevo/preset.h): torch.nn layers a practice task
 * combines with KernelBench level-1 problems. No Dropout: in training mode
 * it is ill-posed, and kevo's check refuses it. */
static const char *const nn_layers[] = {
    "nn.Linear",      "nn.Conv1d",    "nn.Conv2d",    "nn.ConvTranspose2d",
    "nn.BatchNorm2d", "nn.LayerNorm", "nn.GroupNorm", "nn.InstanceNorm2d",
    "nn.ReLU",        "nn.GELU",      "nn.SiLU",      "nn.Tanh",
    "nn.Sigmoid",     "nn.Softmax",   "nn.LeakyReLU", "nn.Hardswish",
    "nn.Mish",        "nn.MaxPool2d", "nn.AvgPool2d", "nn.AdaptiveAvgPool2d",
};
#define ADA_PROBLEMS 3 /* KernelBench level-1 problems a task combines */
#define ADA_LAYERS 3   /* and torch.nn layers */
#define ADA_MAX_ID 50  /* problems with ids up to this */

/* The KernelBench id a task's name starts with ("level1/19_ReLU": 19; the
 * suite's path to it left out), else 0. */
static int kb_id(const char *path) {
  const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  int id = 0;
  for (int i = 0; name[i] >= '0' && name[i] <= '9' && i < 6; i++)
    id = id * 10 + (name[i] - '0');
  return name[0] >= '0' && name[0] <= '9' && name[strspn(name, "0123456789")] == '_' ? id : 0;
}

static const char system_prompt[] =
    "You write small, self-contained PyTorch modules in KernelBench's format: reference "
    "implementations of operators that kernel engineers are then asked to make faster.";

static const char format_rules[] =
    "The format, exactly:\n"
    "- `import torch`, `import torch.nn as nn` and, if needed, `import torch.nn.functional as "
    "F`; no other import;\n"
    "- module-level integer size constants (`batch_size = 64`), small enough that the module "
    "runs on a CPU in well under a second, large enough to be worth a kernel (no tensor over 16M "
    "elements);\n"
    "- `class Model(nn.Module)` with `__init__` and a `forward` that returns one tensor (or a "
    "tuple of tensors); float32 tensors; deterministic (no dropout, no random numbers in "
    "forward);\n"
    "- `def get_inputs():` the list of input tensors, made with torch.randn or torch.rand from "
    "the constants;\n"
    "- `def get_init_inputs():` the list of arguments for Model(...).\n\n"
    "Answer with one line `Name: short_snake_case_name`, then the whole module in one "
    "```python block.\n";

static const char example_module[] =
    "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
    "    def __init__(self, in_features, out_features, scale):\n"
    "        super().__init__()\n        self.fc = nn.Linear(in_features, out_features)\n"
    "        self.scale = scale\n\n    def forward(self, x):\n"
    "        return torch.nn.functional.gelu(self.fc(x)) * self.scale\n\n\n"
    "batch_size = 128\nin_features = 512\nout_features = 1024\nscale = 0.5\n\n\n"
    "def get_inputs():\n    return [torch.rand(batch_size, in_features)]\n\n\n"
    "def get_init_inputs():\n    return [in_features, out_features, scale]\n";

static uint64_t mix(uint64_t x) {
  return kv_splitmix64(&x);
}

int kv_synth_pick_ops(uint64_t seed, int attempt, int n, int *idx, int max) {
  if (n <= 0 || max <= 0)
    return 0;
  uint64_t r = mix(seed ^ mix((uint64_t)attempt + 1));
  int k = 3 + (int)(r % 4);
  if (k > n)
    k = n;
  if (k > max)
    k = max;
  int got = 0;
  for (int tries = 0; got < k && tries < 1000; tries++) {
    r = mix(r);
    int c = (int)(r % (uint64_t)n), dup = 0;
    for (int j = 0; j < got; j++)
      dup |= idx[j] == c;
    if (!dup)
      idx[got++] = c;
  }
  return got;
}

/* ---- reading replies ------------------------------------------------------------ */

static int defines_model(const char *s, size_t n) {
  for (size_t i = 0; i + 11 <= n; i++)
    if ((i == 0 || s[i - 1] == '\n') && !strncmp(s + i, "class Model", 11) &&
        (i + 11 == n || s[i + 11] == '(' || s[i + 11] == ':' || s[i + 11] == ' '))
      return 1;
  return 0;
}

char *kv_synth_extract_module(const char *reply) {
  if (!reply)
    return NULL;
  size_t n = strnlen(reply, KV_IMPORT_MAX_SOURCE + 1);
  if (n > KV_IMPORT_MAX_SOURCE)
    return NULL;
  const char *best = NULL;
  size_t best_len = 0;
  int best_model = 0, nblocks = 0;
  /* Fenced blocks: ``` or ~~~ at a line start (up to 3 spaces), closed by
   * the same fence; an unclosed block runs to the end. */
  for (const char *p = reply; p && *p;) {
    const char *line = p;
    const char *eol = strchr(line, '\n');
    const char *q = line;
    int ind = 0;
    while (*q == ' ' && ind < 3)
      q++, ind++;
    if ((q[0] == '`' || q[0] == '~') && q[1] == q[0] && q[2] == q[0]) {
      char f = q[0];
      size_t flen = 0;
      while (q[flen] == f)
        flen++;
      char tag[16] = "";
      const char *t = q + flen;
      while (*t == ' ')
        t++;
      size_t tl = 0;
      while (t[tl] && !isspace((unsigned char)t[tl]) && tl + 1 < sizeof tag) {
        tag[tl] = (char)tolower((unsigned char)t[tl]);
        tl++;
      }
      tag[tl] = 0;
      nblocks++;
      const char *body = eol ? eol + 1 : line + strlen(line);
      const char *end = NULL, *after = NULL;
      for (const char *l = body; l && *l;) {
        const char *le = strchr(l, '\n');
        const char *c = l;
        int ci = 0;
        while (*c == ' ' && ci < 3)
          c++, ci++;
        size_t k = 0;
        while (c[k] == f)
          k++;
        const char *rest = c + k;
        while (*rest == ' ' || *rest == '\t' || *rest == '\r')
          rest++;
        if (k >= flen && (*rest == '\n' || *rest == 0)) {
          end = l;
          after = le ? le + 1 : NULL;
          break;
        }
        l = le ? le + 1 : NULL;
      }
      if (!end)
        end = reply + n;
      static const char *const c_tags[] = {"c", "cpp", "c++", "cuda", "cu", "h", "cc"};
      int c_family = 0;
      for (size_t i = 0; i < KV_ARRAY_LEN(c_tags); i++)
        c_family |= !strcmp(tag, c_tags[i]);
      if (!c_family && defines_model(body, (size_t)(end - body))) {
        best = body;
        best_len = (size_t)(end - body);
        best_model = 1;
      } else if (!best_model && (!strcmp(tag, "python") || !strcmp(tag, "py"))) {
        /* A Python block without Model: judged (and refused as no_model)
         * unless a block with Model comes. */
        best = body;
        best_len = (size_t)(end - body);
      }
      p = end == reply + n ? NULL : after;
      continue;
    }
    p = eol ? eol + 1 : NULL;
  }
  if (!best && !nblocks && defines_model(reply, n)) {
    best = reply;
    best_len = n;
  }
  if (!best)
    return NULL;
  char *out = malloc(best_len + 2);
  if (!out)
    return NULL;
  memcpy(out, best, best_len);
  if (best_len && out[best_len - 1] != '\n')
    out[best_len++] = '\n';
  out[best_len] = 0;
  return out;
}

void kv_synth_task_name(const char *reply, int64_t num, const char *fallback, char *out,
                        size_t cap) {
  char slug[40] = "";
  const char *p = reply ? strstr(reply, "Name:") : NULL;
  if (p) {
    p += 5;
    while (*p == ' ' || *p == '*' || *p == '`' || *p == '\t')
      p++;
    size_t k = 0;
    for (; *p && *p != '\n' && k + 1 < sizeof slug; p++) {
      char c = *p;
      if (isalnum((unsigned char)c))
        slug[k++] = (char)tolower((unsigned char)c);
      else if ((c == '_' || c == '-' || c == ' ') && k && slug[k - 1] != '_')
        slug[k++] = '_';
      else if (c == '`' || c == '*' || c == '.')
        break;
    }
    while (k && slug[k - 1] == '_')
      k--;
    slug[k] = 0;
  }
  if (!slug[0])
    snprintf(slug, sizeof slug, "%s", fallback && *fallback ? fallback : "synth");
  for (char *c = slug; *c; c++)
    if (!isalnum((unsigned char)*c) && *c != '_')
      *c = '_';
  snprintf(out, cap, "%lld_%.36s", (long long)num, slug);
}

int kv_synth_graph_key(const struct kv_task *t, const char *ops_key, char out[65], char *err,
                       size_t errlen) {
  if (t->nbench < 1)
    return kv_error(err, errlen, "%s: no bench size to take shapes from", t->name);
  struct kv_buf b;
  kv_buf_init(&b, 64 << 10);
  kv_buf_appendf(&b, "ops %s\n", ops_key ? ops_key : "");
  for (int i = 0; i < t->nparams; i++) {
    const struct kv_param *p = &t->params[i];
    if (p->role == KV_ROLE_SIZE)
      continue;
    kv_buf_appendf(&b, "%s %s", kv_role_name(p->role), kv_dtype_name(p->dtype));
    if (p->role == KV_ROLE_SCALAR) {
      kv_buf_appendf(&b, "\n");
      continue;
    }
    for (int d = 0; d < p->ndim; d++) {
      int64_t v;
      if (kv_expr_eval(t, &t->bench[0], p->shape[d], &v, err, errlen) < 0) {
        kv_buf_release(&b);
        return -1;
      }
      kv_buf_appendf(&b, " %lld", (long long)v);
    }
    kv_buf_appendf(&b, "\n");
  }
  if (!b.data || b.truncated) {
    kv_buf_release(&b);
    return kv_error(err, errlen, "out of memory");
  }
  kv_sha256_hex(b.data, b.len, out);
  kv_buf_release(&b);
  return 0;
}

/* ---- the helper ----------------------------------------------------------------- */

struct fingerprint {
  int ok;
  char cause[32], detail[512], module_key[65], ops_key[65];
  char ops[1024]; /* space-separated */
};

static const char *or_str(const char *a, const char *b) {
  return a ? a : b;
}

static int find_helper(char *out, size_t cap, char *err, size_t errlen) {
  const char *e = getenv("KEVO_SYNTH_HELPER");
  if (e && *e) {
    if (!kv_path_exists(e))
      return kv_error(err, errlen,
                      "KEVO_SYNTH_HELPER=%s: not found; point it at python/kevo_synth.py", e);
    snprintf(out, cap, "%s", e);
    return 0;
  }
  if (kv_find_shipped("kevo_synth.py", NULL, 1, out, cap) == 0)
    return 0;
  return kv_error(err, errlen,
                  "kevo_synth.py: not found beside the kevo executable nor in the source tree; "
                  "rebuild kevo or set KEVO_SYNTH_HELPER to python/kevo_synth.py");
}

/* The environment Python helpers get: no API keys, CUDA hidden. */
struct py_env {
  char path[4200], home[4200], pp[4200];
  char *envp[10];
};
static void py_env_init(struct py_env *e, const char *home) {
  const char *v = getenv("PATH");
  snprintf(e->path, sizeof e->path, "PATH=%s", v && *v ? v : "/usr/local/bin:/usr/bin:/bin");
  v = getenv("HOME");
  snprintf(e->home, sizeof e->home, "HOME=%s", v && *v ? v : home);
  v = getenv("PYTHONPATH");
  snprintf(e->pp, sizeof e->pp, "PYTHONPATH=%s", v ? v : "");
  char *envp[] = {e->path,
                  e->home,
                  e->pp,
                  "LANG=C.UTF-8",
                  "CUDA_VISIBLE_DEVICES=",
                  "OMP_NUM_THREADS=1",
                  "PYTHONDONTWRITEBYTECODE=1",
                  "PYTHONWARNINGS=ignore",
                  NULL};
  memcpy(e->envp, envp, sizeof envp);
}

/* Fingerprints of files[0..n) (at most 512 at once). */
static int fingerprints(const char *python, const char *helper, const char *const *files, int n,
                        struct fingerprint *fp, char *err, size_t errlen) {
  if (n <= 0)
    return 0;
  if (n > 512)
    return kv_error(err, errlen, "fingerprints: at most 512 files at once");
  char **argv = calloc((size_t)n + 4, sizeof *argv);
  if (!argv)
    return kv_error(err, errlen, "out of memory");
  argv[0] = (char *)python;
  argv[1] = "-B";
  argv[2] = (char *)helper;
  for (int i = 0; i < n; i++)
    argv[3 + i] = (char *)files[i];
  struct py_env env;
  py_env_init(&env, "/tmp");
  struct kv_buf out;
  kv_buf_init(&out, HELPER_OUT_MAX);
  struct kv_proc_result pr;
  int rc = kv_run(argv, env.envp, NULL, 30 + 0.2 * n, NULL, NULL, &out, &pr, err, errlen);
  free(argv);
  if (rc < 0) {
    kv_buf_release(&out);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    memset(&fp[i], 0, sizeof fp[i]);
    snprintf(fp[i].cause, sizeof fp[i].cause, "helper");
    snprintf(fp[i].detail, sizeof fp[i].detail, "kevo_synth.py gave no answer for it (%s)",
             pr.timed_out ? "it timed out" : "its output was cut");
  }
  int k = 0;
  for (const char *p = out.data ? strstr(out.data, "KEVO_SYNTH_JSON ") : NULL; p && k < n;
       p = strstr(p + 1, "KEVO_SYNTH_JSON ")) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    json_t *j = json_loadb(p + 16, len - 16, 0, NULL);
    const char *file = json_string_value(json_object_get(j, "file"));
    for (int i = 0; file && i < n; i++) {
      if (strcmp(file, files[i]))
        continue;
      struct fingerprint *f = &fp[i];
      f->ok = json_is_true(json_object_get(j, "ok"));
      snprintf(f->cause, sizeof f->cause, "%s",
               f->ok ? "" : or_str(json_string_value(json_object_get(j, "cause")), "helper"));
      snprintf(f->detail, sizeof f->detail, "%s",
               f->ok ? "" : or_str(json_string_value(json_object_get(j, "detail")), ""));
      snprintf(f->module_key, sizeof f->module_key, "%s",
               or_str(json_string_value(json_object_get(j, "module_key")), ""));
      snprintf(f->ops_key, sizeof f->ops_key, "%s",
               or_str(json_string_value(json_object_get(j, "ops_key")), ""));
      size_t used = 0, idx;
      json_t *op;
      json_array_foreach(json_object_get(j, "ops"), idx, op) {
        const char *s = json_string_value(op);
        if (s && used + strlen(s) + 2 < sizeof f->ops)
          used += (size_t)snprintf(f->ops + used, sizeof f->ops - used, "%s%s", used ? " " : "", s);
      }
      if (f->ok && (strlen(f->module_key) != 64 || strlen(f->ops_key) != 64)) {
        f->ok = 0;
        snprintf(f->cause, sizeof f->cause, "helper");
        snprintf(f->detail, sizeof f->detail, "kevo_synth.py's answer lacks its keys");
      }
      k++;
      break;
    }
    json_decref(j);
  }
  kv_buf_release(&out);
  return 0;
}

/* ---- the registry of tasks already there ------------------------------------------ */

struct entry {
  char module_key[65], graph_key[65], name[96];
};
struct registry {
  struct entry *v;
  int n, cap;
};

static const struct entry *reg_find(const struct registry *r, const char *module_key,
                                    const char *graph_key) {
  for (int i = 0; i < r->n; i++)
    if ((module_key && *module_key && !strcmp(r->v[i].module_key, module_key)) ||
        (graph_key && *graph_key && !strcmp(r->v[i].graph_key, graph_key)))
      return &r->v[i];
  return NULL;
}

static int reg_add(struct registry *r, const char *module_key, const char *graph_key,
                   const char *name) {
  if (r->n >= REGISTRY_MAX)
    return -1;
  if (r->n == r->cap) {
    int nc = r->cap ? 2 * r->cap : 64;
    struct entry *g = realloc(r->v, (size_t)nc * sizeof *g);
    if (!g)
      return -1;
    r->v = g;
    r->cap = nc;
  }
  struct entry *e = &r->v[r->n++];
  snprintf(e->module_key, sizeof e->module_key, "%s", module_key ? module_key : "");
  snprintf(e->graph_key, sizeof e->graph_key, "%s", graph_key ? graph_key : "");
  snprintf(e->name, sizeof e->name, "%s", name);
  return 0;
}

/* The keys of every PyTorch task under dir (two levels, as a suite): from its
 * synth.json when kevo synthesize wrote it, else computed. */
static int reg_load(struct registry *r, const char *dir, const char *label, const char *python,
                    const char *helper, char *err, size_t errlen) {
  if (!kv_path_exists(dir))
    return 0;
  struct kv_bench_found *f = NULL;
  int n = 0;
  char derr[1024];
  if (kv_bench_discover(dir, &f, &n, derr, sizeof derr) < 0)
    return 0; /* no task there yet */
  const char **files = calloc((size_t)n + 1, sizeof *files);
  int *which = calloc((size_t)n + 1, sizeof *which);
  char(*paths)[PATH_MAX] = calloc((size_t)n + 1, sizeof *paths);
  int nf = 0, rc = 0;
  if (!files || !which || !paths)
    rc = kv_error(err, errlen, "out of memory");
  for (int i = 0; rc == 0 && i < n; i++) {
    char p[PATH_MAX], name[PATH_MAX + 64];
    snprintf(name, sizeof name, "%s%s", label, f[i].name);
    snprintf(p, sizeof p, "%s/synth.json", f[i].dir);
    json_t *j = kv_path_exists(p) ? json_load_file(p, 0, NULL) : NULL;
    const char *mk = json_string_value(json_object_get(j, "module_key"));
    const char *gk = json_string_value(json_object_get(j, "graph_key"));
    if (mk && gk) {
      if (reg_add(r, mk, gk, name) < 0)
        rc = kv_error(err, errlen, "out of memory or over %d tasks", REGISTRY_MAX);
    } else {
      snprintf(paths[nf], PATH_MAX, "%s/reference.py", f[i].dir);
      if (kv_path_exists(paths[nf])) {
        files[nf] = paths[nf];
        which[nf++] = i;
      }
    }
    json_decref(j);
  }
  struct fingerprint *fp = nf ? calloc((size_t)nf, sizeof *fp) : NULL;
  if (nf && !fp && rc == 0)
    rc = kv_error(err, errlen, "out of memory");
  for (int s = 0; rc == 0 && s < nf; s += 512) {
    int m = nf - s < 512 ? nf - s : 512;
    rc = fingerprints(python, helper, files + s, m, fp + s, err, errlen);
  }
  for (int k = 0; rc == 0 && k < nf; k++) {
    if (!fp[k].ok)
      continue;
    struct kv_task *t;
    char terr[512], gk[65] = "", name[PATH_MAX + 64];
    if (kv_task_load(f[which[k]].dir, &t, terr, sizeof terr) == 0) {
      if (kv_synth_graph_key(t, fp[k].ops_key, gk, terr, sizeof terr) < 0)
        gk[0] = 0;
      kv_task_free(t);
    }
    snprintf(name, sizeof name, "%s%s", label, f[which[k]].name);
    if (reg_add(r, fp[k].module_key, gk, name) < 0)
      rc = kv_error(err, errlen, "out of memory or over %d tasks", REGISTRY_MAX);
  }
  free(fp);
  free(files);
  free(which);
  free(paths);
  kv_bench_found_free(f, n);
  return rc;
}

/* ---- judging one reply ----------------------------------------------------------- */

struct job {
  int index;     /* into the attempts */
  char *reply;   /* the model's whole reply */
  char name[96]; /* the task's name */
  /* results */
  int accepted;
  char cause[32], detail[1536], module_key[65], graph_key[65], task_dir[PATH_MAX];
  double seconds;
  int fatal; /* kevo itself could not go on: detail says why */
};

struct synth {
  struct kv_store *s;
  struct kv_llm *llm;
  const struct kv_synth_opts *o;
  const struct kv_synth_hooks *h;
  char out_dir[PATH_MAX], helper[PATH_MAX];
  const char *python;
  struct kv_gate_opts gate;
  struct kv_import_opts io;
  int64_t synthesis_id;
  struct kv_synth_attempt_row *rows;
  int nrows;
  /* the suite a mutation or self-instruct prompt draws on */
  struct kv_bench_found *from;
  int nfrom;
  const char **ops;
  int nops;
  char **ops_owned;
  char model_name[200];
  /* shared with the judges */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct registry reg;
  struct job **queue, **done;
  int nqueue, ndone, cap, running, quit;
};

static void refuse(struct job *j, const char *cause, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(struct job *j, const char *cause, const char *fmt, ...) {
  j->accepted = 0;
  snprintf(j->cause, sizeof j->cause, "%s", cause);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(j->detail, sizeof j->detail, fmt, ap);
  va_end(ap);
  /* One line: a worker's or a helper's output may end in line breaks. */
  size_t n = strlen(j->detail);
  for (size_t i = 0; i < n; i++)
    if (j->detail[i] == '\n' || j->detail[i] == '\r' || j->detail[i] == '\t')
      j->detail[i] = ' ';
  while (n && j->detail[n - 1] == ' ')
    j->detail[--n] = 0;
}

/* Replaces every occurrence of `from` in s (in place, cap bytes) with `to`. */
static void replace_all(char *s, size_t cap, const char *from, const char *to) {
  size_t fl = strlen(from), tl = strlen(to);
  if (!fl)
    return;
  for (char *p = strstr(s, from); p; p = strstr(p + tl, from)) {
    size_t rest = strlen(p + fl);
    if ((size_t)(p - s) + tl + rest + 1 > cap)
      return;
    memmove(p + tl, p + fl, rest + 1);
    memcpy(p, to, tl);
  }
}

static int write_meta(struct synth *sy, const struct kv_synth_attempt_row *row, struct job *j,
                      const struct fingerprint *fp, const char *dir, char *err, size_t errlen) {
  json_t *ops = json_array();
  for (const char *p = fp->ops; *p;) {
    const char *sp = strchr(p, ' ');
    size_t len = sp ? (size_t)(sp - p) : strlen(p);
    json_array_append_new(ops, json_stringn(p, len));
    p = sp ? sp + 1 : p + len;
  }
  json_t *m =
      json_pack("{s:i,s:I,s:I,s:s,s:s?,s:s,s:I,s:s,s:s,s:s,s:o,s:I}", "kevo_synth", 1, "synthesis",
                (json_int_t)sy->synthesis_id, "attempt", (json_int_t)row->id, "style", sy->o->style,
                "asked", row->asked, "model", sy->model_name, "llm_call",
                (json_int_t)row->llm_call_id, "module_key", j->module_key, "ops_key", fp->ops_key,
                "graph_key", j->graph_key, "ops", ops, "created", (json_int_t)kv_unix_time());
  char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
  json_decref(m);
  if (!text)
    return kv_error(err, errlen, "out of memory");
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/synth.json", dir);
  int rc = kv_write_file(p, text, strlen(text), err, errlen);
  free(text);
  if (rc < 0)
    return -1;
  char readme[2048];
  int n = snprintf(readme, sizeof readme,
                   "%s: a practice task written by `kevo synthesize` (style %s; asked: %s) with "
                   "model %s (LLM call %lld, attempt %lld); reference.py is the model's module "
                   "verbatim, imported like `kevo import` and checked like `kevo task check`. "
                   "Operators: %s. synth.json holds its fingerprints.\n",
                   j->name, sy->o->style, row->asked ? row->asked : "-", sy->model_name,
                   (long long)row->llm_call_id, (long long)row->id, fp->ops[0] ? fp->ops : "-");
  snprintf(p, sizeof p, "%s/README.md", dir);
  return kv_write_file(p, readme, (size_t)(n < (int)sizeof readme ? n : (int)sizeof readme - 1),
                       err, errlen);
}

static void judge(struct synth *sy, struct job *j) {
  double t0 = kv_now_s();
  const struct kv_synth_attempt_row *row = &sy->rows[j->index];
  char err[1024] = "";
  char *code = kv_synth_extract_module(j->reply);
  char scratch[PATH_MAX] = "";
  struct kv_task *t = NULL;
  if (!code) {
    refuse(j, "no_code",
           "the reply holds no Python module defining class Model (want one ```python block); "
           "nothing was written");
    goto out;
  }
  char prefix[64];
  snprintf(prefix, sizeof prefix, ".kevo-synth-%ld-", (long)getpid());
  if (kv_mkdtemp(sy->out_dir, prefix, scratch, sizeof scratch, err, sizeof err) < 0) {
    j->fatal = 1;
    refuse(j, "kevo", "%s", err);
    scratch[0] = 0;
    goto out;
  }
  char py[PATH_MAX + 128];
  snprintf(py, sizeof py, "%s/%s.py", scratch, j->name);
  if (kv_write_file(py, code, strlen(code), err, sizeof err) < 0) {
    j->fatal = 1;
    refuse(j, "kevo", "%s", err);
    goto out;
  }
  /* Its source alone: a syntax error, no Model, an exact duplicate. */
  struct fingerprint fp;
  const char *files[] = {py};
  if (fingerprints(sy->python, sy->helper, files, 1, &fp, err, sizeof err) < 0) {
    j->fatal = 1;
    refuse(j, "kevo", "cannot run kevo_synth.py: %s", err);
    goto out;
  }
  if (!fp.ok) {
    refuse(j, fp.cause, "%s", fp.detail);
    goto out;
  }
  snprintf(j->module_key, sizeof j->module_key, "%s", fp.module_key);
  pthread_mutex_lock(&sy->mu);
  const struct entry *dup = reg_find(&sy->reg, fp.module_key, NULL);
  char dupname[96] = "";
  if (dup)
    snprintf(dupname, sizeof dupname, "%s", dup->name);
  pthread_mutex_unlock(&sy->mu);
  if (dupname[0]) {
    refuse(j, "duplicate",
           "the same module as %s (same source once names and formatting are "
           "set aside)",
           dupname);
    goto out;
  }
  /* Run it: kevo import's machinery (deadline, memory cap, scrubbed
   * environment) into the scratch directory. */
  char outdir[PATH_MAX + 16];
  snprintf(outdir, sizeof outdir, "%s/out", scratch);
  struct kv_import_result ir;
  if (kv_import_module(&sy->io, py, outdir, &ir, err, sizeof err) < 0) {
    j->fatal = 1;
    refuse(j, "kevo", "%s", err);
    goto out;
  }
  if (!ir.ok) {
    char d[sizeof ir.detail + 64];
    snprintf(d, sizeof d, "%s", ir.detail);
    replace_all(d, sizeof d, py, j->name);
    if (!strcmp(ir.cause, "no_torch")) {
      j->fatal = 1;
    }
    refuse(j, ir.cause, "%s", d);
    goto out;
  }
  if (kv_task_load(ir.task_dir, &t, err, sizeof err) < 0) {
    replace_all(err, sizeof err, scratch, "");
    refuse(j, "task", "the imported task does not load: %s", err);
    goto out;
  }
  if (kv_synth_graph_key(t, fp.ops_key, j->graph_key, err, sizeof err) < 0) {
    refuse(j, "task", "%s", err);
    goto out;
  }
  pthread_mutex_lock(&sy->mu);
  dup = reg_find(&sy->reg, NULL, j->graph_key);
  if (dup)
    snprintf(dupname, sizeof dupname, "%s", dup->name);
  pthread_mutex_unlock(&sy->mu);
  if (dupname[0]) {
    refuse(j, "duplicate", "the same operator graph (%s) at the same shapes as %s", fp.ops,
           dupname);
    goto out;
  }
  /* kevo task check on the cpu surface: the torch reference worker. */
  struct kv_task_report rep;
  memset(&rep, 0, sizeof rep);
  if (kv_task_check(t, &sy->gate, &rep, err, sizeof err) < 0) {
    replace_all(err, sizeof err, scratch, "");
    refuse(j, "check", "kevo task check could not check it: %s", err);
    kv_task_report_release(&rep);
    goto out;
  }
  if (!rep.ok) {
    char f[1024] = "";
    size_t used = 0;
    for (int i = 0; i < rep.nfindings && i < 3 && used < sizeof f; i++)
      used += (size_t)snprintf(f + used, sizeof f - used, "%s%s", i ? "; " : "", rep.findings[i]);
    replace_all(f, sizeof f, scratch, "");
    refuse(j, "ill_posed", "kevo task check refused it: %s", f[0] ? f : "(no finding)");
    kv_task_report_release(&rep);
    goto out;
  }
  kv_task_report_release(&rep);
  if (write_meta(sy, row, j, &fp, ir.task_dir, err, sizeof err) < 0) {
    j->fatal = 1;
    refuse(j, "kevo", "%s", err);
    goto out;
  }
  /* Into place, whole, unless a twin got there first. */
  pthread_mutex_lock(&sy->mu);
  dup = reg_find(&sy->reg, j->module_key, j->graph_key);
  if (dup) {
    snprintf(dupname, sizeof dupname, "%s", dup->name);
    pthread_mutex_unlock(&sy->mu);
    refuse(j, "duplicate", "the same operator graph (%s) at the same shapes as %s", fp.ops,
           dupname);
    goto out;
  }
  snprintf(j->task_dir, sizeof j->task_dir, "%s/%s", sy->out_dir, j->name);
  int rc = rename(ir.task_dir, j->task_dir);
  int e = errno;
  if (rc == 0 && reg_add(&sy->reg, j->module_key, j->graph_key, j->name) < 0)
    rc = -1, e = ENOMEM;
  pthread_mutex_unlock(&sy->mu);
  if (rc < 0) {
    if (e == EEXIST || e == ENOTEMPTY)
      refuse(j, "exists",
             "%s already exists (not written by this synthesis); remove it or use "
             "another -o",
             j->task_dir);
    else {
      j->fatal = 1;
      refuse(j, "kevo", "%s: cannot rename the task into place: %s", j->task_dir, strerror(e));
    }
    j->task_dir[0] = 0;
    goto out;
  }
  j->accepted = 1;
  j->cause[0] = 0;
  j->detail[0] = 0;
out:
  kv_task_free(t);
  free(code);
  if (scratch[0])
    kv_rmtree(scratch);
  j->seconds = kv_now_s() - t0;
}

static void *judge_thread(void *arg) {
  struct synth *sy = arg;
  pthread_mutex_lock(&sy->mu);
  for (;;) {
    while (!sy->nqueue && !sy->quit)
      pthread_cond_wait(&sy->cv, &sy->mu);
    if (!sy->nqueue && sy->quit)
      break;
    struct job *j = sy->queue[0];
    memmove(sy->queue, sy->queue + 1, (size_t)(sy->nqueue - 1) * sizeof *sy->queue);
    sy->nqueue--;
    sy->running++;
    pthread_mutex_unlock(&sy->mu);
    judge(sy, j);
    pthread_mutex_lock(&sy->mu);
    sy->running--;
    sy->done[sy->ndone++] = j;
    pthread_cond_broadcast(&sy->cv);
  }
  pthread_mutex_unlock(&sy->mu);
  return NULL;
}

/* ---- prompts ---------------------------------------------------------------------- */

static char *read_example(const char *dir, size_t cap) {
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/reference.py", dir);
  char *text = NULL;
  size_t len;
  char err[256];
  if (kv_read_file(p, cap, &text, &len, err, sizeof err) < 0)
    return NULL;
  return text;
}

/* AdaExplore's recipe: ADA_PROBLEMS level-1 problems of --from with ids up
 * to ADA_MAX_ID, and ADA_LAYERS torch.nn layers, all drawn from r. */
static void ada_prompt(struct synth *sy, uint64_t r, struct kv_buf *b, char *asked, size_t askcap) {
  int elig[1024], ne = 0, pick[ADA_PROBLEMS], np = 0, lay[ADA_LAYERS], nl = 0;
  for (int i = 0; i < sy->nfrom && ne < 1024; i++) {
    int id = kb_id(sy->from[i].name);
    if (id >= 1 && id <= ADA_MAX_ID)
      elig[ne++] = i;
  }
  for (uint64_t x = mix(r + 11); np < ADA_PROBLEMS && np < ne; x = mix(x)) {
    int c = elig[x % (uint64_t)ne], dup = 0;
    for (int k = 0; k < np; k++)
      dup |= pick[k] == c;
    if (!dup)
      pick[np++] = c;
  }
  int nlayers = (int)KV_ARRAY_LEN(nn_layers);
  for (uint64_t x = mix(r + 23); nl < ADA_LAYERS; x = mix(x)) {
    int c = (int)(x % (uint64_t)nlayers), dup = 0;
    for (int k = 0; k < nl; k++)
      dup |= lay[k] == c;
    if (!dup)
      lay[nl++] = c;
  }
  kv_buf_appendf(b, "Write a new PyTorch module in KernelBench's format that combines the "
                    "operators of these KernelBench level-1 problems with these torch.nn "
                    "layers, each at least once, in an order and at shapes that make sense "
                    "together.\n\n");
  size_t used = (size_t)snprintf(asked, askcap, "adaexplore:");
  for (int i = 0; i < np; i++) {
    char *ex = read_example(sy->from[pick[i]].dir, EXAMPLE_MAX);
    kv_buf_appendf(b, "Problem %s:\n\n```python\n%s```\n\n", sy->from[pick[i]].name,
                   ex ? ex : "(its reference.py could not be read)\n");
    free(ex);
    if (used < askcap)
      used += (size_t)snprintf(asked + used, askcap - used, "%s %s", i ? ";" : "",
                               sy->from[pick[i]].name);
  }
  kv_buf_appendf(b, "Layers:");
  for (int i = 0; i < nl; i++) {
    kv_buf_appendf(b, "%s %s", i ? "," : "", nn_layers[lay[i]]);
    if (used < askcap)
      used += (size_t)snprintf(asked + used, askcap - used, "; %s", nn_layers[lay[i]]);
  }
  kv_buf_appendf(b, ".\n\n%s", format_rules);
}

static int ada_eligible(const struct synth *sy) {
  int n = 0;
  for (int i = 0; i < sy->nfrom; i++)
    n += kb_id(sy->from[i].name) >= 1 && kb_id(sy->from[i].name) <= ADA_MAX_ID;
  return n;
}

static char *build_prompt(struct synth *sy, int ord, char *asked, size_t askcap) {
  struct kv_buf b;
  kv_buf_init(&b, PROMPT_MAX);
  uint64_t r = mix(sy->o->seed ^ mix((uint64_t)ord + 7));
  const char *style = sy->o->style;
  if (!strcmp(style, "mutation") && sy->nfrom > 0) {
    const struct kv_bench_found *src = &sy->from[r % (uint64_t)sy->nfrom];
    static const char *const kinds[][2] = {
        {"shapes", "change its size constants (other sizes, larger or smaller, every tensor "
                   "still under 16M elements)"},
        {"order", "change the order of its operators where the result stays well defined"},
        {"swap", "replace one operator with a related one (relu / gelu / silu, sum / mean / "
                 "amax, softmax / log_softmax, max_pool / avg_pool, ...)"},
        {"extend", "add one operator that often follows this pattern in real models"},
    };
    int a = (int)(mix(r) % 4), c = (int)(mix(r + 1) % 4);
    char *ex = read_example(src->dir, EXAMPLE_MAX);
    kv_buf_appendf(&b,
                   "Here is a PyTorch module in KernelBench's format (task %s):\n\n```python\n%s"
                   "```\n\nWrite a variant of it: %s%s%s. The variant must compute something "
                   "different from the original.\n\n%s",
                   src->name, ex ? ex : "(its reference.py could not be read)\n", kinds[a][1],
                   c != a ? "; also " : "", c != a ? kinds[c][1] : "", format_rules);
    snprintf(asked, askcap, "mutation of %s: %s%s%s", src->name, kinds[a][0], c != a ? ", " : "",
             c != a ? kinds[c][0] : "");
    free(ex);
  } else if (!strcmp(style, "adaexplore")) {
    ada_prompt(sy, r, &b, asked, askcap);
  } else if (!strcmp(style, "self-instruct")) {
    kv_buf_appendf(&b, "Write a new PyTorch module in KernelBench's format for an operator "
                       "pattern that is common in real models (a layer, a block of a network, a "
                       "loss, a normalisation, an attention variant, ...) and worth a fast "
                       "kernel.\n\n");
    if (sy->nfrom > 0) {
      const struct kv_bench_found *ex1 = &sy->from[r % (uint64_t)sy->nfrom];
      char *ex = read_example(ex1->dir, EXAMPLE_MAX);
      kv_buf_appendf(&b, "An example of the format (task %s):\n\n```python\n%s```\n\n", ex1->name,
                     ex ? ex : example_module);
      free(ex);
      kv_buf_appendf(&b, "Tasks that exist already (write something else):");
      for (int i = 0; i < sy->nfrom && i < 60; i++)
        kv_buf_appendf(&b, "%s %s", i ? "," : "", sy->from[i].name);
      kv_buf_appendf(&b, ".\n\n");
    } else {
      kv_buf_appendf(&b, "An example of the format:\n\n```python\n%s```\n\n", example_module);
    }
    kv_buf_appendf(&b, "%s", format_rules);
    snprintf(asked, askcap, "self-instruct");
  } else {
    int idx[8];
    int k = kv_synth_pick_ops(sy->o->seed, ord, sy->nops, idx, 8);
    kv_buf_appendf(&b, "Write a new PyTorch module in KernelBench's format whose forward "
                       "combines these operators, each at least once, in an order and at shapes "
                       "that make sense together:\n");
    size_t used = (size_t)snprintf(asked, askcap, "composite:");
    for (int i = 0; i < k; i++) {
      kv_buf_appendf(&b, "- %s\n", sy->ops[idx[i]]);
      if (used < askcap)
        used +=
            (size_t)snprintf(asked + used, askcap - used, "%s %s", i ? ";" : "", sy->ops[idx[i]]);
    }
    kv_buf_appendf(&b, "\nAn example of the format:\n\n```python\n%s```\n\n%s", example_module,
                   format_rules);
  }
  if (!b.data || b.truncated) {
    kv_buf_release(&b);
    return NULL;
  }
  return kv_buf_detach(&b);
}

static int load_ops(struct synth *sy, char *err, size_t errlen) {
  if (!sy->o->ops_file) {
    sy->ops = (const char **)kv_synth_default_ops;
    sy->nops = kv_synth_ndefault_ops;
    return 0;
  }
  char *text;
  size_t len;
  if (kv_read_file(sy->o->ops_file, 1 << 20, &text, &len, err, errlen) < 0)
    return -1;
  sy->ops_owned = calloc(KV_SYNTH_MAX_OPS, sizeof *sy->ops_owned);
  if (!sy->ops_owned) {
    free(text);
    return kv_error(err, errlen, "out of memory");
  }
  int n = 0, line = 0;
  for (char *p = text, *save = NULL, *l = strtok_r(p, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    line++;
    while (*l == ' ' || *l == '\t')
      l++;
    size_t k = strlen(l);
    while (k && (l[k - 1] == ' ' || l[k - 1] == '\r' || l[k - 1] == '\t'))
      l[--k] = 0;
    if (!*l || *l == '#')
      continue;
    if (k >= KV_SYNTH_OP_MAX || n >= KV_SYNTH_MAX_OPS) {
      free(text);
      return kv_error(err, errlen,
                      "%s: line %d: %s; keep each operator under %d bytes and the "
                      "list under %d lines",
                      sy->o->ops_file, line, k >= KV_SYNTH_OP_MAX ? "too long" : "too many",
                      KV_SYNTH_OP_MAX, KV_SYNTH_MAX_OPS);
    }
    if (!(sy->ops_owned[n++] = strdup(l))) {
      free(text);
      return kv_error(err, errlen, "out of memory");
    }
  }
  free(text);
  if (n < 3)
    return kv_error(err, errlen, "%s: %d operators; a composite needs at least 3 (one per line)",
                    sy->o->ops_file, n);
  sy->ops = (const char **)sy->ops_owned;
  sy->nops = n;
  return 0;
}

/* ---- the run ----------------------------------------------------------------------- */

void kv_synth_opts_default(struct kv_synth_opts *o) {
  memset(o, 0, sizeof *o);
  o->style = "composite";
  o->out_dir = "practice";
  o->n = 10;
  o->jobs = 2;
  o->concurrency = 2;
  o->deadline_s = 120;
  o->max_bytes = (int64_t)2 << 30;
}

/* Python can import torch (asked before any LLM call). */
static int torch_ok(const char *python, char *err, size_t errlen) {
  char *argv[] = {(char *)python, "-c", "import torch", NULL};
  struct py_env env;
  py_env_init(&env, "/tmp");
  struct kv_buf out;
  kv_buf_init(&out, 64 << 10);
  struct kv_proc_result pr;
  int rc = kv_run(argv, env.envp, NULL, 120, NULL, NULL, &out, &pr, err, errlen);
  if (rc < 0) {
    kv_buf_release(&out);
    return kv_error(err, errlen,
                    "%s: cannot run it; kevo synthesize needs Python 3 with torch "
                    "(set KEVO_PYTHON or --python)",
                    python);
  }
  if (!pr.exited || pr.status != 0) {
    char tail[300] = "";
    if (out.data) {
      const char *t = out.len > 200 ? out.data + out.len - 200 : out.data;
      snprintf(tail, sizeof tail, "%s", t);
      for (char *c = tail; *c; c++)
        if (*c == '\n')
          *c = ' ';
    }
    kv_buf_release(&out);
    return kv_error(err, errlen,
                    "%s cannot import torch (%s); kevo synthesize runs every module it is given: "
                    "install CPU torch there (pip install torch) or point KEVO_PYTHON at a "
                    "Python that has it",
                    python, tail[0] ? tail : "no output");
  }
  kv_buf_release(&out);
  return 0;
}

/* Stale scratch directories of synthesize processes that are gone. */
static void clean_scratch(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    long pid;
    if (sscanf(e->d_name, ".kevo-synth-%ld-", &pid) != 1 || pid <= 0)
      continue;
    if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
      continue;
    char p[PATH_MAX];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < (int)sizeof p)
      kv_rmtree(p);
  }
  closedir(d);
}

/* What a rerun must match to continue a synthesis: the options and the
 * model (provider and id; not its URL, which a restarted server changes). */
static char *config_json(const struct kv_synth_opts *o, const char *from_abs) {
  json_t *full = o->model_json ? json_loads(o->model_json, 0, NULL) : NULL;
  json_t *m = full ? json_pack("{s:O?,s:O?}", "provider", json_object_get(full, "provider"),
                               "model", json_object_get(full, "model"))
                   : NULL;
  json_decref(full);
  json_t *c =
      json_pack("{s:s,s:s?,s:s?,s:i,s:I,s:o}", "style", o->style, "from", from_abs, "ops_file",
                o->ops_file, "n", o->n, "seed", (json_int_t)o->seed, "model", m ? m : json_null());
  char *s = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(c);
  return s;
}

static void emit(struct synth *sy, int index, int llm_done) {
  if (!sy->h || !sy->h->attempt_end)
    return;
  struct kv_llm_spend sp = {0};
  if (sy->llm)
    kv_llm_spent(sy->llm, &sp);
  struct kv_synth_event e = {index, sy->nrows, &sy->rows[index], llm_done, sp.in_flight, sp.usd};
  sy->h->attempt_end(sy->h->ud, &e);
}

static int set_str(char **dst, const char *v) {
  char *d = v ? strdup(v) : NULL;
  if (v && !d)
    return -1;
  free(*dst);
  *dst = d;
  return 0;
}

/* Records a judged job into its attempt. */
static int record_job(struct synth *sy, struct job *j, char *err, size_t errlen) {
  struct kv_synth_attempt_row *row = &sy->rows[j->index];
  if (set_str(&row->status, j->accepted ? "accepted" : "refused") < 0 ||
      set_str(&row->cause, j->accepted ? NULL : j->cause) < 0 ||
      set_str(&row->detail, j->accepted ? NULL : j->detail) < 0 ||
      set_str(&row->module_key, j->module_key[0] ? j->module_key : NULL) < 0 ||
      set_str(&row->graph_key, j->graph_key[0] ? j->graph_key : NULL) < 0 ||
      set_str(&row->task_dir, j->accepted ? j->task_dir : NULL) < 0)
    return kv_error(err, errlen, "out of memory");
  row->seconds = j->seconds;
  return kv_store_synth_attempt_update(sy->s, row, err, errlen);
}

static struct job *new_job(struct synth *sy, int index, const char *reply) {
  struct job *j = calloc(1, sizeof *j);
  if (!j)
    return NULL;
  j->index = index;
  j->reply = strdup(reply);
  if (!j->reply) {
    free(j);
    return NULL;
  }
  snprintf(j->name, sizeof j->name, "%s", sy->rows[index].name ? sy->rows[index].name : "synth");
  return j;
}

static void enqueue(struct synth *sy, struct job *j) {
  pthread_mutex_lock(&sy->mu);
  sy->queue[sy->nqueue++] = j;
  pthread_cond_broadcast(&sy->cv);
  pthread_mutex_unlock(&sy->mu);
}

int kv_synth_run(struct kv_store *s, struct kv_llm *llm, const struct kv_synth_opts *o,
                 const struct kv_synth_hooks *h, struct kv_synth_summary *sum, char *err,
                 size_t errlen) {
  memset(sum, 0, sizeof *sum);
  if (!llm)
    return kv_error(err, errlen,
                    "kevo synthesize needs an LLM: configure a model (kevo.json, --model, "
                    "--base-url)");
  if (o->n < 1 || o->n > KV_SYNTH_MAX_N)
    return kv_error(err, errlen, "--n %d: give a number of attempts from 1 to %d", o->n,
                    KV_SYNTH_MAX_N);
  if (strcmp(o->style, "composite") && strcmp(o->style, "mutation") &&
      strcmp(o->style, "self-instruct") && strcmp(o->style, "adaexplore"))
    return kv_error(err, errlen, "--style %s: use composite, mutation, self-instruct or adaexplore",
                    o->style);
  struct synth *sy = calloc(1, sizeof *sy);
  if (!sy)
    return kv_error(err, errlen, "out of memory");
  sy->s = s;
  sy->llm = llm;
  sy->o = o;
  sy->h = h;
  pthread_mutex_init(&sy->mu, NULL);
  pthread_cond_init(&sy->cv, NULL);
  pthread_t th[16];
  int nth = 0, rc = 0;
  char from_abs[PATH_MAX] = "";
  char *cj = NULL;
  if (o->from_dir) {
    if (!realpath(o->from_dir, from_abs)) {
      rc =
          kv_error(err, errlen, "--from %s: no such directory; give a suite of tasks", o->from_dir);
      goto out;
    }
    char derr[1024];
    if (kv_bench_discover(from_abs, &sy->from, &sy->nfrom, derr, sizeof derr) < 0) {
      rc = kv_error(err, errlen,
                    "--from %s: %s (a directory of PyTorch modules is imported first: 'kevo "
                    "import -o tasks DIR', then --from tasks)",
                    o->from_dir, derr);
      goto out;
    }
  } else if (!strcmp(o->style, "mutation") || !strcmp(o->style, "adaexplore")) {
    rc = kv_error(err, errlen,
                  "--style %s %s: give them with --from SUITE_DIR (e.g. tasks written by kevo "
                  "import)",
                  o->style,
                  !strcmp(o->style, "mutation")
                      ? "varies existing tasks"
                      : "combines KernelBench level-1 problems (ids up to 50)");
    goto out;
  }
  if (!strcmp(o->style, "adaexplore") && ada_eligible(sy) < ADA_PROBLEMS) {
    rc = kv_error(err, errlen,
                  "--style adaexplore: --from %s has %d tasks named like KernelBench level-1 "
                  "problems with ids 1 to %d (\"19_ReLU\"); it needs %d: import KernelBench's "
                  "level1 ('kevo import -o kb1 KernelBench/level1') and give --from kb1",
                  o->from_dir, ada_eligible(sy), ADA_MAX_ID, ADA_PROBLEMS);
    goto out;
  }
  sy->python = o->python && *o->python ? o->python : kv_python();
  if (torch_ok(sy->python, err, errlen) < 0) {
    rc = -1;
    goto out;
  }
  if (load_ops(sy, err, errlen) < 0 || kv_mkdirs(o->out_dir, 0755, err, errlen) < 0 ||
      find_helper(sy->helper, sizeof sy->helper, err, errlen) < 0) {
    rc = -1;
    goto out;
  }
  if (!realpath(o->out_dir, sy->out_dir)) {
    rc = kv_error(err, errlen, "-o %s: cannot resolve it (%s)", o->out_dir, strerror(errno));
    goto out;
  }
  clean_scratch(sy->out_dir);
  {
    const struct kv_llm_model *m = kv_llm_model_of(llm);
    int loop = strstr(m->base_url, "://127.") || strstr(m->base_url, "://localhost") ||
               strstr(m->base_url, "://[::1]");
    snprintf(sy->model_name, sizeof sy->model_name, "%s/%s%s", m->provider, m->model,
             loop ? " (loopback)" : "");
  }
  kv_import_opts_default(&sy->io);
  sy->io.python = sy->python;
  sy->io.deadline_s = o->deadline_s > 0 ? o->deadline_s : 120;
  sy->io.max_bytes = o->max_bytes > 0 ? o->max_bytes : (int64_t)2 << 30;
  if (o->gate)
    sy->gate = *o->gate;
  else
    kv_gate_opts_default(&sy->gate);
  sy->gate.surface = "cpu";
  /* What is there already counts: the output directory and the --from suite. */
  if (reg_load(&sy->reg, sy->out_dir, "", sy->python, sy->helper, err, errlen) < 0 ||
      (from_abs[0] &&
       reg_load(&sy->reg, from_abs, "--from ", sy->python, sy->helper, err, errlen) < 0)) {
    rc = -1;
    goto out;
  }
  cj = config_json(o, from_abs[0] ? from_abs : NULL);
  int created = 0;
  if (!cj) {
    rc = kv_error(err, errlen, "out of memory");
    goto out;
  }
  if (kv_store_synthesis_open(s, sy->out_dir, cj, o->n, o->fresh, &sy->synthesis_id, &created, err,
                              errlen) < 0 ||
      kv_store_synth_attempts(s, sy->synthesis_id, &sy->rows, &sy->nrows, err, errlen) < 0) {
    rc = -1;
    goto out;
  }
  sum->id = sy->synthesis_id;
  sum->resumed = !created;
  sum->already = !created;
  for (int i = 0; i < sy->nrows; i++)
    if (!strcmp(sy->rows[i].status, "pending") || !strcmp(sy->rows[i].status, "replied"))
      sum->already = 0;
  sy->cap = sy->nrows + 1;
  sy->queue = calloc((size_t)sy->cap, sizeof *sy->queue);
  sy->done = calloc((size_t)sy->cap, sizeof *sy->done);
  if (!sy->queue || !sy->done) {
    rc = kv_error(err, errlen, "out of memory");
    goto out;
  }
  int jobs = o->jobs > 0 ? (o->jobs < 16 ? o->jobs : 16) : 2;
  for (; nth < jobs; nth++)
    if (pthread_create(&th[nth], NULL, judge_thread, sy) != 0) {
      rc = kv_error(err, errlen, "cannot start a thread: %s", strerror(errno));
      goto out;
    }
  /* Replies already received are judged again (a killed synthesis). */
  int outstanding = 0;
  for (int i = 0; i < sy->nrows; i++) {
    if (strcmp(sy->rows[i].status, "replied"))
      continue;
    size_t len;
    char *reply =
        sy->rows[i].reply_hash ? kv_store_get_source(s, sy->rows[i].reply_hash, &len) : NULL;
    struct job *j = reply ? new_job(sy, i, reply) : NULL;
    free(reply);
    if (!j) {
      rc = kv_error(err, errlen,
                    "attempt %d: its reply is missing from the store or out of "
                    "memory; run with --fresh",
                    sy->rows[i].ord);
      goto out;
    }
    enqueue(sy, j);
    outstanding++;
  }
  /* The model, one attempt per request, and the judges' results. */
  uint64_t *handles = calloc((size_t)sy->nrows + 1, sizeof *handles);
  if (!handles) {
    rc = kv_error(err, errlen, "out of memory");
    goto out;
  }
  int next = 0, in_flight = 0, failures = 0, llm_done = 0, stop = 0, fatal = 0;
  int check_failures = 0, checked[MAX_CHECK_FAILURES];
  int conc = o->concurrency > 0 ? o->concurrency : 2;
  while (rc == 0) {
    if (h && h->stop && *h->stop && !stop) {
      stop = 1;
      snprintf(sum->stopped, sizeof sum->stopped, "stopped");
    }
    if (stop) {
      /* Replies not yet taken by a judge wait for the next run ("replied"). */
      pthread_mutex_lock(&sy->mu);
      for (int i = 0; i < sy->nqueue; i++) {
        free(sy->queue[i]->reply);
        free(sy->queue[i]);
        outstanding--;
      }
      sy->nqueue = 0;
      pthread_mutex_unlock(&sy->mu);
    }
    while (!stop && in_flight < conc && next < sy->nrows) {
      struct kv_synth_attempt_row *row = &sy->rows[next];
      if (strcmp(row->status, "pending")) {
        next++;
        continue;
      }
      char asked[600];
      char *prompt = build_prompt(sy, row->ord, asked, sizeof asked);
      if (!prompt) {
        rc = kv_error(err, errlen, "out of memory (or a prompt over %u bytes)", PROMPT_MAX);
        break;
      }
      struct kv_llm_message m = {"user", prompt};
      struct kv_llm_request q;
      kv_llm_request_init(&q);
      q.role = "synthesizer";
      q.system = system_prompt;
      q.messages = &m;
      q.n_messages = 1;
      q.sample = row->ord;
      char serr[768];
      int code = kv_llm_submit(llm, &q, &handles[next], serr, sizeof serr);
      free(prompt);
      if (code == KV_LLM_EBUDGET) {
        stop = 1;
        snprintf(sum->stopped, sizeof sum->stopped, KVA_BUDGET_STOP);
        break;
      }
      if (code != 0) {
        rc = kv_error(err, errlen, "%s", serr);
        break;
      }
      if (set_str(&row->asked, asked) < 0) {
        rc = kv_error(err, errlen, "out of memory");
        break;
      }
      in_flight++;
      next++;
    }
    if (rc)
      break;
    if (in_flight > 0) {
      char perr[512];
      if (kv_llm_poll(llm, 0.05, perr, sizeof perr) < 0) {
        rc = kv_error(err, errlen, "%s", perr);
        break;
      }
      struct kv_llm_result res;
      while (kv_llm_complete(llm, 0, &res) == 1) {
        int i = 0;
        while (i < sy->nrows && handles[i] != res.handle)
          i++;
        in_flight--;
        llm_done++;
        if (i == sy->nrows) {
          kv_llm_result_release(&res);
          continue;
        }
        handles[i] = 0;
        struct kv_synth_attempt_row *row = &sy->rows[i];
        if (res.code == KV_LLM_EBUDGET) {
          stop = 1;
          snprintf(sum->stopped, sizeof sum->stopped, KVA_BUDGET_STOP);
        } else if (res.code != KV_LLM_OK) {
          failures++;
          row->llm_call_id = res.call_id;
          if (set_str(&row->status, "refused") < 0 || set_str(&row->cause, "llm") < 0 ||
              set_str(&row->detail, res.error) < 0)
            rc = kv_error(err, errlen, "out of memory");
          if (rc == 0)
            rc = kv_store_synth_attempt_update(s, row, err, errlen);
          if (rc == 0)
            emit(sy, i, llm_done);
          if (failures >= MAX_LLM_FAILURES && !stop) {
            stop = 1;
            snprintf(sum->stopped, sizeof sum->stopped,
                     "%d LLM calls failed in a row; the last: %.180s", failures, res.error);
          }
        } else {
          failures = 0;
          char hash[65], name[96];
          size_t len = strlen(res.text);
          kv_sha256_hex(res.text, len, hash);
          char fallback[32];
          snprintf(fallback, sizeof fallback, "%s",
                   !strcmp(o->style, "self-instruct") ? "self" : o->style);
          kv_synth_task_name(res.text, row->id, fallback, name, sizeof name);
          row->llm_call_id = res.call_id;
          if (set_str(&row->status, "replied") < 0 || set_str(&row->reply_hash, hash) < 0 ||
              set_str(&row->name, name) < 0)
            rc = kv_error(err, errlen, "out of memory");
          if (rc == 0)
            rc = kv_store_put_source(s, hash, res.text, len, err, errlen);
          if (rc == 0)
            rc = kv_store_synth_attempt_update(s, row, err, errlen);
          struct job *j = rc == 0 ? new_job(sy, i, res.text) : NULL;
          if (rc == 0 && !j)
            rc = kv_error(err, errlen, "out of memory");
          if (j) {
            enqueue(sy, j);
            outstanding++;
          }
        }
        kv_llm_result_release(&res);
        if (rc)
          break;
      }
    }
    /* Judged replies. */
    pthread_mutex_lock(&sy->mu);
    if (!sy->ndone && in_flight == 0 && outstanding > 0)
      pthread_cond_wait(&sy->cv, &sy->mu);
    struct job *got[64];
    int ng = 0;
    while (sy->ndone && ng < 64)
      got[ng++] = sy->done[--sy->ndone];
    pthread_mutex_unlock(&sy->mu);
    for (int g = 0; g < ng; g++) {
      outstanding--;
      if (got[g]->fatal && !fatal) {
        fatal = 1;
        stop = 1;
        kv_error(err, errlen, "%s", got[g]->detail);
      }
      if (!got[g]->fatal && !fatal && rc == 0) {
        rc = record_job(sy, got[g], err, errlen);
        if (rc == 0)
          emit(sy, got[g]->index, llm_done);
      }
      /* The checks failing one after another is kevo's environment (the
       * torch reference worker), not the modules: stop asking. */
      if (!strcmp(got[g]->cause, "check") && check_failures < MAX_CHECK_FAILURES)
        checked[check_failures++] = got[g]->index;
      else if (got[g]->accepted || !strcmp(got[g]->cause, "ill_posed"))
        check_failures = 0;
      if (check_failures >= MAX_CHECK_FAILURES && !fatal && rc == 0) {
        fatal = 1;
        stop = 1;
        kv_error(err, errlen,
                 "kevo task check failed on %d modules in a row, the last: %s; check the torch "
                 "reference worker ('kevo task check' on a task of 'kevo import'), then run "
                 "the same command again",
                 check_failures, got[g]->detail);
        /* Judged again by the next run. */
        for (int c = 0; c < check_failures; c++) {
          struct kv_synth_attempt_row *row = &sy->rows[checked[c]];
          char uerr[256];
          if (set_str(&row->status, "replied") == 0 && set_str(&row->cause, NULL) == 0 &&
              set_str(&row->detail, NULL) == 0)
            kv_store_synth_attempt_update(s, row, uerr, sizeof uerr);
        }
      }
      free(got[g]->reply);
      free(got[g]);
    }
    int more = !stop && next < sy->nrows;
    if (!more && in_flight == 0 && outstanding == 0)
      break;
  }
  free(handles);
  if (fatal && rc == 0)
    rc = -1;
  if (rc == 0) {
    for (int i = 0; i < sy->nrows; i++) {
      const char *st = sy->rows[i].status;
      sum->accepted += !strcmp(st, "accepted");
      sum->refused += !strcmp(st, "refused");
      sum->pending += !strcmp(st, "pending") || !strcmp(st, "replied");
    }
    sum->n = sy->nrows;
    if (!sum->pending && !stop)
      rc = kv_store_synthesis_set_status(s, sy->synthesis_id, "done", err, errlen);
  }
out:
  pthread_mutex_lock(&sy->mu);
  sy->quit = 1;
  /* Judges still queued are dropped: their attempts stay "replied". */
  for (int i = 0; i < sy->nqueue; i++) {
    free(sy->queue[i]->reply);
    free(sy->queue[i]);
  }
  sy->nqueue = 0;
  pthread_cond_broadcast(&sy->cv);
  pthread_mutex_unlock(&sy->mu);
  for (int i = 0; i < nth; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < sy->ndone; i++) {
    free(sy->done[i]->reply);
    free(sy->done[i]);
  }
  free(sy->queue);
  free(sy->done);
  free(cj);
  free(sy->reg.v);
  kv_synth_attempt_rows_free(sy->rows, sy->nrows);
  kv_bench_found_free(sy->from, sy->nfrom);
  if (sy->ops_owned)
    for (int i = 0; i < KV_SYNTH_MAX_OPS; i++)
      free(sy->ops_owned[i]);
  free(sy->ops_owned);
  pthread_cond_destroy(&sy->cv);
  pthread_mutex_destroy(&sy->mu);
  free(sy);
  return rc;
}
