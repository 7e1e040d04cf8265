/* Model configuration: JSON layers (user, project, --config) merged field by
 * field, then resolved against command-line flags into one kv_llm_model.
 * Every field is checked when its layer is loaded, so a mistake is reported
 * with the file and the field that hold it. Keys never live here: a config
 * names the environment variable that holds one. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "kevo/util.h"

enum { CONFIG_MAX_BYTES = 1 << 20 };

struct kv_llm_config {
  json_t *models;  /* name -> {field: value}, merged */
  json_t *origins; /* name -> the file that last touched the entry */
  json_t *budget;  /* {"usd", "tokens", "calls"}, merged */
  char *default_name;
  char *default_origin;
};

/* ---- the fields of a model entry ---------------------------------------- */

enum kind { K_STR, K_URL, K_PROVIDER, K_ENV, K_TOKFIELD, K_NUM, K_INT, K_SIZE };

struct field {
  const char *name; /* in the JSON */
  enum kind kind;
  size_t off, cap; /* in struct kv_llm_model; cap for strings */
  double lo, hi;   /* for numbers */
  const char *what;
};

#define MEMBER(m) offsetof(struct kv_llm_model, m), sizeof(((struct kv_llm_model *)0)->m)
static const struct field fields[] = {
    {"provider", K_PROVIDER, MEMBER(provider), 0, 0, "openai, anthropic or replay"},
    {"replay_of", K_PROVIDER, MEMBER(replay_of), 0, 0, "openai or anthropic"},
    {"base_url", K_URL, MEMBER(base_url), 0, 0, "an http:// or https:// URL"},
    {"model", K_STR, MEMBER(model), 0, 0, "the model id the API expects"},
    {"api_key_env", K_ENV, MEMBER(api_key_env), 0, 0,
     "the NAME of an environment variable (\"\" for none)"},
    {"anthropic_version", K_STR, MEMBER(anthropic_version), 0, 0, "e.g. \"2023-06-01\""},
    {"max_tokens_field", K_TOKFIELD, MEMBER(max_tokens_field), 0, 0,
     "\"max_tokens\" or \"max_completion_tokens\""},
    {"input_usd_per_mtok", K_NUM, MEMBER(input_usd_per_mtok), 0, 1e6, "USD per million tokens"},
    {"output_usd_per_mtok", K_NUM, MEMBER(output_usd_per_mtok), 0, 1e6, "USD per million tokens"},
    {"concurrency", K_INT, MEMBER(concurrency), 1, 256, "requests in flight"},
    {"timeout", K_NUM, MEMBER(timeout_s), 0.001, 86400, "seconds"},
    {"connect_timeout", K_NUM, MEMBER(connect_timeout_s), 0.001, 3600, "seconds"},
    {"max_attempts", K_INT, MEMBER(max_attempts), 1, 20, "attempts"},
    {"backoff", K_NUM, MEMBER(backoff_s), 0, 3600, "seconds"},
    {"backoff_max", K_NUM, MEMBER(backoff_max_s), 0, 3600, "seconds"},
    {"retry_after_max", K_NUM, MEMBER(retry_after_max_s), 0, 3600, "seconds"},
    {"max_response_bytes", K_SIZE, MEMBER(max_response_bytes), 1024, 1073741824.0, "bytes"},
    {"max_tokens", K_INT, MEMBER(max_tokens), 1, 10000000, "tokens"},
    {"temperature", K_NUM, MEMBER(temperature), 0, 2, "a number"},
    {"top_p", K_NUM, MEMBER(top_p), 0, 1, "a number"},
};
#undef MEMBER

static const struct field *field_find(const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(fields); i++)
    if (!strcmp(fields[i].name, name))
      return &fields[i];
  return NULL;
}

