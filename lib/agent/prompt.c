/* Prompts made of named blocks (see prompt.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/prompt.h"
#include "kevo/surface.h"

#define NTMPL (KV_PB_COUNT + KV_PK_COUNT + 1)
#define TMPL_MAX (64u << 10)

static const char *const block_names[KV_PB_COUNT] = {
    "task",  "parent", "compile", "correctness", "performance", "profile",
    "rules", "plan",   "history", "skill",       "static",      "debug"};
static const char *const kind_names[KV_PK_COUNT] = {"write", "refine", "debug", "planner",
                                                    "rule_extractor"};

struct tmpl_def {
  const char *vars; /* the variables it may use, space-separated */
  const char *text;
};

/* Defaults, in the order: blocks, kinds, system. */
static const struct tmpl_def defaults[NTMPL] = {
    {"name summary surface lang device sizes signature reference contract",
     "## Task: {{name}}\n{{summary}}\n\nSurface: {{surface}}; device: {{device}}; timed at "
     "{{sizes}}.\n\n{{contract}}\n"
     "```{{lang}}\n{{signature}}```\n\nReference implementation (correct, slow):\n```{{lang}}\n"
     "{{reference}}```\n"},
    {"step lang code", "## Current kernel (step {{step}})\n```{{lang}}\n{{code}}```\n"},
    {"verdict log", "## Compiler output ({{verdict}})\n```\n{{log}}```\n"},
    {"verdict detail mismatches",
     "## Correctness\nVerdict: {{verdict}}: {{detail}}\n{{mismatches}}"},
    {"median_us reference_us speedup sizes roofline",
     "## Performance\nMedian {{median_us}} us against the reference's {{reference_us}} us at "
     "{{sizes}}: {{speedup}}x; {{roofline}} of the roofline.\n"},
    {"kernels", "## Profile (from the compiler, and Nsight Compute where it ran)\n{{kernels}}"},
    {"rules", "## Rules learnt from earlier failures (obey every one)\n{{rules}}"},
    {"plan", "## Plan to implement\n{{plan}}\n"},
    {"history", "## Earlier attempts\n{{history}}"},
    {"skill", "## A skill to apply\nApply this optimization skill, measured and verified on an "
              "expert kernel, to the current kernel where its preconditions hold:\n\n{{skill}}\n"},
    {"form sass", "## Static analysis of the compiled kernel ({{form}}, from cuobjdump -sass)\n"
                  "{{sass}}"},
    {"form findings", "## Debugger: compute-sanitizer on one failing call ({{form}})\n"
                      "{{findings}}"},
    {"lang entry",
     "Write a new kernel for this task that is correct and as fast as you can make it. Answer "
     "with a short `## Plan` section, then the complete source in one ```{{lang}} block that "
     "defines `{{entry}}`.\n"},
    {"lang entry",
     "Make the current kernel faster while keeping it correct. Answer with a short `## Plan` "
     "section, then the complete new source in one ```{{lang}} block that defines `{{entry}}`.\n"},
    {"lang entry",
     "The current kernel failed as shown above. Fix it, keeping what is fast about it. Answer "
     "with a short `## Plan` section, then the complete fixed source in one ```{{lang}} block "
     "that defines `{{entry}}`.\n"},
    {"lang entry",
     "Do not write code yet. Answer with a `## Plan` section only: the concrete changes that "
     "will make a correct and faster `{{entry}}`, in order.\n"},
    {"lang entry",
     "The kernel above failed. State what it did that a kernel for this task must never do, "
     "as one to three lines, each starting with \"You cannot \" and naming the construct "
     "(for example \"You cannot call __syncthreads() inside a divergent branch.\"). Answer "
     "with those lines only.\n"},
    {"", "You are an expert performance engineer who writes fast, correct C and CUDA kernels. "
         "Your kernels are judged by a strict gate that checks results on fresh inputs and "
         "times them honestly."},
};

struct kv_prompts {
  char *text[NTMPL];
};

static const char *tmpl_name(int i) {
  if (i < KV_PB_COUNT)
    return block_names[i];
  if (i < KV_PB_COUNT + KV_PK_COUNT)
    return kind_names[i - KV_PB_COUNT];
  return "system";
}

