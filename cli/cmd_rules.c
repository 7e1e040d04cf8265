/* kevo rules list | show ID | export FILE | import FILE: the memory of
 * validity rules. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/rules.h"
#include "kevo/store.h"
#include "kevo/util.h"

#define RULES_FILE_MAX (16u << 20)

static int export_rules(const struct kv_rule_row *r, int n, const char *file) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:s,s:s,s:i}", "text", r[i].text, "origin",
                                       r[i].origin ? r[i].origin : "?", "count", r[i].count));
  json_t *top = json_pack("{s:i,s:o}", "kevo_rules", 1, "rules", a);
  int rc = json_dump_file(top, file, JSON_INDENT(2) | JSON_SORT_KEYS);
  json_decref(top);
  if (rc != 0)
    return cli_fail("%s: cannot write the rules", file);
  printf("exported %d rules to %s\n", n, file);
  return 0;
}

static int import_rules(struct kv_store *s, const char *file) {
  char err[1024];
  char *text;
  size_t len;
  if (kv_read_file(file, RULES_FILE_MAX, &text, &len, err, sizeof err) < 0)
    return cli_fail("%s", err);
  json_error_t je;
  json_t *top = json_loadb(text, len, 0, &je);
  free(text);
  json_t *a = json_object_get(top, "rules");
  if (!top || !json_is_array(a)) {
    json_decref(top);
    return cli_fail("%s: not a kevo rules file (want {\"kevo_rules\": 1, \"rules\": [...]}); %s",
                    file, top ? "no \"rules\" array" : je.text);
  }
  size_t i;
  json_t *r;
  int n = 0;
  json_array_foreach(a, i, r) {
    const char *t = json_string_value(json_object_get(r, "text"));
    json_int_t count = json_integer_value(json_object_get(r, "count"));
    if (!t || !*t || strlen(t) >= KV_RULE_MAX) {
      json_decref(top);
      return cli_fail("%s: rules[%zu].text: missing, empty or longer than %d bytes; fix or "
                      "remove it",
                      file, i, KV_RULE_MAX - 1);
    }
    if (kv_rules_add(s, t, "import", count > 0 && count < 1000000 ? (int)count : 1, 0, NULL, err,
                     sizeof err) < 0) {
      json_decref(top);
      return cli_fail("%s", err);
    }
    n++;
  }
  json_decref(top);
  printf("imported %d rules from %s (near-duplicates merged)\n", n, file);
  return 0;
}

int cmd_rules(int argc, char **argv) {
  const char *db = NULL, *verb = NULL, *arg = NULL;
  int all = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--all"))
      all = 1;
    else if (argv[i][0] != '-' && !verb)
      verb = argv[i];
    else if (argv[i][0] != '-' && !arg)
      arg = argv[i];
    else {
      cli_fail("rules: unexpected argument '%s'", argv[i]);
      return cli_usage("rules");
    }
  }
  if (!verb)
    verb = "list";
  int known = !strcmp(verb, "list") || !strcmp(verb, "show") || !strcmp(verb, "export") ||
              !strcmp(verb, "import");
  if (!known || (strcmp(verb, "list") && !arg)) {
    cli_fail("rules: %s",
             known ? "needs an argument" : "use list, show ID, export FILE or import FILE");
    return cli_usage("rules");
  }
  struct kv_store *s;
  if (cli_open_store(db, &s))
    return 2;
  char err[1024];
  int code = 0;
  if (!strcmp(verb, "import")) {
    code = import_rules(s, arg);
    kv_store_close(s);
    return code;
  }
  struct kv_rule_row *rows = NULL;
  int n = 0;
  if (kv_store_rules(s, &rows, &n, err, sizeof err) < 0) {
    kv_store_close(s);
    return cli_fail("%s", err);
  }
  if (!strcmp(verb, "list")) {
    printf("%-5s %5s %-9s %s\n", "id", "seen", "origin", "rule");
    for (int i = 0; i < n; i++)
      if (all || rows[i].count >= 2)
        printf("%-5lld %5d %-9s %s\n", (long long)rows[i].id, rows[i].count, rows[i].origin,
               rows[i].text);
  } else if (!strcmp(verb, "show")) {
    long long id;
    if (cli_integer("rules show: the rule number", arg, 1, LLONG_MAX, &id)) {
      kv_rule_rows_free(rows, n);
      kv_store_close(s);
      return 2;
    }
    int found = 0;
    for (int i = 0; i < n; i++)
      if (rows[i].id == id) {
        char d1[32], d2[32];
        time_t t1 = (time_t)rows[i].created_unix, t2 = (time_t)rows[i].updated_unix;
        strftime(d1, sizeof d1, "%Y-%m-%d %H:%M", gmtime(&t1));
        strftime(d2, sizeof d2, "%Y-%m-%d %H:%M", gmtime(&t2));
        printf("rule %lld: %s\n  origin   %s\n  seen     %d times\n  first    %s\n  last     "
               "%s\n  evaluations %s\n",
               id, rows[i].text, rows[i].origin, rows[i].count, d1, d2,
               rows[i].evals ? rows[i].evals : "(none)");
        found = 1;
      }
    if (!found)
      code = cli_fail("rules show %s: no such rule; 'kevo rules list --all' lists them", arg);
  } else {
    code = export_rules(rows, n, arg);
  }
  kv_rule_rows_free(rows, n);
  kv_store_close(s);
  return code;
}