static int env_name_ok(const char *s) {
  if (!*s)
    return 1;
  if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

/* What in a base URL is a credential kevo would store with every call and
 * run (llm_calls.base_url, the run's configuration, the report): a
 * user:password@ part, or a query parameter named like a key. NULL when
 * none. */
static const char *url_credential(const char *url) {
  const char *auth = strstr(url, "://");
  auth = auth ? auth + 3 : url;
  size_t alen = strcspn(auth, "/?#");
  if (memchr(auth, '@', alen))
    return "a user:password@ part";
  static const char *const names[] = {"key",   "api_key",      "apikey", "api-key",
                                      "token", "access_token", "secret", "password",
                                      "sig",   "signature"};
  const char *q = strchr(auth, '?');
  while (q) {
    q++;
    size_t n = strcspn(q, "=&#");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (n == strlen(names[i]) && !strncasecmp(q, names[i], n))
        return "a query parameter that carries a key";
    q = strchr(q, '&');
  }
  return NULL;
}

/* Is the URL's host this machine (a key may travel over plain http there)? */
static int url_loopback(const char *url) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
  if ((n == 9 && !strncmp(h, "localhost", 9)) || (n == 5 && !strncmp(h, "[::1]", 5)))
    return 1;
  if (n < 7 || strncmp(h, "127.", 4))
    return 0;
  for (size_t i = 4; i < n; i++) /* 127.a.b.c, digits and dots only */
    if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9')))
      return 0;
  return 1;
}

/* Checks one value for a field; `where` names it ("FILE: models.NAME.FIELD"). */
static int check_value(const struct field *f, json_t *v, const char *where, char *err,
                       size_t errlen) {
  switch (f->kind) {
  case K_STR:
  case K_URL:
  case K_PROVIDER:
  case K_ENV:
  case K_TOKFIELD: {
    if (!json_is_string(v))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: must be a string (%s)", where, f->what);
    const char *s = json_string_value(v);
    if (strlen(s) >= f->cap)
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: longer than %zu bytes; shorten it", where,
                      f->cap - 1);
    if (f->kind == K_URL && strncmp(s, "http://", 7) && strncmp(s, "https://", 8))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: '%s' is not %s", where, s, f->what);
    if (f->kind == K_URL && url_credential(s))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: the URL carries a credential (%s), which kevo would store with every "
                      "call and run; remove it and put the key in an environment variable named "
                      "by api_key_env",
                      where, url_credential(s));
    if (f->kind == K_PROVIDER) {
      const struct llm_provider *p = llm_provider_find(s);
      int replay_of = !strcmp(f->name, "replay_of");
      if (!p || (replay_of && !p->network))
        return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: '%s' is not a provider; use %s", where, s,
                        f->what);
    }
    if (f->kind == K_ENV && !env_name_ok(s))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: '%.12s...' is not a variable name; give the NAME of the environment "
                      "variable that holds the key (e.g. OPENAI_API_KEY), never the key",
                      where, s);
    if (f->kind == K_TOKFIELD && strcmp(s, "max_tokens") && strcmp(s, "max_completion_tokens"))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: '%s' is not %s", where, s, f->what);
    return 0;
  }
  case K_NUM:
  case K_INT:
  case K_SIZE: {
    if (!json_is_number(v) || ((f->kind == K_INT || f->kind == K_SIZE) && !json_is_integer(v)))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: must be %s (%s)", where,
                      f->kind == K_NUM ? "a number" : "an integer", f->what);
    double d = json_number_value(v);
    if (!(d >= f->lo && d <= f->hi))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: %g is out of range; use %g to %g (%s)",
                      where, d, f->lo, f->hi, f->what);
    return 0;
  }
  }
  return 0;
}

static void apply_value(struct kv_llm_model *m, const struct field *f, json_t *v) {
  char *p = (char *)m + f->off;
  switch (f->kind) {
  case K_STR:
  case K_URL:
  case K_PROVIDER:
  case K_ENV:
  case K_TOKFIELD:
    snprintf(p, f->cap, "%s", json_string_value(v));
    break;
  case K_NUM:
    *(double *)(void *)p = json_number_value(v);
    break;
  case K_INT:
    *(int *)(void *)p = (int)json_integer_value(v);
    break;
  case K_SIZE:
    *(size_t *)(void *)p = (size_t)json_integer_value(v);
    break;
  }
}

/* ---- loading ------------------------------------------------------------ */

struct kv_llm_config *kv_llm_config_new(void) {
  struct kv_llm_config *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->models = json_object();
  c->origins = json_object();
  c->budget = json_object();
  if (!c->models || !c->origins || !c->budget) {
    kv_llm_config_free(c);
    return NULL;
  }
  return c;
}

