/* Presets: the seed systems (AdaExplore, CUDAnalyst, KLineage) as their
 * authors released them. A preset is one table of rows, each a component
 * and constant of the released code, the kevo option that sets it (with its
 * value), kevo's own default beside it and why kevo's default differs. The
 * command line turns a preset into the options it names, put before the
 * user's own (so any option given explicitly wins); `kevo presets NAME`
 * prints the table. A row without an option documents a component kevo sets
 * no other way (or has not got). A new preset is one entry of presets[] in
 * lib/agent/preset.c. Never prints, never exits. */
#ifndef KEVO_PRESET_H
#define KEVO_PRESET_H

#include <stddef.h>

struct kv_preset_row {
  const char *cmd;       /* "run" (also kevo adapt's, which takes run's options), "analyze",
                            "adapt", "synthesize", "lineage" */
  const char *flag;      /* "--explore"; NULL: documentation only */
  const char *value;     /* its value; NULL: a flag without one */
  const char *component; /* what it is ("UCB exploration weight c") */
  const char *theirs;    /* the released code's constant and where it is */
  const char *kevo;      /* kevo's default */
  const char *why;       /* why kevo's default differs ("" when it does not) */
};

struct kv_preset {
  const char *name;   /* "adaexplore" */
  const char *source; /* the released code ("StigLidu/AdaExplore") */
  const struct kv_preset_row *rows;
  int nrows;
};

/* The preset of that name, or NULL. */
const struct kv_preset *kv_preset_find(const char *name);
/* Every preset, in table order: *n of them. */
const struct kv_preset *kv_presets(int *n);
/* "adaexplore, cudanalyst, klineage". */
const char *kv_preset_names(void);
/* 1 when a row applies to command cmd: its own rows, and for "adapt" and
 * "bench" the rows of "run" too (they take every option of kevo run). */
int kv_preset_row_applies(const struct kv_preset_row *r, const char *cmd);
/* The options p sets on command cmd, flag then value (when it has one), in
 * table order, into out (at most cap pointers into the table): how many, or
 * -1 when they do not fit. */
int kv_preset_args(const struct kv_preset *p, const char *cmd, const char **out, int cap);

#endif
