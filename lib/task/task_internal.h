/* Internal helpers shared by the task module's sources (not a public header). */
#ifndef KEVO_TASK_INTERNAL_H
#define KEVO_TASK_INTERNAL_H

#include "kevo/task.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Longest shape or cost expression accepted, and deepest nesting of
 * parentheses and unary minus. */
#define KVT_EXPR_MAX 1024
#define KVT_EXPR_DEPTH 64

/* Evaluates expr under size set s. With s == NULL only the syntax and the
 * names are checked (no arithmetic), and *out is set to 0. The message has
 * the form "'EXPR': PROBLEM at column N; FIX". */
int kvt_expr(const struct kv_task *t, const struct kv_sizeset *s, const char *expr, int64_t *out,
             char *err, size_t errlen);

/* Writes s into out (capacity cap), with control and non-ASCII bytes as '?'
 * and truncated to at most `max` characters ("..." appended when cut). */
const char *kvt_quote(const char *s, size_t max, char *out, size_t cap);

/* snprintf into err (when err != NULL and errlen > 0) that then replaces any
 * control character by '?', so that every message stays one line. */
void kvt_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kvt_vseterr(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* "rows cols" (space-separated names of the size params), or "(none)". */
void kvt_size_names(const struct kv_task *t, char *out, size_t cap);

/* Packed params (pack.c): parse params[i].pack (err is the rest of the
 * message after "params[i].pack"), check that the tensors fill the buffer
 * exactly at size set s, free. */
struct json_t;
int kvt_pack_parse(const struct kv_task *t, struct kv_param *p, struct json_t *arr, char *err,
                   size_t errlen);
int kvt_pack_check(const struct kv_task *t, int p, const struct kv_sizeset *s, char *err,
                   size_t errlen);
void kvt_pack_free(struct kv_param *p);

#endif
