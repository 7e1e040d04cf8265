/* Internal to the gate: the developer tools (Nsight Compute,
 * compute-sanitizer) after a verdict (toolrun.c) and the tools' entry points
 * it calls (ncu.c, sanitize.c). One call of an object under a tool:
 * toolcall.h. Never prints, never exits. */
#ifndef KEVO_GATE_TOOLRUN_H
#define KEVO_GATE_TOOLRUN_H

#include "internal.h"

/* After the verdict: the profiler (an accepted candidate, o->profile) and the
 * debugger (a candidate rejected as crash, wrong, unwritten or stale output,
 * o->debug; every verdict with debug = 2) into r. Never changes the verdict;
 * a tool missing or refusing leaves its note. cand_src: the candidate's
 * source (the debugger rebuilds it with -lineinfo). */
void kv_devtools_after(const struct kv_session *s, const struct kv_build *ref,
                       const struct kv_build *cand, const char *ref_src, const char *cand_src,
                       struct kv_gate_result *r);

/* The two tools (sanitize.c, ncu.c), as kv_devtools_after calls them. */
void kv_san_debug(const struct kv_session *s, const struct kv_build *cand, const char *cand_src,
                  struct kv_gate_result *r);
/* The cpu surface's: the candidate built with AddressSanitizer and
 * UndefinedBehaviorSanitizer, run once on the failing check size in a worker
 * with its runtime preloaded (every layer on but RLIMIT_AS). */
void kv_san_debug_cpu(const struct kv_session *s, const struct kv_build *cand, const char *cand_src,
                      struct kv_gate_result *r);
void kv_ncu_profile(const struct kv_session *s, const struct kv_build *ref,
                    const struct kv_build *cand, const char *ref_src, struct kv_gate_result *r);

/* The debugger's build of a cuda candidate: the same source with -lineinfo
 * (source lines in the tools' reports), as <objdir>/<key>-lineinfo.so, the
 * path into so; cached. 0, or -1 with err. */
int kv_san_build_lineinfo(const struct kv_session *s, const struct kv_build *cand, const char *src,
                          char *so, size_t socap, char *err, size_t errlen);

#endif