void kv_llm_config_free(struct kv_llm_config *c) {
  if (!c)
    return;
  json_decref(c->models);
  json_decref(c->origins);
  json_decref(c->budget);
  free(c->default_name);
  free(c->default_origin);
  free(c);
}

static int check_model(const char *origin, const char *name, json_t *entry, char *err,
                       size_t errlen) {
  char where[600];
  if (!json_is_object(entry))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "%s: models.%s: must be an object of fields (provider, model, base_url, ...)",
                    origin, name);
  const char *k;
  json_t *v;
  json_object_foreach(entry, k, v) {
    snprintf(where, sizeof where, "%s: models.%s.%s", origin, name, k);
    const struct field *f = field_find(k);
    if (!f) {
      if (strstr(k, "key") && strcmp(k, "api_key_env"))
        return llm_fail(KV_LLM_EUSAGE, err, errlen,
                        "%s: kevo never reads keys from files; remove it, put the key in an "
                        "environment variable and name that variable with \"api_key_env\"",
                        where);
      char known[900] = "";
      for (size_t i = 0; i < KV_ARRAY_LEN(fields); i++) {
        size_t n = strlen(known);
        snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", fields[i].name);
      }
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: unknown field; known fields: %s", where,
                      known);
    }
    int rc = check_value(f, v, where, err, errlen);
    if (rc < 0)
      return rc;
  }
  return 0;
}

static int check_budget_obj(const char *origin, json_t *b, char *err, size_t errlen) {
  if (!json_is_object(b))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "%s: budget: must be an object like {\"usd\": 5, \"tokens\": 2000000, "
                    "\"calls\": 500}",
                    origin);
  const char *k;
  json_t *v;
  json_object_foreach(b, k, v) {
    int is_usd = !strcmp(k, "usd");
    if (!is_usd && strcmp(k, "tokens") && strcmp(k, "calls"))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: budget.%s: unknown field; known fields: usd, tokens, calls", origin, k);
    if (is_usd ? !json_is_number(v) : !json_is_integer(v))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: budget.%s: must be %s (0: no cap)", origin,
                      k, is_usd ? "a number of US dollars" : "an integer");
    if (json_number_value(v) < 0)
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: budget.%s: must not be negative (0: no cap)",
                      origin, k);
  }
  return 0;
}

int kv_llm_config_add_text(struct kv_llm_config *c, const char *origin, const char *text, char *err,
                           size_t errlen) {
  if (!c || !origin || !text)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "config: NULL argument (a bug in the caller)");
  json_error_t je;
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "%s: not valid JSON (line %d, column %d: %s)",
                    origin, je.line, je.column, je.text);
  int rc = 0;
  if (!json_is_object(root)) {
    rc = llm_fail(KV_LLM_EUSAGE, err, errlen,
                  "%s: must be a JSON object with \"models\" (and optionally \"default\", "
                  "\"budget\")",
                  origin);
    goto out;
  }
  /* Check everything first: a bad layer changes nothing. */
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    if (!strcmp(k, "default")) {
      if (!json_is_string(v)) {
        rc = llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: default: must be the name of an entry in models", origin);
        goto out;
      }
    } else if (!strcmp(k, "models")) {
      if (!json_is_object(v)) {
        rc = llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: models: must be an object mapping names to model entries", origin);
        goto out;
      }
      const char *name;
      json_t *entry;
      json_object_foreach(v, name, entry) {
        if (!*name || strlen(name) >= sizeof(((struct kv_llm_model *)0)->name)) {
          rc = llm_fail(KV_LLM_EUSAGE, err, errlen,
                        "%s: models: entry name '%.40s' must be 1 to 63 bytes", origin, name);
          goto out;
        }
        if ((rc = check_model(origin, name, entry, err, errlen)) < 0)
          goto out;
      }
    } else if (!strcmp(k, "budget")) {
      if ((rc = check_budget_obj(origin, v, err, errlen)) < 0)
        goto out;
    } else {
      rc = llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "%s: %s: unknown field; known fields: default, models, budget", origin, k);
      goto out;
    }
  }
  /* Merge. */
  json_object_foreach(root, k, v) {
    if (!strcmp(k, "default")) {
      char *d = strdup(json_string_value(v)), *o = strdup(origin);
      if (!d || !o) {
        free(d);
        free(o);
        rc = llm_fail(KV_LLM_ENOMEM, err, errlen, "config: out of memory");
        goto out;
      }
      free(c->default_name);
      free(c->default_origin);
      c->default_name = d;
      c->default_origin = o;
    } else if (!strcmp(k, "models")) {
      const char *name;
      json_t *entry;
      json_object_foreach(v, name, entry) {
        json_t *have = json_object_get(c->models, name);
        if (!have) {
          have = json_object();
          json_object_set_new(c->models, name, have);
        }
        json_object_update(have, entry);
        json_object_set_new(c->origins, name, json_string(origin));
      }
    } else if (!strcmp(k, "budget")) {
      json_object_update(c->budget, v);
    }
  }