const char *kv_prompt_block_name(int b) {
  return b >= 0 && b < KV_PB_COUNT ? block_names[b] : "?";
}
const char *kv_prompt_kind_name(int k) {
  return k >= 0 && k < KV_PK_COUNT ? kind_names[k] : "?";
}

static int block_index(const char *s, size_t n) {
  for (int b = 0; b < KV_PB_COUNT; b++)
    if (strlen(block_names[b]) == n && !strncmp(block_names[b], s, n))
      return b;
  return -1;
}

int kv_prompt_blocks_parse(const char *list, unsigned *mask, char *err, size_t errlen) {
  if (!list || !*list)
    return kv_error(err, errlen,
                    "prompt blocks: the list is empty; name blocks such as "
                    "\"all\" or \"task,parent,compile\"");
  unsigned m = 0;
  int first = 1;
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    int neg = n > 0 && p[0] == '-';
    const char *w = p + neg;
    size_t wn = n - (size_t)neg;
    if (first && neg)
      m = KV_PB_ALL;
    first = 0;
    const char *eq = memchr(w, '=', wn);
    if (eq && !neg) { /* NAME=off|summary|raw */
      int b = block_index(w, (size_t)(eq - w));
      const char *f = eq + 1;
      size_t fn = wn - (size_t)(f - w);
      int off = fn == 3 && !strncmp(f, "off", 3), sum = fn == 7 && !strncmp(f, "summary", 7),
          raw = fn == 3 && !strncmp(f, "raw", 3);
      if ((b != KV_PB_STATIC && b != KV_PB_PROFILE && b != KV_PB_DEBUG) || !(off || sum || raw))
        return kv_error(err, errlen,
                        "prompt blocks: '%.*s': only static, profile and debug take a form, as "
                        "static=off, profile=summary or debug=raw",
                        (int)(wn > 64 ? 64 : wn), w);
      m &= ~((1u << b) | KV_PB_RAW(b));
      if (!off)
        m |= (1u << b) | (raw ? KV_PB_RAW(b) : 0);
    } else if (wn == 3 && !strncmp(w, "all", 3)) {
      m = neg ? 0 : KV_PB_ALL;
    } else {
      int b = block_index(w, wn);
      if (b < 0) {
        char known[256] = "";
        for (int k = 0; k < KV_PB_COUNT; k++)
          snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "",
                   block_names[k]);
        return kv_error(err, errlen, "prompt blocks: unknown block '%.*s'; known: all, %s",
                        (int)(wn > 64 ? 64 : wn), w, known);
      }
      if (neg)
        m &= ~((1u << b) | KV_PB_RAW(b));
      else
        m |= 1u << b;
    }
    p += n;
    if (*p == ',')
      p++;
  }
  *mask = m;
  return 0;
}

/* Every {{var}} of `text` is one of `vars`. */
static int check_vars(const char *origin, const char *text, const char *vars, char *err,
                      size_t errlen) {
  for (const char *p = strstr(text, "{{"); p; p = strstr(p + 2, "{{")) {
    const char *e = strstr(p + 2, "}}");
    if (!e)
      return kv_error(err, errlen, "%s: '{{' without '}}'; close it or remove it", origin);
    size_t n = (size_t)(e - p - 2);
    int found = 0;
    for (const char *v = vars; *v;) {
      size_t vn = strcspn(v, " ");
      if (vn == n && !strncmp(v, p + 2, n))
        found = 1;
      v += vn;
      while (*v == ' ')
        v++;
    }
    if (!found)
      return kv_error(err, errlen, "%s: unknown variable {{%.*s}}; this template may use: %s",
                      origin, (int)(n > 64 ? 64 : n), p + 2, *vars ? vars : "none");
  }
  return 0;
}

int kv_prompts_load(const char *dir, struct kv_prompts **out, char *err, size_t errlen) {
  *out = NULL;
  struct kv_prompts *p = calloc(1, sizeof *p);
  if (!p)
    return kv_error(err, errlen, "out of memory");
  for (int i = 0; i < NTMPL; i++) {
    char path[PATH_MAX];
    if (dir)
      snprintf(path, sizeof path, "%s/%s.md", dir, tmpl_name(i));
    if (dir && access(path, F_OK) == 0) {
      size_t len;
      if (kv_read_file(path, TMPL_MAX, &p->text[i], &len, err, errlen) < 0 ||
          check_vars(path, p->text[i], defaults[i].vars, err, errlen) < 0) {
        kv_prompts_free(p);
        return -1;
      }
    } else {
      p->text[i] = strdup(defaults[i].text);
      if (!p->text[i]) {
        kv_prompts_free(p);
        return kv_error(err, errlen, "out of memory");
      }
    }
  }
  *out = p;
  return 0;
}

