/* Preconditions the model writes with a proposed step (dtypes, layout,
 * storage, pipeline, hardware, scope) and its feature contract (requires,
 * conflicts), each checked against the task, the architecture measured on
 * and the features observed in the simpler kernel. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/skills.h"
#include "kevo/util.h"

static int in_words(const char *tok, const char *const *words) {
  for (int i = 0; words[i]; i++)
    if (!strcmp(tok, words[i]))
      return 1;
  return 0;
}

/* Each token of list (comma or blank separated) through check(); the
 * normalized list ("a,b") into out. */
static int each_token(const char *field, const char *list, char *out, size_t cap,
                      int (*check)(const char *tok, const void *ctx, char *why, size_t n),
                      const void *ctx, char *err, size_t errlen) {
  char tmp[512], why[256];
  size_t o = 0;
  out[0] = 0;
  snprintf(tmp, sizeof tmp, "%s", list);
  for (char *save = NULL, *tok = strtok_r(tmp, ", \t", &save); tok;
       tok = strtok_r(NULL, ", \t", &save)) {
    if (check && check(tok, ctx, why, sizeof why) != 0)
      return kv_error(err, errlen, "%s: '%s' %s", field, tok, why);
    if (o + strlen(tok) + 2 < cap)
      o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "," : "", tok);
  }
  if (!o)
    return kv_error(err, errlen, "%s: empty; write at least one value", field);
  return 0;
}

static int check_dtype(const char *tok, const void *ctx, char *why, size_t n) {
  (void)ctx;
  for (int d = 0; d < KV_DTYPE_COUNT; d++)
    if (!strcmp(tok, kv_dtype_name((enum kv_dtype)d)))
      return 0;
  snprintf(why, n, "is not a dtype; use f32, f64, f16, bf16, i32, i64 or u8");
  return -1;
}

static const char *const layouts[] = {"row-major", "column-major", "contiguous",
                                      "strided",   "any",          NULL};
static const char *const storages[] = {"global", "shared",  "registers", "constant", "local",
                                       "host",   "texture", "any",       NULL};

static int check_word(const char *tok, const void *ctx, char *why, size_t n) {
  const char *const *w = ctx;
  if (in_words(tok, w))
    return 0;
  size_t o = (size_t)snprintf(why, n, "is not one of");
  for (int i = 0; w[i] && o < n; i++)
    o += (size_t)snprintf(why + o, n - o, " %s", w[i]);
  return -1;
}

static int check_ident(const char *tok, const void *ctx, char *why, size_t n) {
  (void)ctx;
  for (const char *p = tok; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr("_-.+*", *p)) {
      snprintf(why, n, "holds '%c'; use words (letters, digits, _ - .)", *p);
      return -1;
    }
  return 0;
}

static int check_hw(const char *tok, const void *ctx, char *why, size_t n) {
  (void)ctx;
  static const char *const fixed[] = {"any", "cpu", "gpu", "x86_64", "aarch64", NULL};
  int v;
  char plus[4] = "";
  if (in_words(tok, fixed) || (sscanf(tok, "sm_%d%1[+]", &v, plus) >= 1 && v >= 10 && v < 200))
    return 0;
  snprintf(why, n,
           "is not hardware kevo knows; use any, cpu, gpu, x86_64, aarch64, sm_NN or sm_NN+");
  return -1;
}

/* hw (normalized list) holds the architecture measured on. */
static int hw_covers(const char *hw, const char *arch) {
  char tmp[96];
  snprintf(tmp, sizeof tmp, "%s", hw);
  int gpu = !strncmp(arch, "sm_", 3), have = atoi(arch + (gpu ? 3 : 0));
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int v;
    if (!strcmp(tok, "any") || !strcmp(tok, arch) || (gpu && !strcmp(tok, "gpu")) ||
        (!gpu && !strcmp(tok, "cpu")))
      return 1;
    if (gpu && sscanf(tok, "sm_%d", &v) == 1 && tok[strlen(tok) - 1] == '+' && v <= have)
      return 1;
  }
  return 0;
}

static int list_has(const char *list, const char *w) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", list);
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (!strcmp(tok, w))
      return 1;
  return 0;
}