out:
  json_decref(root);
  return rc;
}

int kv_llm_config_user_path(char *out, size_t cap) {
  const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
  int n;
  if (x && *x)
    n = snprintf(out, cap, "%s/kevo/config.json", x);
  else if (h && *h)
    n = snprintf(out, cap, "%s/.config/kevo/config.json", h);
  else
    return -1;
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int add_file(struct kv_llm_config *c, const char *path, int must_exist, char *err,
                    size_t errlen) {
  if (!must_exist && !kv_path_exists(path))
    return 0;
  char *text = NULL;
  char rerr[600];
  if (kv_read_file(path, CONFIG_MAX_BYTES, &text, NULL, rerr, sizeof rerr) < 0)
    return llm_fail(KV_LLM_EUSAGE, err, errlen, "config: %s", rerr);
  int rc = kv_llm_config_add_text(c, path, text, err, errlen);
  free(text);
  return rc;
}

int kv_llm_config_load(const char *user_path, const char *project_path, const char *explicit_path,
                       struct kv_llm_config **out, char *err, size_t errlen) {
  *out = NULL;
  struct kv_llm_config *c = kv_llm_config_new();
  if (!c)
    return llm_fail(KV_LLM_ENOMEM, err, errlen, "config: out of memory");
  char user[4096];
  if (!user_path && kv_llm_config_user_path(user, sizeof user) == 0)
    user_path = user;
  int rc = 0;
  if (user_path && (rc = add_file(c, user_path, 0, err, errlen)) < 0)
    goto fail;
  if ((rc = add_file(c, project_path ? project_path : "kevo.json", 0, err, errlen)) < 0)
    goto fail;
  if (explicit_path && (rc = add_file(c, explicit_path, 1, err, errlen)) < 0)
    goto fail;
  *out = c;
  return 0;
fail:
  kv_llm_config_free(c);
  return rc;
}

/* ---- resolving ---------------------------------------------------------- */

void kv_llm_flags_init(struct kv_llm_flags *f) {
  memset(f, 0, sizeof *f);
  f->timeout_s = -1;
  f->temperature = -1;
  f->max_usd = -1;
}

static int apply_entry(struct kv_llm_model *m, json_t *entry) {
  const char *k;
  json_t *v;
  json_object_foreach(entry, k, v) {
    const struct field *f = field_find(k);
    if (f && strcmp(k, "provider"))
      apply_value(m, f, v);
  }
  return 0;
}

int kv_llm_config_resolve(const struct kv_llm_config *c, const struct kv_llm_flags *f,
                          struct kv_llm_model *m, struct kv_llm_budget *b, char *err,
                          size_t errlen) {
  static const struct kv_llm_flags none = {.timeout_s = -1, .temperature = -1, .max_usd = -1};
  if (!f)
    f = &none;
  if (f->provider && !llm_provider_find(f->provider))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "--provider %s: not a provider; use openai, anthropic or replay", f->provider);

  /* Which entry. */
  json_t *entry = NULL;
  const char *name = NULL, *origin = NULL;
  int named = 0;
  if (c && f->model && json_object_get(c->models, f->model)) {
    name = f->model;
    named = 1;
  } else if (c && c->default_name) {
    if (!json_object_get(c->models, c->default_name))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "%s: default: '%s' is not an entry in models; add it or fix the name",
                      c->default_origin, c->default_name);
    name = c->default_name;
  }
  if (name) {
    entry = json_object_get(c->models, name);
    origin = json_string_value(json_object_get(c->origins, name));
  }
  json_t *ep = entry ? json_object_get(entry, "provider") : NULL;
  const char *entry_provider = json_is_string(ep) ? json_string_value(ep) : "openai";
  if (entry && f->provider && strcmp(f->provider, entry_provider) &&
      strcmp(f->provider, "replay")) {
    if (named)
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "--provider %s contradicts model '%s' (provider %s in %s); drop one of "
                      "them",
                      f->provider, name, entry_provider, origin ? origin : "the config");
    entry = NULL; /* the default entry is for another provider */
    name = NULL;
  }
  const char *provider = f->provider ? f->provider : entry ? entry_provider : "openai";
  int rc = kv_llm_model_defaults(m, provider, err, errlen);
  if (rc < 0)
    return rc;
  if (entry) {
    snprintf(m->name, sizeof m->name, "%s", name);
    apply_entry(m, entry);
    /* --provider replay over an entry replays what that entry recorded. */
    if (!strcmp(provider, "replay") && strcmp(entry_provider, "replay") &&
        !json_object_get(entry, "replay_of"))
      snprintf(m->replay_of, sizeof m->replay_of, "%s", entry_provider);
  }

  /* Flags. */
  if (f->base_url) {
    if (strncmp(f->base_url, "http://", 7) && strncmp(f->base_url, "https://", 8))
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "--base-url %s: not an http:// or https:// URL",
                      f->base_url);
    if (strlen(f->base_url) >= sizeof m->base_url)
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "--base-url: longer than %zu bytes",
                      sizeof m->base_url - 1);
    if (url_credential(f->base_url))
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "--base-url: the URL carries a credential (%s), which kevo would store "
                      "with every call and run; remove it and put the key in an environment "
                      "variable named by --api-key-env",
                      url_credential(f->base_url));
    snprintf(m->base_url, sizeof m->base_url, "%s", f->base_url);
  }
  if (f->model && !named) {
    if (strlen(f->model) >= sizeof m->model)
      return llm_fail(KV_LLM_EUSAGE, err, errlen, "--model: longer than %zu bytes",
                      sizeof m->model - 1);
    snprintf(m->model, sizeof m->model, "%s", f->model);
  }
  if (f->api_key_env) {
    if (!env_name_ok(f->api_key_env) || strlen(f->api_key_env) >= sizeof m->api_key_env)
      return llm_fail(KV_LLM_EUSAGE, err, errlen,
                      "--api-key-env: not a variable name; give the NAME of the environment "
                      "variable that holds the key, never the key");
    snprintf(m->api_key_env, sizeof m->api_key_env, "%s", f->api_key_env);
  }
  if (f->timeout_s > 0)
    m->timeout_s = f->timeout_s;
  if (f->max_tokens > 0)
    m->max_tokens = f->max_tokens;
  if (f->temperature >= 0)
    m->temperature = f->temperature;
  /* A key over plain http to another host crosses the network in clear. */
  const char *key = m->api_key_env[0] ? getenv(m->api_key_env) : NULL;
  if (key && *key && !strncmp(m->base_url, "http://", 7) && !url_loopback(m->base_url))
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "%s: the key in $%s would cross the network unencrypted; use an https:// "
                    "URL, or --api-key-env '' (api_key_env \"\") for a server that needs no key",
                    m->base_url, m->api_key_env);
  if (!m->model[0])
    return llm_fail(KV_LLM_EUSAGE, err, errlen,
                    "no model for provider %s: pass --model ID, or name one in a config file "
                    "(\"models\": {\"NAME\": {\"provider\": \"%s\", \"model\": \"ID\"}}, "
                    "\"default\": \"NAME\")",
                    m->provider, m->provider);

  if (b) {
    memset(b, 0, sizeof *b);
    if (c) {
      json_t *v;
      if ((v = json_object_get(c->budget, "usd")))
        b->max_usd = json_number_value(v);
      if ((v = json_object_get(c->budget, "tokens")))
        b->max_tokens = (int64_t)json_integer_value(v);
      if ((v = json_object_get(c->budget, "calls")))
        b->max_calls = (int64_t)json_integer_value(v);
    }
    if (f->max_usd >= 0)
      b->max_usd = f->max_usd;
  }
  return 0;
}