void kv_prompts_free(struct kv_prompts *p) {
  if (!p)
    return;
  for (int i = 0; i < NTMPL; i++)
    free(p->text[i]);
  free(p);
}

const char *kv_prompts_system(const struct kv_prompts *p) {
  return p->text[NTMPL - 1];
}

/* Variables of one rendering. */
struct vars {
  int n;
  const char *key[12];
  const char *val[12];
};

static void var(struct vars *v, const char *k, const char *val) {
  if (v->n < 12) {
    v->key[v->n] = k;
    v->val[v->n++] = val ? val : "";
  }
}

static void render(const char *t, const struct vars *v, struct kv_buf *b) {
  for (;;) {
    const char *p = strstr(t, "{{");
    const char *e = p ? strstr(p + 2, "}}") : NULL;
    if (!e) {
      kv_buf_append(b, t, strlen(t));
      return;
    }
    kv_buf_append(b, t, (size_t)(p - t));
    size_t n = (size_t)(e - p - 2);
    for (int i = 0; i < v->n; i++)
      if (strlen(v->key[i]) == n && !strncmp(v->key[i], p + 2, n))
        kv_buf_append(b, v->val[i], strlen(v->val[i]));
    t = e + 2;
  }
}

char *kv_prompt_template(const char *dir, const char *name, const char *vars, const char *deflt,
                         char *err, size_t errlen) {
  char path[PATH_MAX];
  char *text = NULL;
  size_t len;
  if (dir && snprintf(path, sizeof path, "%s/%s.md", dir, name) < (int)sizeof path &&
      access(path, F_OK) == 0) {
    if (kv_read_file(path, TMPL_MAX, &text, &len, err, errlen) < 0)
      return NULL;
    if (check_vars(path, text, vars, err, errlen) < 0) {
      free(text);
      return NULL;
    }
    return text;
  }
  text = strdup(deflt);
  if (!text)
    kv_error(err, errlen, "out of memory");
  return text;
}

char *kv_prompt_fill(const char *tmpl, const char *const *pairs) {
  struct vars v = {0};
  for (int i = 0; pairs && pairs[i] && pairs[i + 1] && i < 24; i += 2)
    var(&v, pairs[i], pairs[i + 1]);
  struct kv_buf b;
  kv_buf_init(&b, KV_PROMPT_MAX + (4u << 20));
  render(tmpl, &v, &b);
  if (!b.data)
    kv_buf_append(&b, "", 0);
  return kv_buf_detach(&b);
}

/* At most cap bytes of s, cut at a line, ending in a newline, with a note of
 * what was cut; malloc'd. */
static char *capped(const char *s, size_t cap) {
  size_t n = strlen(s);
  struct kv_buf b;
  kv_buf_init(&b, cap + 128);
  if (n <= cap) {
    kv_buf_append(&b, s, n);
  } else {
    size_t k = cap;
    while (k > 0 && s[k - 1] != '\n')
      k--;
    if (k == 0)
      k = cap;
    kv_buf_append(&b, s, k);
    if (k && s[k - 1] != '\n')
      kv_buf_append(&b, "\n", 1);
    kv_buf_appendf(&b, "[... %zu more bytes cut]\n", n - k);
  }
  if (b.len && b.data[b.len - 1] != '\n')
    kv_buf_append(&b, "\n", 1);
  if (!b.data)
    kv_buf_append(&b, "", 0);
  return kv_buf_detach(&b);
}

static void sizes_of(const struct kv_task *t, char *out, size_t cap) {
  out[0] = 0;
  if (!t || t->nbench == 0)
    return;
  size_t used = 0;
  for (int i = 0; i < t->nparams && used < cap; i++)
    if (t->params[i].role == KV_ROLE_SIZE)
      used += (size_t)snprintf(out + used, cap - used, "%s%s=%lld", used ? " " : "",
                               t->params[i].name, (long long)t->bench[0].values[i]);
}

