/* The executors' configuration file (see exec.h): outside input, every field
 * checked before use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/exec.h"
#include "kevo/util.h"

void kv_exec_config_default(struct kv_exec_config *c) {
  memset(c, 0, sizeof *c);
  c->max_tries = 3;
  c->drop_after = 3;
  c->job_timeout_s = 1800;
  c->start_timeout_s = 120;
}

/* Characters allowed in a host, a partition, a GRES or a time: none a shell
 * or ssh would read as anything but a word, and no leading '-'. */
static int word_ok(const char *s, const char *extra) {
  if (!s[0] || s[0] == '-')
    return 0;
  for (const char *p = s; *p; p++) {
    char ch = *p;
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '.' || ch == '_' || ch == '-' || strchr(extra, ch)))
      return 0;
  }
  return 1;
}

/* A path for kevo on the other side: absolute or a bare name, no spaces or
 * shell characters (it is quoted anyway). */
static int path_ok(const char *s) {
  return word_ok(s, "/+");
}

static int env_name_ok(const char *n) {
  if (strncmp(n, "KEVO_", 5) || !n[5] || strstr(n, "KEY") || strstr(n, "TOKEN") ||
      strstr(n, "SECRET"))
    return 0;
  for (const char *p = n; *p; p++)
    if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
      return 0;
  return 1;
}

static int copy_str(json_t *v, char *out, size_t cap, const char *path, const char *field,
                    char *err, size_t errlen) {
  const char *s = json_string_value(v);
  if (!s || strlen(s) >= cap)
    return kv_error(err, errlen, "%s: %s must be a string of at most %zu bytes", path, field,
                    cap - 1);
  snprintf(out, cap, "%s", s);
  return 0;
}

static int take_env(json_t *e, struct kv_exec_env *env, int *n, const char *path, const char *field,
                    char *err, size_t errlen) {
  if (!json_is_object(e))
    return kv_error(err, errlen, "%s: %s must be an object of KEVO_* variables", path, field);
  const char *k;
  json_t *v;
  json_object_foreach(e, k, v) {
    if (*n >= KV_EXEC_ENV_MAX)
      return kv_error(err, errlen, "%s: %s: at most %d variables", path, field, KV_EXEC_ENV_MAX);
    if (strlen(k) >= sizeof env->name || !env_name_ok(k))
      return kv_error(err, errlen,
                      "%s: %s.%s: only KEVO_* variables (never keys, tokens or secrets) may be "
                      "given to a gate server",
                      path, field, k);
    struct kv_exec_env *x = &env[*n];
    snprintf(x->name, sizeof x->name, "%s", k);
    char f[160];
    snprintf(f, sizeof f, "%s.%s", field, k);
    if (copy_str(v, x->value, sizeof x->value, path, f, err, errlen) < 0)
      return -1;
    for (const char *p = x->value; *p; p++)
      if ((unsigned char)*p < 0x20 || *p == '\'')
        return kv_error(err, errlen, "%s: %s: no control characters or quotes", path, f);
    (*n)++;
  }
  return 0;
}

static int take_args(json_t *a, char (*args)[256], int *n, const char *path, const char *field,
                     char *err, size_t errlen) {
  if (!json_is_array(a) || json_array_size(a) > KV_EXEC_ARGS_MAX)
    return kv_error(err, errlen, "%s: %s must be an array of at most %d strings", path, field,
                    KV_EXEC_ARGS_MAX);
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    char f[96];
    snprintf(f, sizeof f, "%s[%zu]", field, i);
    if (copy_str(v, args[i], 256, path, f, err, errlen) < 0)
      return -1;
    if (!args[i][0])
      return kv_error(err, errlen, "%s: %s is empty", path, f);
    *n = (int)i + 1;
  }
  return 0;
}

static int take_int(json_t *v, int lo, int hi, int *out, const char *path, const char *field,
                    char *err, size_t errlen) {
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return kv_error(err, errlen, "%s: %s must be a whole number from %d to %d", path, field, lo,
                    hi);
  *out = (int)json_integer_value(v);
  return 0;
}

static int take_secs(json_t *v, double *out, const char *path, const char *field, char *err,
                     size_t errlen) {
  if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 86400)
    return kv_error(err, errlen, "%s: %s must be a number of seconds in (0, 86400]", path, field);
  *out = json_number_value(v);
  return 0;
}

