/* kevo rules list | show ID | export FILE | import FILE | audit | unflag ID:
 * the memory of validity rules. */
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

static int export_rules(struct kv_store *s, const char *file, int min_count) {
  char err[1024];
  int n = 0;
  char *text = kv_rules_export_json(s, min_count, &n, err, sizeof err);
  if (!text)
    return cli_fail("%s", err);
  int rc = kv_write_file(file, text, strlen(text), err, sizeof err);
  free(text);
  if (rc < 0)
    return cli_fail("%s: cannot write the rules: %s", file, err);
  printf("exported %d rules to %s (with their provenance)\n", n, file);
  return 0;
}

static int import_rules(struct kv_store *s, const char *file) {
  char err[1024];
  char *text;
  size_t len;
  if (kv_read_file(file, RULES_FILE_MAX, &text, &len, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_rules_import_stats st;
  int rc = kv_rules_import_json(s, text, len, file, &st, err, sizeof err);
  free(text);
  if (rc < 0)
    return cli_fail("%s", err);
  printf("imported %d rules from %s: %d new, %d merged into rules already here, counts +%d%s, "
         "%d flagged\n",
         st.rules, file, st.created, st.merged, st.count_added,
         st.count_added == 0 && st.rules ? " (everything was here already)" : "", st.flagged);
  return 0;
}

static int audit_rules(struct kv_store *s, int apply) {
  char err[1024];
  struct kv_rules_audit_item *items = NULL;
  int n = 0, contradicted = 0;
  if (kv_rules_audit(s, apply, &items, &n, &contradicted, err, sizeof err) < 0)
    return cli_fail("%s", err);
  int noisy = 0;
  for (int i = 0; i < n; i++)
    noisy += !items[i].flagged;
  printf("%d rules flagged by accepted kernels just now; %d flagged in all, %d noisy and not "
         "flagged%s\n",
         contradicted, n - noisy, noisy, noisy ? " ('kevo rules audit --apply' flags them)" : "");
  if (n)
    printf("%-5s %5s %-8s %s\n", "id", "seen", "status", "rule / why");
  for (int i = 0; i < n; i++)
    printf("%-5lld %5d %-8s %s\n%21s%s\n", (long long)items[i].id, items[i].count,
           items[i].flagged ? "flagged" : "noisy", items[i].text, "", items[i].why);
  free(items);
  return 0;
}

int cmd_rules(int argc, char **argv) {
  const char *db = NULL, *verb = NULL, *arg = NULL;
  int all = 0, apply = 0;
  long long min_count = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--all"))
      all = 1;
    else if (!strcmp(argv[i], "--apply"))
      apply = 1;
    else if (!strcmp(argv[i], "--min-count") && i + 1 < argc) {
      if (cli_integer("--min-count", argv[++i], 1, 1000000, &min_count))
        return 2;
    } else if (argv[i][0] != '-' && !verb)
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
              !strcmp(verb, "import") || !strcmp(verb, "audit") || !strcmp(verb, "unflag");
  if (!known || (strcmp(verb, "list") && strcmp(verb, "audit") && !arg)) {
    cli_fail("rules: %s", known
                              ? "needs an argument"
                              : "use list, show ID, export FILE, import FILE, audit or unflag ID");
    return cli_usage("rules");
  }
  struct kv_store *s;
  /* list, show and export only read. */
  int reads = !strcmp(verb, "list") || !strcmp(verb, "show") || !strcmp(verb, "export");
  if (reads ? cli_open_store_readonly(db, &s) : cli_open_store(db, &s))
    return 2;
  char err[1024];
  int code = 0;
  if (!strcmp(verb, "import") || !strcmp(verb, "export") || !strcmp(verb, "audit")) {
    code = !strcmp(verb, "import")   ? import_rules(s, arg)
           : !strcmp(verb, "export") ? export_rules(s, arg, (int)min_count)
                                     : audit_rules(s, apply);
    kv_store_close(s);
    return code;
  }
  if (!strcmp(verb, "unflag")) {
    long long id;
    if (cli_integer("rules unflag: the rule number", arg, 1, LLONG_MAX, &id)) {
      kv_store_close(s);
      return 2;
    }
    if (kv_store_rule_set_flag(s, id, NULL, NULL, err, sizeof err) < 0)
      code = cli_fail("rules unflag %s: %s; 'kevo rules list --all' lists the rules", arg, err);
    else
      printf("rule %lld is no longer flagged: it enters prompts again once seen often enough\n",
             id);
    kv_store_close(s);
    return code;
  }
  struct kv_rule_row *rows = NULL;
  int n = 0;
  struct kv_rule_meta *meta = NULL;
  int nm = 0;
  if (kv_store_rules(s, &rows, &n, err, sizeof err) < 0 ||
      kv_store_rules_meta(s, &meta, &nm, err, sizeof err) < 0) {
    kv_rule_rows_free(rows, n);
    kv_store_close(s);
    return cli_fail("%s", err);
  }
  if (!strcmp(verb, "list")) {
    printf("%-5s %5s %-9s %-8s %s\n", "id", "seen", "origin", "scope", "rule");
    for (int i = 0; i < nm; i++)
      if (all || meta[i].count >= 2)
        printf("%-5lld %5d %-9s %-8s %s%s\n", (long long)meta[i].id, meta[i].count, meta[i].origin,
               meta[i].surface ? meta[i].surface : "any", meta[i].flag ? "[flagged] " : "",
               meta[i].text);
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
        for (int k = 0; k < nm; k++)
          if (meta[k].id == id) {
            printf("  scope    %s%s%s\n", meta[k].surface ? meta[k].surface : "any surface",
                   meta[k].arch ? ", " : "", meta[k].arch ? meta[k].arch : "");
            if (meta[k].flag)
              printf("  flagged  %s (not injected; 'kevo rules unflag %lld' restores it)\n",
                     meta[k].flag, id);
            if (meta[k].aliases)
              printf("  also phrased\n    %s\n", meta[k].aliases);
          }
        found = 1;
      }
    if (!found)
      code = cli_fail("rules show %s: no such rule; 'kevo rules list --all' lists them", arg);
  }
  kv_rule_metas_free(meta, nm);
  kv_rule_rows_free(rows, n);
  kv_store_close(s);
  return code;
}