static int block_has_data(int b, const struct kv_prompt_ctx *c) {
  const struct kv_gate_result *r = c->parent;
  switch (b) {
  case KV_PB_TASK:
    return c->task != NULL;
  case KV_PB_PARENT:
    return c->parent_code && *c->parent_code;
  case KV_PB_COMPILE:
    return r && r->compile_log && *r->compile_log &&
           (r->verdict == KV_V_COMPILE_ERROR || r->verdict == KV_V_POLICY_VIOLATION);
  case KV_PB_CORRECTNESS:
    return r != NULL;
  case KV_PB_PERFORMANCE:
    return r && r->verdict == KV_V_OK && r->timed;
  case KV_PB_PROFILE:
    return r && (r->nkernels > 0 || r->profile);
  case KV_PB_DEBUG:
    return r && r->debug;
  case KV_PB_RULES:
    return c->nrules > 0;
  case KV_PB_PLAN:
    return c->plan && *c->plan;
  case KV_PB_HISTORY:
    return c->nhistory > 0;
  case KV_PB_SKILL:
    return c->skill && *c->skill;
  case KV_PB_STATIC:
    for (int i = 0; r && i < r->nkernels; i++)
      if (r->kernels[i].has_sass)
        return 1;
    return 0;
  }
  return 0;
}

/* The vendor libraries the task allows (task.json "allow"), for the cuda
 * signature: what to include, and the one-time setup, in one line each. */
static void allowed_libs(const struct kv_task *t, char *out, size_t cap) {
  static const struct {
    const char *name, *what, *example;
  } libs[] = {
      {"cublas", "cuBLAS (#include <cublas_v2.h>; cuBLASLt too)",
       "static cublasHandle_t h; if (!h) cublasCreate(&h); cublasSetStream(h, stream); "
       "cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, k, x, k, &zero, y, n); "
       "/* row-major y[m,n] = x[m,k] w[n,k]^T */"},
      {"cublaslt", "cuBLASLt (#include <cublasLt.h>)",
       "static cublasLtHandle_t lt; static void *ws; if (!lt) { cublasLtCreate(&lt); "
       "cudaMalloc(&ws, WS_BYTES); } cublasLtMatmul(lt, ..., ws, WS_BYTES, stream); /* keep "
       "descriptors and the heuristic's algo per shape; bias/ReLU epilogues fuse */"},
      {"cudnn", "cuDNN (#include <cudnn.h>)",
       "static cudnnHandle_t d; if (!d) cudnnCreate(&d); cudnnSetStream(d, stream);"},
  };
  size_t u = 0;
  out[0] = 0;
  for (int i = 0; i < t->nallow; i++)
    for (size_t k = 0; k < sizeof libs / sizeof libs[0]; k++) {
      if (strcmp(t->allow[i], libs[k].name) != 0)
        continue;
      if (u == 0)
        u += (size_t)snprintf(out, cap,
                              "// This task allows vendor libraries (kevo links them; call them "
                              "from the entry, not from the kernel-only form):\n");
      if (u < cap)
        u += (size_t)snprintf(out + u, cap - u, "// %s, e.g. %s\n", libs[k].what, libs[k].example);
    }
  if (u > 0 && u < cap)
    snprintf(out + u, cap - u,
             "// Create handles and workspaces once (static) and set the stream on every call: "
             "the first calls are untimed correctness calls and warm-up calls at the timed "
             "size precede the timed ones, so one-time setup is never timed, but setup in "
             "every call is.\n");
}

/* Room in the task block's signature for what follows the prototype: the
 * allowed libraries' notes and the kernel-only form. */
#define KV_PROMPT_SIG_NOTES 8192

