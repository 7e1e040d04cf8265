/* Generated text: the entry's prototype (force-included into candidates) and
 * the call shim that turns an array of argument pointers into a typed call. */
#include "task_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct wbuf {
  char *out;
  size_t cap;
  size_t len;
  int overflow;
};

static void put(struct wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct wbuf *w, const char *fmt, ...) {
  va_list ap;
  if (w->overflow)
    return;
  size_t room = w->len < w->cap ? w->cap - w->len : 0;
  va_start(ap, fmt);
  int n = vsnprintf(room ? w->out + w->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= room) {
    w->overflow = 1;
    if (w->cap)
      w->out[w->len < w->cap ? w->len : w->cap - 1] = '\0';
    return;
  }
  w->len += (size_t)n;
}

static int finish(struct wbuf *w) {
  if (w->overflow || w->len > (size_t)INT32_MAX)
    return -1;
  return (int)w->len;
}

static void put_decl(struct wbuf *w, const struct kv_task *t, enum kv_lang lang) {
  put(w, "%svoid %s(", lang == KV_LANG_CUDA ? "extern \"C\" " : "", t->entry);
  for (int i = 0; i < t->nparams; i++) {
    const struct kv_param *p = &t->params[i];
    const char *ct = kv_dtype_ctype(p->dtype, lang);
    const char *sep = i ? ", " : "";
    switch (p->role) {
    case KV_ROLE_IN:
      put(w, "%sconst %s *%s", sep, ct, p->name);
      break;
    case KV_ROLE_OUT:
    case KV_ROLE_INOUT:
      put(w, "%s%s *%s", sep, ct, p->name);
      break;
    case KV_ROLE_SIZE:
      put(w, "%sint %s", sep, p->name);
      break;
    case KV_ROLE_SCALAR:
      put(w, "%s%s %s", sep, ct, p->name);
      break;
    }
  }
  if (lang == KV_LANG_CUDA)
    put(w, "%scudaStream_t stream", t->nparams ? ", " : "");
  else if (t->nparams == 0)
    put(w, "void");
  put(w, ");\n");
}

/* The table of a packed param (kevo import's weights): each tensor's offset
 * in elements and its shape. An offset is a number where every tensor before
 * it has a fixed shape, else an expression over the size names. */
static void put_pack(struct wbuf *w, const struct kv_param *p) {
  /* One comment per line: a reader that drops comment lines drops it all. */
  put(w,
      "/* %s packs %d tensors of the module (named_parameters() then named_buffers()), */\n"
      "/* each row-major, back to back, in this order; offset: elements from %s[0] */\n",
      p->name, p->npack, p->name);
  struct kv_sumexpr off = {0};
  char at[KVT_EXPR_MAX + 1];
  for (int k = 0; k < p->npack; k++) {
    const struct kv_pack *m = &p->pack[k];
    if (kv_sumexpr_format(&off, at, sizeof at) < 0) {
      w->overflow = 1; /* an offset kevo cannot write in full: no table rather than a wrong one */
      return;
    }
    put(w, "/*   %s  %s [", at, m->name);
    for (int d = 0; d < m->ndim; d++)
      put(w, "%s%s", d ? "][" : "", m->shape[d]);
    put(w, "] */\n");
    kv_sumexpr_add(&off, m->shape, m->ndim);
  }
}

