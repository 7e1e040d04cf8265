/* What import.c and starter.c share. Never included outside lib/import. */
#ifndef KEVO_IMPORT_INTERNAL_H
#define KEVO_IMPORT_INTERNAL_H

#include <limits.h>
#include <stddef.h>

#include "kevo/import.h"

#define KV_IMPORT_MAX_READS 12

/* kevo-sandbox, which every module runs in: o->sandbox, $KEVO_SANDBOX, else
 * beside the executable. */
int kv_import_sandbox_path(const struct kv_import_opts *o, char *out, size_t cap, char *err,
                           size_t errlen);

/* What the sandboxed helper may read besides the system directories (the
 * Python installation, PYTHONPATH, ~/.local/lib, the helper's and the
 * module's directories); paths kept in store. Returns the count. */
int kv_import_helper_reads(const char *py, const char *helper, const char *module,
                           char store[KV_IMPORT_MAX_READS][PATH_MAX],
                           const char *reads[KV_IMPORT_MAX_READS]);

/* kevo-sandbox's command line for a helper that runs code kevo did not
 * write, up to and including "--": SBX SCRATCH CPU_S 0, -r READ for each
 * read, then seccomp with programs allowed (-s), the data cap (-d, written
 * into datab, kept by the caller) and every layer required (-R) unless
 * o->allow_unsandboxed. argv needs 8 + 2 * nr entries. Returns the count. */
int kv_import_sandbox_argv(char **argv, const struct kv_import_opts *o, char *sbx, char *scratch,
                           char *cpu, const char *const *reads, int nr, char datab[32]);

/* Appends the section on kevo task starter's candidate to DIR/README.md:
 * the generated entry, or why there is none. */
int kv_import_readme_starter(const struct kv_import_opts *o, const char *dir, char *err,
                             size_t errlen);

#endif