static void render_block(const struct kv_prompts *p, int b, const struct kv_prompt_ctx *c,
                         unsigned mask, struct kv_buf *out) {
  struct vars v = {0};
  const struct kv_gate_result *r = c->parent;
  const struct kv_surface *sf = kv_surface_find(c->surface);
  int cuda = kv_surface_gpu(sf);
  const char *lang = kv_surface_lang_name(sf);
  char n1[64], n2[64], n3[64], n4[64], sizes[512];
  char *tmp = NULL, *tmp2 = NULL, *sig = NULL;
  size_t sigcap = 0;
  struct kv_buf lb;
  kv_buf_init(&lb, 256u << 10);
  switch (b) {
  case KV_PB_TASK: {
    /* Sized from the prototype (a packed network's table of offsets runs
     * to tens of KiB), with room for the notes added below. */
    char *proto = kv_task_prototype_alloc(c->task, kv_surface_lang(sf));
    sigcap = (proto ? strlen(proto) : 0) + KV_PROMPT_SIG_NOTES;
    sig = malloc(sigcap);
    if (!sig) {
      free(proto);
      break;
    }
    snprintf(sig, sigcap, "%s",
             proto ? proto : "(the prototype is over kevo's cap to show; KV_TASK_PROTO_MAX)\n");
    free(proto);
    if (cuda && c->task->nallow > 0) {
      size_t u = strlen(sig);
      allowed_libs(c->task, sig + u, sigcap - u);
    }
    if (cuda) { /* the kernel-only form (kevo/launch.h), allowed wherever no host logic is needed */
      char names[512] = "";
      for (int i = 0, u = 0; i < c->task->nparams && u < (int)sizeof names - 80; i++)
        if (c->task->params[i].role == KV_ROLE_SIZE)
          u += snprintf(names + u, sizeof names - (size_t)u, "%s%s", u ? " " : "",
                        c->task->params[i].name);
      size_t u = strlen(sig);
      snprintf(sig + u, sigcap - u,
               "// Or, when the work needs no host code, the kernel-only form (compiled in "
               "~0.1 s by NVRTC instead of ~1 s by nvcc):\n"
               "// define no entry, only __global__ kernels, and one line per launch, run in "
               "order on the task's stream:\n"
               "// kevo:launch KERNEL grid=(EXPR[, EXPR, EXPR]) block=(EXPR[, EXPR, EXPR]) "
               "[smem=EXPR] args=(PARAM, ...)\n"
               "// EXPR: integers, + - * / %% ( ), the sizes (%s) and integer #defines; args: "
               "the task's params in the kernel's parameter order (buffers as pointers, sizes "
               "as int). No host logic: branch on sizes or alignment inside the kernels; kevo "
               "opts in to dynamic shared memory above 48 KiB.\n",
               names[0] ? names : "none");
    }
    sizes_of(c->task, sizes, sizeof sizes);
    tmp = capped(c->reference ? c->reference : "(not available)\n", KV_PROMPT_CODE_MAX);
    var(&v, "name", c->task->name);
    var(&v, "summary", c->task->summary);
    var(&v, "surface", c->surface ? c->surface : "cpu");
    var(&v, "lang", lang);
    var(&v, "device", c->device && *c->device ? c->device : "unknown");
    var(&v, "sizes", sizes);
    var(&v, "signature", sig);
    var(&v, "reference", tmp);
    /* The torch surface asks for the field's form (AdaExplore's KernelBench
     * prompt, in substance): Model optimized into a ModelNew. */
    var(&v, "contract",
        kv_surface_lang(sf) == KV_LANG_PYTHON
            ? "Optimize the architecture named Model (the reference below) with custom Triton "
              "kernels (@triton.jit) or inline CUDA "
              "(torch.utils.cpp_extension.load_inline). Name your optimized architecture "
              "ModelNew: built with Model's constructor arguments, keeping Model's parameter "
              "names and shapes (kevo loads the task's weights into them), forward taking "
              "Model.forward's inputs and returning its outputs. Real code, no tests, no "
              "calls to Model. The contract:"
            : "Define exactly this entry point (kevo includes the prototype for you):");
    break;
  }
  case KV_PB_PARENT:
    snprintf(n1, sizeof n1, "%d", c->parent_step);
    tmp = capped(c->parent_code, KV_PROMPT_CODE_MAX);
    var(&v, "step", n1);
    var(&v, "lang", lang);
    var(&v, "code", tmp);
    break;
  case KV_PB_COMPILE:
    tmp = capped(r->compile_log, KV_PROMPT_LOG_MAX);
    var(&v, "verdict", kv_verdict_name(r->verdict));
    var(&v, "log", tmp);
    break;
  case KV_PB_CORRECTNESS: {
    int shown = 0;
    for (int i = 0; i < r->nchecks && shown < KV_PROMPT_MISMATCH_MAX; i++)
      if (r->checks[i].verdict != KV_V_OK) {
        kv_buf_appendf(&lb, "- at %s (seed %llu): %s: %s\n", r->checks[i].sizes,
                       (unsigned long long)r->checks[i].seed, kv_verdict_name(r->checks[i].verdict),
                       r->checks[i].detail);
        shown++;
      }
    if (r->verdict == KV_V_CRASH && r->cand_stderr && *r->cand_stderr) {
      tmp2 = capped(r->cand_stderr, 1500);
      kv_buf_appendf(&lb, "Its stderr:\n%s", tmp2);
    }
    if (!lb.len)
      kv_buf_append(&lb, "", 0);
    var(&v, "verdict", kv_verdict_name(r->verdict));
    var(&v, "detail", r->detail);
    var(&v, "mismatches", lb.data);
    break;
  }
  case KV_PB_PERFORMANCE:
    snprintf(n1, sizeof n1, "%.1f", r->timing.cand.median_us);
    snprintf(n2, sizeof n2, "%.1f", r->timing.ref.median_us);
    /* Several bench sizes: the medians are the first size's, so is the
     * speedup beside them; the others and the geometric mean follow it. */
    snprintf(n3, sizeof n3, "%.2f",
             r->timing.nsizes > 1 ? r->timing.size[0].speedup : r->timing.speedup);
    if (r->timing.roofline > 0)
      snprintf(n4, sizeof n4, "%.0f%%", 100 * r->timing.roofline);
    else
      snprintf(n4, sizeof n4, "an unknown fraction");
    var(&v, "median_us", n1);
    var(&v, "reference_us", n2);
    var(&v, "speedup", n3);
    if (r->timing.nsizes > 1) {
      kv_buf_appendf(&lb, "%s (and %d more bench sizes:", r->timing.sizes, r->timing.nsizes - 1);
      for (int i = 1; i < r->timing.nsizes; i++)
        kv_buf_appendf(&lb, "%s %.2fx at %s", i > 1 ? ";" : "", r->timing.size[i].speedup,
                       r->timing.size[i].sizes);
      kv_buf_appendf(&lb, "; geometric mean %.2fx over all)", r->timing.speedup);
      var(&v, "sizes", lb.data ? lb.data : r->timing.sizes);
    } else {
      var(&v, "sizes", r->timing.sizes);
    }
    var(&v, "roofline", n4);
    break;
  case KV_PB_PROFILE:
    for (int i = 0; i < r->nkernels; i++) {
      const struct kv_kernel_res *k = &r->kernels[i];
      kv_buf_appendf(&lb,
                     "- %s: %d registers, %ld B shared, %ld B stack, spills %ld B "
                     "stores / %ld B loads\n",
                     k->name, k->registers, k->smem_bytes, k->stack_bytes, k->spill_store_bytes,
                     k->spill_load_bytes);
    }
    if (r->profile && r->profile->nkernels && (mask & KV_PB_RAW(b)) && r->profile->raw) {
      tmp2 = capped(r->profile->raw, KV_PROMPT_TOOL_MAX);
      kv_buf_appendf(
          &lb, "Nsight Compute (one call at the bench size), details page:\n```\n%s```\n", tmp2);
    } else if (r->profile && r->profile->nkernels) {
      char *line = malloc(16384);
      if (line) {
        kv_ncu_summary(r->profile, line, 16384);
        kv_buf_appendf(&lb,
                       "Nsight Compute, one call at the bench size (SOL = %% of the "
                       "device's peak):\n%s\n",
                       line);
        if (r->profile_ref && r->profile_ref->nkernels) {
          kv_ncu_summary(r->profile_ref, line, 16384);
          kv_buf_appendf(&lb, "The reference, likewise:\n%s\n", line);
        }
        free(line);
      }
    } else if (r->profile && r->profile->note[0]) {
      kv_buf_appendf(&lb, "Nsight Compute: %s\n", r->profile->note);
    }
    var(&v, "kernels", lb.data ? lb.data : "");
    break;
  case KV_PB_DEBUG:
    if ((mask & KV_PB_RAW(b)) && r->debug->raw && *r->debug->raw) {
      tmp2 = capped(r->debug->raw, KV_PROMPT_TOOL_MAX);
      kv_buf_appendf(&lb, "```\n%s```\n", tmp2);
      var(&v, "form", "its report");
    } else {
      char *line = malloc(16384);
      if (line) {
        kv_san_summary(r->debug, line, 16384);
        kv_buf_appendf(&lb, "%s\n", line);
        free(line);
      }
      var(&v, "form", "findings, with the source lines");
    }
    if (r->debug->note[0])
      kv_buf_appendf(&lb, "(%s)\n", r->debug->note);
    var(&v, "findings", lb.data ? lb.data : "");
    break;
  case KV_PB_RULES:
    for (int i = 0; i < c->nrules; i++)
      kv_buf_appendf(&lb, "- %s\n", c->rules[i]);
    var(&v, "rules", lb.data);
    break;
  case KV_PB_PLAN:
    tmp = capped(c->plan, 16000);
    var(&v, "plan", tmp);
    break;
  case KV_PB_SKILL:
    tmp = capped(c->skill, 32000);
    var(&v, "skill", tmp);
    break;
  case KV_PB_STATIC:
    if ((mask & KV_PB_RAW(b)) && r->sass && *r->sass) {
      tmp2 = capped(r->sass, KV_PROMPT_SASS_MAX);
      kv_buf_appendf(&lb, "```\n%s```\n", tmp2);
      var(&v, "form", "listing, hex encodings left out");
    } else {
      for (int i = 0; i < r->nkernels; i++) {
        char line[512];
        if (!r->kernels[i].has_sass)
          continue;
        kv_sass_mix_line(&r->kernels[i].sass, line, sizeof line);
        kv_buf_appendf(&lb, "- %s: %s\n", r->kernels[i].name, line);
      }
      kv_buf_appendf(&lb, "(Instruction counts per kernel. global/shared ld and st by access "
                          "width: 128b means vectorized; local = spills and stack arrays; "
                          "tensor = HMMA/IMMA/warpgroup MMA; bar = barriers.)\n");
      var(&v, "form", "instruction mix");
    }
    var(&v, "sass", lb.data);
    break;
  case KV_PB_HISTORY:
    for (int i = 0; i < c->nhistory; i++) {
      const struct kv_prompt_attempt *a = &c->history[i];
      if (a->speedup > 0)
        kv_buf_appendf(&lb, "- step %d (%s): %s, %.2fx\n", a->step, a->action ? a->action : "?",
                       a->verdict ? a->verdict : "?", a->speedup);
      else
        kv_buf_appendf(&lb, "- step %d (%s): %s\n", a->step, a->action ? a->action : "?",
                       a->verdict ? a->verdict : "?");
      if (a->code) {
        char *cc = capped(a->code, KV_PROMPT_CODE_MAX / 4);
        kv_buf_appendf(&lb, "```%s\n%s```\n", lang, cc);
        free(cc);
      }
    }
    var(&v, "history", lb.data);
    break;
  }
  render(p->text[b], &v, out);
  if (out->len && out->data[out->len - 1] != '\n')
    kv_buf_append(out, "\n", 1);
  kv_buf_append(out, "\n", 1);
  free(sig);
  free(tmp);
  free(tmp2);
  kv_buf_release(&lb);
}

