/* --preset NAME on any command (kevo/preset.h), and `kevo presets`: the
 * table of each preset's constants beside kevo's defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kevo/preset.h"
#include "kevo/util.h"

#define PRESET_MAX_ARGS 64

/* argv with `--preset NAME` taken out and the preset's options for this
 * command put right after the command's name, before the user's own (the
 * parsers keep the last value given, so an explicit option wins). *argv
 * changes to a new array (kept in *own for the caller to free) only when
 * --preset is there: 0; 2 after saying why it cannot be applied. */
int cli_preset_expand(int *argc, char ***argv, char ***own) {
  static const char *const takes[] = {"run", "bench", "adapt", "analyze", "synthesize"};
  int at = -1, mine = 0;
  *own = NULL;
  for (size_t i = 0; i < KV_ARRAY_LEN(takes); i++)
    mine |= !strcmp((*argv)[0], takes[i]);
  if (!mine) /* kevo lineage reads its own --preset */
    return 0;
  for (int i = 1; i < *argc && strcmp((*argv)[i], "--") != 0; i++)
    if (!strcmp((*argv)[i], "--preset")) {
      if (at >= 0)
        return cli_fail("--preset is given twice; name one preset (%s)", kv_preset_names());
      at = i;
    }
  if (at < 0)
    return 0;
  const char *cmd = (*argv)[0], *name = at + 1 < *argc ? (*argv)[at + 1] : NULL;
  const struct kv_preset *p = name ? kv_preset_find(name) : NULL;
  if (name && !strcmp(name, "kevo")) { /* kevo's own defaults: nothing to put in */
    for (int i = at; i + 2 <= *argc; i++)
      (*argv)[i] = (*argv)[i + 2];
    *argc -= 2;
    return 0;
  }
  if (!p)
    return cli_fail("--preset %s: not a preset; the presets are %s, or kevo (kevo's own "
                    "defaults); kevo presets NAME shows one",
                    name ? name : "(missing)", kv_preset_names());
  const char *add[PRESET_MAX_ARGS];
  int n = kv_preset_args(p, cmd, add, PRESET_MAX_ARGS);
  if (n <= 0)
    return cli_fail("--preset %s sets no option of kevo %s; 'kevo presets %s' says which "
                    "commands it applies to",
                    name, cmd, name);
  char **v = calloc((size_t)(*argc + n + 1), sizeof *v);
  if (!v)
    return cli_fail("out of memory");
  int k = 0;
  v[k++] = (*argv)[0];
  for (int i = 0; i < n; i++)
    v[k++] = (char *)add[i];
  for (int i = 1; i < *argc; i++)
    if (i != at && i != at + 1)
      v[k++] = (*argv)[i];
  v[k] = NULL;
  fprintf(stderr, "kevo: --preset %s (%s as released):", name, p->source);
  for (int i = 0; i < n; i++)
    fprintf(stderr, " %s", add[i]);
  fprintf(stderr, "\n");
  *own = v;
  *argv = v;
  *argc = k;
  return 0;
}

static void print_md(const struct kv_preset *p) {
  printf("| command | component | %s as released | kevo option | kevo's default | why kevo "
         "differs |\n|---|---|---|---|---|---|\n",
         p->name);
  for (int i = 0; i < p->nrows; i++) {
    const struct kv_preset_row *r = &p->rows[i];
    printf("| %s | %s | %s | %s%s%s%s%s | %s | %s |\n", r->cmd, r->component, r->theirs,
           r->flag ? "`" : "", r->flag ? r->flag : "(none)", r->value ? " " : "",
           r->value ? r->value : "", r->flag ? "`" : "", r->kevo, r->why);
  }
}

static void print_text(const struct kv_preset *p) {
  printf("%s (%s as released)\n", p->name, p->source);
  for (int i = 0; i < p->nrows; i++) {
    const struct kv_preset_row *r = &p->rows[i];
    printf("\n  %s: %s\n    released:  %s\n    preset:    %s %s%s%s\n    kevo:      %s\n", r->cmd,
           r->component, r->theirs, r->flag ? "kevo" : "(no option)", r->flag ? r->cmd : "",
           r->flag ? " " : "", r->flag ? r->flag : "", r->kevo);
    if (r->flag && r->value)
      printf("    value:     %s\n", r->value);
    if (r->why[0])
      printf("    why:       %s\n", r->why);
  }
}

int cmd_presets(int argc, char **argv) {
  int markdown = 0;
  const char *name = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--markdown"))
      markdown = 1;
    else if (argv[i][0] == '-' || name)
      return cli_usage("presets");
    else
      name = argv[i];
  }
  int n;
  const struct kv_preset *all = kv_presets(&n);
  if (name && !kv_preset_find(name))
    return cli_fail("presets %s: not a preset; the presets are %s", name, kv_preset_names());
  for (int i = 0; i < n; i++) {
    if (name && strcmp(name, all[i].name))
      continue;
    if (markdown)
      print_md(&all[i]);
    else
      print_text(&all[i]);
    if (!name && i + 1 < n)
      printf("\n");
  }
  return 0;
}