static int known_keys(json_t *o, const char *const *keys, const char *path, const char *where,
                      char *err, size_t errlen) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = 0;
    for (int i = 0; keys[i]; i++)
      ok |= !strcmp(keys[i], k);
    if (!ok) {
      char list[256] = "";
      size_t used = 0;
      for (int i = 0; keys[i] && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", keys[i]);
      return kv_error(err, errlen, "%s: %s\"%s\" is not a field kevo knows; the fields are %s",
                      path, where, k, list);
    }
  }
  (void)v;
  return 0;
}

static int parse_host(json_t *h, size_t i, struct kv_exec_host *x, const char *path, char *err,
                      size_t errlen) {
  char f[64];
  snprintf(f, sizeof f, "ssh.hosts[%zu]", i);
  x->servers = 1;
  snprintf(x->kevo, sizeof x->kevo, "kevo");
  json_t *name = h;
  if (json_is_object(h)) {
    static const char *const keys[] = {"host", "servers", "kevo", "env", NULL};
    char where[80];
    snprintf(where, sizeof where, "%s: ", f);
    if (known_keys(h, keys, path, where, err, errlen) < 0)
      return -1;
    name = json_object_get(h, "host");
    json_t *v;
    char g[96];
    if ((v = json_object_get(h, "servers"))) {
      snprintf(g, sizeof g, "%s.servers", f);
      if (take_int(v, 1, KV_EXEC_SERVERS_MAX, &x->servers, path, g, err, errlen) < 0)
        return -1;
    }
    if ((v = json_object_get(h, "kevo"))) {
      snprintf(g, sizeof g, "%s.kevo", f);
      if (copy_str(v, x->kevo, sizeof x->kevo, path, g, err, errlen) < 0)
        return -1;
      if (!path_ok(x->kevo))
        return kv_error(err, errlen,
                        "%s: %s: \"%s\" is not a plain path (letters, digits, / . _ - +); give "
                        "kevo's path on that host",
                        path, g, x->kevo);
    }
    if ((v = json_object_get(h, "env"))) {
      snprintf(g, sizeof g, "%s.env", f);
      if (take_env(v, x->env, &x->nenv, path, g, err, errlen) < 0)
        return -1;
    }
  }
  char g[96];
  snprintf(g, sizeof g, "%s%s", f, json_is_object(h) ? ".host" : "");
  if (copy_str(name, x->host, sizeof x->host, path, g, err, errlen) < 0)
    return -1;
  if (!word_ok(x->host, "@:[]"))
    return kv_error(err, errlen,
                    "%s: %s: \"%s\" is not a host name (letters, digits, . _ - @ : [ ], not "
                    "starting with '-')",
                    path, g, x->host);
  return 0;
}