static void put_header(struct wbuf *w, const struct kv_task *t, enum kv_lang lang) {
  put(w, "/* kevo: the entry of task '%s' (generated; do not edit) */\n", t->name ? t->name : "");
  put(w, "#ifndef KEVO_ENTRY_PROTOTYPE\n#define KEVO_ENTRY_PROTOTYPE\n");
  if (lang == KV_LANG_CUDA)
    put(w, "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
  put(w, "#include <stddef.h>\n#include <stdint.h>\n");
  for (int i = 0; i < t->nparams; i++)
    if (t->params[i].npack)
      put_pack(w, &t->params[i]);
  put_decl(w, t, lang);
  put(w, "#endif\n");
}

/* The torch surface's contract (docs/torch-surface.md): a ModelNew built as
 * Model is, Model's parameter names kept (kevo binds the task's weights to
 * them), forward's inputs and outputs as Model's; the params listed. */
static void put_python(struct wbuf *w, const struct kv_task *t) {
  put(w, "# kevo: what a candidate of task '%s' defines on the torch surface (generated)\n",
      t->name ? t->name : "");
  put(w, "class ModelNew(torch.nn.Module):  # built as Model: ModelNew(*get_init_inputs())\n");
  put(w, "    # Model's parameter and buffer names and shapes (kevo binds the task's weights)\n");
  put(w, "    def forward(self, ...):  # Model.forward's inputs, its outputs\n");
  for (int i = 0; i < t->nparams; i++) {
    const struct kv_param *p = &t->params[i];
    put(w, "    # %s: %s %s", p->name, kv_role_name(p->role), kv_dtype_name(p->dtype));
    for (int d = 0; d < p->ndim; d++)
      put(w, "%s%s", d ? ", " : " [", p->shape[d]);
    put(w, "%s\n", p->ndim ? "]" : "");
  }
}

int kv_task_prototype(const struct kv_task *t, enum kv_lang lang, char *out, size_t cap) {
  struct wbuf w = {out, out ? cap : 0, 0, 0};
  if (!t || !t->entry || !out || cap == 0)
    return -1;
  out[0] = '\0';
  if (lang == KV_LANG_PYTHON) {
    put_python(&w, t);
    return finish(&w);
  }
  put_header(&w, t, lang);
  return finish(&w);
}

int kv_task_shim(const struct kv_task *t, enum kv_lang lang, char *out, size_t cap) {
  struct wbuf w = {out, out ? cap : 0, 0, 0};
  if (!t || !t->entry || !out || cap == 0)
    return -1;
  out[0] = '\0';
  int cuda = lang == KV_LANG_CUDA;
  const char *ext = cuda ? "extern \"C\" " : "";
  const char *sparam = cuda ? ", cudaStream_t stream" : "";
  put_header(&w, t, lang);
  put(&w, "\n/* kevo: call shim; args[i] points at argument i */\n");
  put(&w, "%s__attribute__((visibility(\"default\"))) void kevo_shim_call(void *const *args%s);\n",
      ext, sparam);
  put(&w, "%svoid kevo_shim_call(void *const *args%s) {\n", ext, sparam);
  if (t->nparams == 0)
    put(&w, "  (void)args;\n");
  put(&w, "  %s(", t->entry);
  for (int i = 0; i < t->nparams; i++) {
    const struct kv_param *p = &t->params[i];
    const char *ct = kv_dtype_ctype(p->dtype, lang);
    const char *sep = i ? ",\n    " : "\n    ";
    switch (p->role) {
    case KV_ROLE_IN:
      put(&w, "%s(const %s *)args[%d]", sep, ct, i);
      break;
    case KV_ROLE_OUT:
    case KV_ROLE_INOUT:
      put(&w, "%s(%s *)args[%d]", sep, ct, i);
      break;
    case KV_ROLE_SIZE:
      put(&w, "%s*(const int *)args[%d]", sep, i);
      break;
    case KV_ROLE_SCALAR:
      put(&w, "%s*(const %s *)args[%d]", sep, ct, i);
      break;
    }
  }
  if (cuda)
    put(&w, "%sstream", t->nparams ? ",\n    " : "");
  put(&w, ");\n}\n");
  return finish(&w);
}

/* gen into a buffer that doubles from 16 KiB until the text fits, up to
 * KV_TASK_PROTO_MAX. */
static char *grown(const struct kv_task *t, enum kv_lang lang,
                   int (*gen)(const struct kv_task *, enum kv_lang, char *, size_t)) {
  for (size_t cap = 16u << 10; cap <= KV_TASK_PROTO_MAX; cap *= 2) {
    char *out = malloc(cap);
    if (!out)
      return NULL;
    if (gen(t, lang, out, cap) >= 0)
      return out;
    free(out);
    if (!t || !t->entry)
      return NULL;
  }
  return NULL;
}

char *kv_task_prototype_alloc(const struct kv_task *t, enum kv_lang lang) {
  return grown(t, lang, kv_task_prototype);
}

char *kv_task_shim_alloc(const struct kv_task *t, enum kv_lang lang) {
  return grown(t, lang, kv_task_shim);
}
