/* The surfaces a candidate is written for (cpu, cuda): one table
 * (lib/gate/surface.c) says what each is, so that code asks the surface
 * rather than compares its name, and a third surface is a row of the table.
 * Never prints, never exits. */
#ifndef KEVO_SURFACE_H
#define KEVO_SURFACE_H

#include <stddef.h>

#include "kevo/task.h"

struct kv_surface; /* an entry of the table (opaque) */

/* The surface of that name; NULL names the default (cpu); NULL for an
 * unknown name (and for ""). */
const struct kv_surface *kv_surface_find(const char *name);
/* The i-th entry of the table, the default first; NULL past its end. */
const struct kv_surface *kv_surface_at(size_t i);
/* The table's names for messages: "cpu, cuda". */
const char *kv_surface_names(void);

/* What a surface is. A NULL surface answers as the default (cpu) does. */
const char *kv_surface_name(const struct kv_surface *sf);
/* The language of its candidate, reference and prototype. */
enum kv_lang kv_surface_lang(const struct kv_surface *sf);
/* That language's name for prompts and code fences: "c", "cuda". */
const char *kv_surface_lang_name(const struct kv_surface *sf);
/* The extension of its sources, without the dot: "c", "cu". */
const char *kv_surface_ext(const struct kv_surface *sf);
/* What a candidate of task t defines: the task's entry (a C function), or
 * the class ModelNew (the torch surface's Python). */
const char *kv_surface_entry(const struct kv_surface *sf, const struct kv_task *t);
/* 1: its candidates run on a GPU (nvcc, an architecture, compute-sanitizer,
 * a device that the worker names and measures). */
int kv_surface_gpu(const struct kv_surface *sf);
/* 1: the gate analyses its builds statically (cuda: SASS). */
int kv_surface_analyzed(const struct kv_surface *sf);

#endif
