/* kevo task starter: a minimal correct candidate of an imported task, written
 * by python/kevo_starter.py from the task's reference.py (traced by torch.fx
 * in kevo-sandbox, like kevo import's helper). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/import.h"
#include "kevo/util.h"

void kv_starter_release(struct kv_starter *s) {
  free(s->source);
  free(s->entry);
  s->source = s->entry = NULL;
}

static int find_starter_helper(char *out, size_t cap, char *err, size_t errlen) {
  const char *e = getenv("KEVO_STARTER_HELPER");
  if (e && *e) {
    if (!kv_path_exists(e))
      return kv_error(err, errlen,
                      "KEVO_STARTER_HELPER=%s: not found; point it at python/kevo_starter.py", e);
    snprintf(out, cap, "%s", e);
    return 0;
  }
  if (kv_find_shipped("kevo_starter.py", NULL, 1, out, cap) == 0)
    return 0;
  return kv_error(err, errlen,
                  "kevo_starter.py: not found beside the kevo executable nor in the source tree; "
                  "rebuild kevo or set KEVO_STARTER_HELPER to python/kevo_starter.py");
}

#define TORCH_STARTER_MAX (4u << 20) /* a reference.py larger than this is refused */

static int is_word(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* src with every whole word Model as ModelNew (malloc'd; NULL when out of
 * memory): `class Model(...)`, `super(Model, self)` and the docstrings'
 * mentions alike. */
static char *rename_model(const char *src, size_t n) {
  size_t hits = 0;
  for (const char *p = src; (p = strstr(p, "Model")) != NULL; p += 5)
    hits++;
  char *out = malloc(n + 3 * hits + 1);
  if (!out)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    if (!strncmp(src + i, "Model", 5) && (i == 0 || !is_word((unsigned char)src[i - 1])) &&
        !is_word((unsigned char)src[i + 5])) {
      memcpy(out + o, "ModelNew", 8);
      o += 8;
      i += 5;
    } else {
      out[o++] = src[i++];
    }
  }
  out[o] = '\0';
  return out;
}

/* The torch surface's starter: the task's own Model, renamed ModelNew: the
 * reference's computation, correct by construction, as KernelBench's
 * ModelNew starts (no helper process: nothing of the module is run). */
static int torch_starter(const char *ref, struct kv_starter *s, char *err, size_t errlen) {
  char *src = NULL;
  size_t len = 0;
  if (kv_read_file(ref, TORCH_STARTER_MAX, &src, &len, err, errlen) < 0)
    return -1;
  if (!strstr(src, "class Model")) {
    free(src);
    snprintf(s->cause, sizeof s->cause, "unsupported");
    snprintf(s->detail, sizeof s->detail, "%s defines no class Model to rename", ref);
    return 0;
  }
  static const char head[] =
      "# kevo task starter (torch surface): the task's Model renamed ModelNew, correct and as\n"
      "# fast as the reference; replace its operators with Triton or inline CUDA kernels.\n";
  char *body = rename_model(src, len);
  free(src);
  size_t hl = sizeof head - 1, bl = body ? strlen(body) : 0;
  s->source = body ? malloc(hl + bl + 1) : NULL;
  s->entry = strdup("ModelNew");
  if (!s->source || !s->entry) {
    free(body);
    kv_starter_release(s);
    return kv_error(err, errlen, "out of memory");
  }
  memcpy(s->source, head, hl);
  memcpy(s->source + hl, body, bl + 1);
  free(body);
  s->ok = 1;
  snprintf(s->what, sizeof s->what,
           "keeps the task's Model, renamed ModelNew: PyTorch's own operators, 1.0x the reference");
  return 0;
}

static const char *str_of(json_t *j, const char *key) {
  const char *v = json_string_value(json_object_get(j, key));
  return v ? v : "";
}