/* The task's buffer dtypes all among the claimed ones. */
static int dtypes_cover(const struct kv_task *t, const char *dt, char *err, size_t errlen) {
  for (int i = 0; i < t->nparams; i++) {
    if (t->params[i].role == KV_ROLE_SIZE || t->params[i].role == KV_ROLE_SCALAR)
      continue;
    const char *d = kv_dtype_name(t->params[i].dtype);
    if (!list_has(dt, d))
      return kv_error(err, errlen,
                      "Dtypes: %s leaves out %s, the dtype of %s this step was measured on; a "
                      "precondition must hold where its evidence was gathered",
                      dt, d, t->params[i].name);
  }
  return 0;
}

static int read_lists(const char *reply, const struct kv_task *t, const char *arch, int require_all,
                      struct kv_mech *m, char *err, size_t errlen) {
  char v[512];
  struct {
    const char *key;
    char *out;
    size_t cap;
    int (*check)(const char *, const void *, char *, size_t);
    const void *ctx;
  } f[] = {{"Dtypes", m->dtypes, sizeof m->dtypes, check_dtype, NULL},
           {"Layout", m->layout, sizeof m->layout, check_word, layouts},
           {"Storage", m->storage, sizeof m->storage, check_word, storages},
           {"Pipeline", m->pipeline, sizeof m->pipeline, check_ident, NULL},
           {"Hardware", m->hardware, sizeof m->hardware, check_hw, NULL},
           {"Scope", m->scope, sizeof m->scope, check_ident, NULL}};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    int got = skills_field(reply, f[i].key, v, sizeof v);
    if (got && !v[0] && f[i].out == m->scope)
      snprintf(v, sizeof v, "*"); /* "Scope: *": the field reader trims '*' as emphasis */
    if (!got || !v[0]) {
      if (require_all)
        return kv_error(err, errlen, "%s: missing; write a line '%s: ...' with the proposal",
                        f[i].key, f[i].key);
      continue;
    }
    if (each_token(f[i].key, v, f[i].out, f[i].cap, f[i].check, f[i].ctx, err, errlen) != 0)
      return -1;
  }
  if (m->dtypes[0] && dtypes_cover(t, m->dtypes, err, errlen) != 0)
    return -1;
  if (m->layout[0] && !list_has(m->layout, "row-major") && !list_has(m->layout, "contiguous") &&
      !list_has(m->layout, "any"))
    return kv_error(err, errlen,
                    "Layout: %s; this step was measured on row-major, contiguous buffers",
                    m->layout);
  if (m->hardware[0] && arch && arch[0] && !hw_covers(m->hardware, arch))
    return kv_error(err, errlen, "Hardware: %s leaves out %s, where this step was measured",
                    m->hardware, arch);
  if (m->scope[0] && !list_has(m->scope, "*") && !list_has(m->scope, t->name))
    return kv_error(err, errlen, "Scope: %s leaves out %s, the task this step was measured on",
                    m->scope, t->name);
  if (!m->scope[0])
    snprintf(m->scope, sizeof m->scope, "%s", t->name);
  return 0;
}

int kv_precond_read(const char *reply, const struct kv_task *t, const char *arch,
                    uint32_t simpler_features, int require_all, struct kv_mech *m,
                    uint32_t *requires, uint32_t *conflicts, char *err, size_t errlen) {
  *requires = *conflicts = 0;
  if (read_lists(reply, t, arch, require_all, m, err, errlen) != 0)
    return -1;
  char v[512], e[600], have[400];
  kv_features_format(simpler_features, have, sizeof have);
  if (skills_field(reply, "Requires", v, sizeof v) &&
      kv_features_parse(v, requires, e, sizeof e) != 0)
    return kv_error(err, errlen, "Requires: %s", e);
  if (skills_field(reply, "Conflicts", v, sizeof v) &&
      kv_features_parse(v, conflicts, e, sizeof e) != 0)
    return kv_error(err, errlen, "Conflicts: %s", e);
  for (int k = 0; k < KV_FEAT_N; k++) {
    if ((*requires >> k & 1u) && !(simpler_features >> k & 1u))
      return kv_error(err, errlen,
                      "Requires: %s, which the simpler kernel's code does not show (kevo observes "
                      "%s); a skill requires what the kernel it applies to already has",
                      kv_feature_name(k), have);
    if ((*conflicts >> k & 1u) && (simpler_features >> k & 1u))
      return kv_error(err, errlen,
                      "Conflicts: %s, which the simpler kernel's code shows; the step was "
                      "applied there, so it does not conflict with it",
                      kv_feature_name(k));
  }
  return 0;
}