/* The summary form of a block (kevo analyze): one fixed line of what its
 * template would show in full. 0 when the block has none. */
static int render_summary(int b, const struct kv_prompt_ctx *c, struct kv_buf *out) {
  const struct kv_gate_result *r = c->parent;
  switch (b) {
  case KV_PB_PERFORMANCE:
    kv_buf_appendf(out, "## Performance (summary)\n%.2fx the reference.\n\n", r->timing.speedup);
    return 1;
  case KV_PB_PROFILE: {
    int regs = 0;
    long spill = 0;
    for (int i = 0; i < r->nkernels; i++) {
      if (r->kernels[i].registers > regs)
        regs = r->kernels[i].registers;
      spill += r->kernels[i].spill_store_bytes + r->kernels[i].spill_load_bytes;
    }
    kv_buf_appendf(out, "## Profile (summary)\nAt most %d registers per thread; %s.", regs,
                   spill ? "registers spill" : "no spills");
    if (r->profile && r->profile->nkernels) {
      const struct kv_ncu_kernel *k = &r->profile->k[0];
      for (int i = 1; i < r->profile->nkernels; i++)
        if (r->profile->k[i].duration_us > k->duration_us)
          k = &r->profile->k[i];
      kv_buf_appendf(out,
                     " Longest kernel: SOL memory %.0f%%, compute %.0f%%; occupancy %.0f%%%s%s.",
                     k->mem_pct, k->sm_pct, k->achieved_occ, k->top_stall[0] ? "; top stall " : "",
                     k->top_stall);
    }
    kv_buf_appendf(out, "\n\n");
    return 1;
  }
  case KV_PB_DEBUG: {
    const struct kv_san_report *d = r->debug;
    if (d->nfindings)
      kv_buf_appendf(out, "## Debugger (summary)\n%d findings; the first: %s %s at line %d.\n\n",
                     d->nfindings, d->f[0].tool, d->f[0].kind, d->f[0].line);
    else
      kv_buf_appendf(out, "## Debugger (summary)\nNo findings%s%s.\n\n", d->note[0] ? ": " : "",
                     d->note);
    return 1;
  }
  case KV_PB_RULES:
    kv_buf_appendf(out,
                   "## Rules (summary)\n%d rules learnt from earlier failures; the first: "
                   "%.300s\n\n",
                   c->nrules, c->rules[0]);
    return 1;
  case KV_PB_STATIC: {
    int n = 0, wide = 0, tensor = 0, local = 0;
    for (int i = 0; i < r->nkernels; i++) {
      const struct kv_sass_mix *m = &r->kernels[i].sass;
      if (!r->kernels[i].has_sass)
        continue;
      n++;
      wide |= m->ldg[KV_SASS_W128] || m->stg[KV_SASS_W128] || m->lds[KV_SASS_W128] ||
              m->sts[KV_SASS_W128];
      tensor |= m->hmma || m->imma || m->gmma;
      local |= m->ldl || m->stl;
    }
    kv_buf_appendf(out,
                   "## Static analysis (summary)\n%d kernels; 128-bit loads or stores: %s; "
                   "tensor-core instructions: %s; local memory: %s.\n\n",
                   n, wide ? "yes" : "no", tensor ? "yes" : "no", local ? "yes" : "no");
    return 1;
  }
  case KV_PB_HISTORY: {
    int ok = 0;
    double best = 0;
    for (int i = 0; i < c->nhistory; i++)
      if (c->history[i].speedup > 0) {
        ok++;
        if (c->history[i].speedup > best)
          best = c->history[i].speedup;
      }
    kv_buf_appendf(out, "## Earlier attempts (summary)\n%d attempts, %d accepted and timed",
                   c->nhistory, ok);
    if (best > 0)
      kv_buf_appendf(out, " (best %.2fx)", best);
    kv_buf_append(out, ".\n\n", 3);
    return 1;
  }
  }
  return 0;
}