int kv_exec_config_parse(const char *text, size_t len, const char *path, struct kv_exec_config *c,
                         char *err, size_t errlen) {
  kv_exec_config_default(c);
  if (!path)
    path = "executor configuration";
  snprintf(c->path, sizeof c->path, "%s", path);
  if (len > KV_EXEC_CONFIG_MAX)
    return kv_error(err, errlen, "%s: larger than %d bytes", path, KV_EXEC_CONFIG_MAX);
  json_error_t je;
  json_t *j = json_loadb(text ? text : "", len, JSON_REJECT_DUPLICATES, &je);
  if (!json_is_object(j)) {
    int rc = j ? kv_error(err, errlen, "%s: must be a JSON object", path)
               : kv_error(err, errlen, "%s:%d: %s", path, je.line, je.text);
    json_decref(j);
    return rc;
  }
  int rc = -1;
  static const char *const top[] = {"ssh",           "slurm",           "max_tries", "drop_after",
                                    "job_timeout_s", "start_timeout_s", "comment",   NULL};
  if (known_keys(j, top, path, "", err, errlen) < 0)
    goto out;
  json_t *v;
  if ((v = json_object_get(j, "max_tries")) &&
      take_int(v, 1, 100, &c->max_tries, path, "max_tries", err, errlen) < 0)
    goto out;
  if ((v = json_object_get(j, "drop_after")) &&
      take_int(v, 1, 1000, &c->drop_after, path, "drop_after", err, errlen) < 0)
    goto out;
  if ((v = json_object_get(j, "job_timeout_s")) &&
      take_secs(v, &c->job_timeout_s, path, "job_timeout_s", err, errlen) < 0)
    goto out;
  if ((v = json_object_get(j, "start_timeout_s")) &&
      take_secs(v, &c->start_timeout_s, path, "start_timeout_s", err, errlen) < 0)
    goto out;
  json_t *ssh = json_object_get(j, "ssh");
  if (ssh) {
    static const char *const keys[] = {"hosts", "options", NULL};
    if (!json_is_object(ssh)) {
      kv_error(err, errlen, "%s: ssh must be an object: {\"hosts\": [\"gpu1\", ...]}", path);
      goto out;
    }
    if (known_keys(ssh, keys, path, "ssh: ", err, errlen) < 0)
      goto out;
    json_t *hosts = json_object_get(ssh, "hosts");
    if (hosts && (!json_is_array(hosts) || json_array_size(hosts) > KV_EXEC_HOSTS_MAX)) {
      kv_error(err, errlen, "%s: ssh.hosts must be an array of at most %d hosts", path,
               KV_EXEC_HOSTS_MAX);
      goto out;
    }
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h) {
      if (parse_host(h, i, &c->hosts[i], path, err, errlen) < 0)
        goto out;
      c->nhosts = (int)i + 1;
    }
    if ((v = json_object_get(ssh, "options")) &&
        take_args(v, c->ssh_args, &c->nssh_args, path, "ssh.options", err, errlen) < 0)
      goto out;
  }
  json_t *sl = json_object_get(j, "slurm");
  if (sl) {
    static const char *const keys[] = {"partition", "gres", "time", "servers",
                                       "kevo",      "srun", "env",  NULL};
    if (!json_is_object(sl)) {
      kv_error(err, errlen, "%s: slurm must be an object: {\"partition\": \"gpu\", ...}", path);
      goto out;
    }
    if (known_keys(sl, keys, path, "slurm: ", err, errlen) < 0)
      goto out;
    struct {
      const char *key;
      char *dst;
      size_t cap;
      const char *extra;
    } words[] = {{"partition", c->partition, sizeof c->partition, ","},
                 {"gres", c->gres, sizeof c->gres, ":,"},
                 {"time", c->time_limit, sizeof c->time_limit, ":"}};
    for (size_t k = 0; k < KV_ARRAY_LEN(words); k++) {
      char f[64];
      snprintf(f, sizeof f, "slurm.%s", words[k].key);
      if (!(v = json_object_get(sl, words[k].key)))
        continue;
      if (copy_str(v, words[k].dst, words[k].cap, path, f, err, errlen) < 0)
        goto out;
      if (!word_ok(words[k].dst, words[k].extra)) {
        kv_error(err, errlen,
                 "%s: %s: \"%s\" is not a Slurm %s (letters, digits, . _ - %s, not starting "
                 "with '-')",
                 path, f, words[k].dst, words[k].key, words[k].extra);
        goto out;
      }
    }
    if ((v = json_object_get(sl, "servers")) &&
        take_int(v, 1, KV_EXEC_SERVERS_MAX, &c->slurm_servers, path, "slurm.servers", err, errlen) <
            0)
      goto out;
    if ((v = json_object_get(sl, "kevo"))) {
      if (copy_str(v, c->slurm_kevo, sizeof c->slurm_kevo, path, "slurm.kevo", err, errlen) < 0)
        goto out;
      if (!path_ok(c->slurm_kevo)) {
        kv_error(err, errlen,
                 "%s: slurm.kevo: \"%s\" is not a plain path (letters, digits, / . _ - +)", path,
                 c->slurm_kevo);
        goto out;
      }
    }
    if ((v = json_object_get(sl, "srun")) &&
        take_args(v, c->srun_args, &c->nsrun_args, path, "slurm.srun", err, errlen) < 0)
      goto out;
    if ((v = json_object_get(sl, "env")) &&
        take_env(v, c->slurm_env, &c->nslurm_env, path, "slurm.env", err, errlen) < 0)
      goto out;
  }
  rc = 0;
out:
  json_decref(j);
  return rc;
}

int kv_exec_config_load(const char *path, struct kv_exec_config *c, char *err, size_t errlen) {
  char *text;
  size_t len;
  if (kv_read_file(path, KV_EXEC_CONFIG_MAX, &text, &len, err, errlen) < 0)
    return -1;
  int rc = kv_exec_config_parse(text, len, path, c, err, errlen);
  free(text);
  return rc;
}