/* The helper's reply line into s. */
static int parse_reply(const char *dir, const struct kv_buf *out, const char *how,
                       struct kv_starter *s, char *err, size_t errlen) {
  const char *m = out->data ? strstr(out->data, KV_STARTER_MARK) : NULL;
  if (!m) {
    char tail[400] = "";
    size_t n = out->len, from = n > 300 ? n - 300 : 0;
    snprintf(tail, sizeof tail, "%s", out->data ? out->data + from : "");
    for (char *c = tail; *c; c++)
      if (*c == '\n')
        *c = ' ';
    return kv_error(err, errlen, "%s: the starter helper %s without a reply%s; its last output: %s",
                    dir, how, out->truncated ? " (over its output cap)" : "",
                    tail[0] ? tail : "(none)");
  }
  json_error_t je;
  json_t *j =
      json_loadb(m + strlen(KV_STARTER_MARK), strcspn(m, "\n") - strlen(KV_STARTER_MARK), 0, &je);
  if (!j)
    return kv_error(err, errlen, "%s: the starter helper's reply is not JSON (%s)", dir, je.text);
  s->ok = json_is_true(json_object_get(j, "ok"));
  const char *src = json_string_value(json_object_get(j, "source"));
  const char *entry = json_string_value(json_object_get(j, "entry"));
  snprintf(s->what, sizeof s->what, "%s", str_of(j, "what"));
  snprintf(s->cause, sizeof s->cause, "%s", str_of(j, "cause"));
  snprintf(s->detail, sizeof s->detail, "%s", str_of(j, "detail"));
  if (s->ok && src && (!(s->source = strdup(src)) || !(s->entry = strdup(entry ? entry : "")))) {
    json_decref(j);
    return kv_error(err, errlen, "out of memory");
  }
  json_decref(j);
  if (s->ok && !s->source)
    return kv_error(err, errlen, "%s: the starter helper said ok without a source", dir);
  return 0;
}

int kv_import_starter(const struct kv_import_opts *o, const char *task_dir, const char *surface,
                      struct kv_starter *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  char helper[PATH_MAX], sbx[PATH_MAX], pyexe[PATH_MAX], ref[PATH_MAX + 16], dir[PATH_MAX];
  if (!realpath(task_dir, dir))
    return kv_error(err, errlen, "%s: not found; give an imported task's directory", task_dir);
  snprintf(ref, sizeof ref, "%s/reference.py", dir);
  if (!kv_path_exists(ref))
    return kv_error(err, errlen,
                    "%s: no reference.py; kevo task starter writes candidates of tasks made by "
                    "kevo import (a C reference is itself a candidate to start from)",
                    task_dir);
  if (surface && !strcmp(surface, "torch"))
    return torch_starter(ref, s, err, errlen);
  const char *py = o->python && *o->python ? o->python : kv_python();
  if (find_starter_helper(helper, sizeof helper, err, errlen) < 0 ||
      kv_import_sandbox_path(o, sbx, sizeof sbx, err, errlen) < 0)
    return -1;
  if (kv_which(py, pyexe, sizeof pyexe) < 0)
    return kv_error(err, errlen, "%s: not found; install Python 3 with torch or set KEVO_PYTHON",
                    py);
  char scratch[PATH_MAX];
  const char *tmp = getenv("TMPDIR");
  if (kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-starter-", scratch, sizeof scratch, err,
                 errlen) < 0)
    return -1;
  char e_path[4200], e_home[4200], e_tmp[4200], e_pp[4200];
  const char *v = getenv("PATH");
  snprintf(e_path, sizeof e_path, "PATH=%s", v && *v ? v : "/usr/local/bin:/usr/bin:/bin");
  snprintf(e_home, sizeof e_home, "HOME=%s", scratch);
  snprintf(e_tmp, sizeof e_tmp, "TMPDIR=%s", scratch);
  v = getenv("PYTHONPATH");
  snprintf(e_pp, sizeof e_pp, "PYTHONPATH=%s", v ? v : "");
  char *envp[] = {e_path,
                  e_home,
                  e_tmp,
                  e_pp,
                  "OMP_NUM_THREADS=1",
                  "LANG=C.UTF-8",
                  "CUDA_VISIBLE_DEVICES=",
                  "PYTHONDONTWRITEBYTECODE=1",
                  "PYTHONWARNINGS=ignore",
#ifdef KEVO_SANITIZED
                  "ASAN_OPTIONS=detect_leaks=0", /* as import.c's */
#endif
                  NULL};
  char rstore[KV_IMPORT_MAX_READS][PATH_MAX], cpu[32];
  const char *reads[KV_IMPORT_MAX_READS];
  int nr = kv_import_helper_reads(py, helper, ref, rstore, reads);
  double dl = o->deadline_s > 0 ? o->deadline_s : 120;
  snprintf(cpu, sizeof cpu, "%d", (int)dl + 10);
  /* The layers of kevo import's helper (kevo/import.h): the trace runs
   * reference.py, code kevo did not write (issue 30). */
  char *argv[16 + 2 * KV_IMPORT_MAX_READS], datab[32];
  int a = kv_import_sandbox_argv(argv, o, sbx, scratch, cpu, reads, nr, datab);
  char *tail[] = {pyexe, "-B", helper, dir, "--surface", (char *)surface, NULL};
  for (size_t i = 0; tail[i]; i++)
    argv[a++] = tail[i];
  argv[a] = NULL;
  struct kv_buf out;
  kv_buf_init(&out, KV_STARTER_MAX_OUTPUT);
  struct kv_proc_result pr;
  int rc = kv_run(argv, envp, scratch, dl, NULL, NULL, &out, &pr, err, errlen);
  kv_rmtree(scratch);
  if (rc == 0) {
    char how[128];
    kv_proc_describe(&pr, how, sizeof how);
    if (pr.timed_out)
      rc = kv_error(err, errlen, "%s: the starter helper did not finish in %.0f s", task_dir, dl);
    else if (pr.exited && pr.status == 125 && out.data && strstr(out.data, "kevo-sandbox: "))
      rc = kv_error(err, errlen, "%s: the helper's sandbox could not be set up: %.200s", task_dir,
                    strstr(out.data, "kevo-sandbox: ") + 14);
    else
      rc = parse_reply(task_dir, &out, how, s, err, errlen);
  }
  kv_buf_release(&out);
  return rc;
}