char *kv_prompt_build(const struct kv_prompts *p, enum kv_prompt_kind kind, unsigned mask,
                      const struct kv_prompt_ctx *c, char *err, size_t errlen) {
  if (!p || !c || !c->task || (int)kind < 0 || kind >= KV_PK_COUNT) {
    kv_error(err, errlen, "prompt: needs templates, a task and a known kind");
    return NULL;
  }
  struct kv_buf b;
  kv_buf_init(&b, KV_PROMPT_MAX);
  for (int i = 0; i < KV_PB_COUNT; i++)
    if ((mask & (1u << i)) && block_has_data(i, c) &&
        !((c->summary_mask & (1u << i)) && render_summary(i, c, &b)))
      render_block(p, i, c, mask, &b);
  struct vars v = {0};
  var(&v, "lang", kv_surface_lang_name(kv_surface_find(c->surface)));
  var(&v, "entry", kv_surface_entry(kv_surface_find(c->surface), c->task));
  render(p->text[KV_PB_COUNT + kind], &v, &b);
  if (b.truncated) {
    kv_buf_release(&b);
    kv_error(err, errlen, "prompt: longer than %u bytes; switch off blocks (history, reference)",
             KV_PROMPT_MAX);
    return NULL;
  }
  if (!b.data)
    kv_buf_append(&b, "", 0);
  return kv_buf_detach(&b);
}
