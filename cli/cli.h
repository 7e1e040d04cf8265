/* kevo's command line: one file per command, registered in main.c's table. */
#ifndef KEVO_CLI_H
#define KEVO_CLI_H

#include "kevo/calib.h"
#include "kevo/gate.h"

struct kv_command {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name */
  const char *usage;
  const char *summary;
};

int cmd_eval(int argc, char **argv);
int cmd_task(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_device(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_rules(int argc, char **argv);
int cmd_import(int argc, char **argv);

/* "kevo: ..." on stderr; returns 2 (kevo could not judge / bad usage). */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Usage error naming the command's usage line. */
int cli_usage(const char *cmd);
/* Loads the CPU calibration from the cache or measures it (and says so on
 * stderr). 0 on success. */
int cli_calib(struct kv_calib *c, int force, int quiet);
struct kv_store;
/* Opens the store at db (NULL: $KEVO_DB or the default path); 0, or 2 after
 * saying why on stderr. */
int cli_open_store(const char *db, struct kv_store **s);
/* Parses a positive number for a flag or fails with a message. */
int cli_number(const char *flag, const char *text, double *out);

#endif