/* The README's section on the starter (appended to DIR/README.md). */
int kv_import_readme_starter(const struct kv_import_opts *o, const char *dir, char *err,
                             size_t errlen) {
  struct kv_starter st;
  char serr[1024];
  struct kv_buf b;
  kv_buf_init(&b, KV_STARTER_MAX_OUTPUT);
  kv_buf_appendf(&b, "\n## A minimal correct candidate\n\n");
  memset(&st, 0, sizeof st);
  const char *want = getenv("KEVO_IMPORT_STARTER");
  if (want && !strcmp(want, "0"))
    kv_buf_appendf(&b, "`kevo task starter DIR` writes one (not generated at import: "
                       "KEVO_IMPORT_STARTER=0).\n");
  else if (kv_import_starter(o, dir, "cpu", &st, serr, sizeof serr) < 0)
    kv_buf_appendf(&b, "`kevo task starter` could not run here: %s.\n", serr);
  else if (!st.ok)
    kv_buf_appendf(&b,
                   "`kevo task starter` cannot write one for this task: %s. Write the candidate "
                   "by hand (the entry above) or use an LLM strategy (`kevo run --strategy "
                   "greedy`).\n",
                   st.detail);
  else
    kv_buf_appendf(&b,
                   "`kevo task starter DIR -o starter.c` writes one (`--surface cuda -o "
                   "starter.cu` for the cuda surface), and `kevo run DIR` without an LLM starts "
                   "from it when DIR has no starter of its own. On the cpu surface it %s. Its "
                   "entry (the runtime of plain loops pasted before it, kevo_starter_rt.h, "
                   "left out here):\n\n```c\n%s```\n",
                   st.what, st.entry);
  kv_starter_release(&st);
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/README.md", dir);
  char *old = NULL;
  size_t n = 0;
  int rc = kv_read_file(p, KV_STARTER_MAX_OUTPUT, &old, &n, err, errlen);
  if (rc == 0 && b.data) {
    struct kv_buf all;
    kv_buf_init(&all, 2 * (size_t)KV_STARTER_MAX_OUTPUT);
    kv_buf_append(&all, old, n);
    kv_buf_append(&all, b.data, b.len);
    rc = kv_write_file(p, all.data, all.len, err, errlen);
    kv_buf_release(&all);
  }
  free(old);
  kv_buf_release(&b);
  return rc;
}
