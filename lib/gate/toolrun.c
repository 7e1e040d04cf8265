/* The gate's use of the profiler and the debugger after a verdict, and kevo
 * doctor's probe of each tool (see toolrun.h); one call under a tool is
 * toolcall.c's. */
#include "toolrun.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kevo/ncu.h"
#include "kevo/sanitize.h"
#include "toolcall.h"

void kv_devtools_after(const struct kv_session *s, const struct kv_build *ref,
                       const struct kv_build *cand, const char *ref_src, const char *cand_src,
                       struct kv_gate_result *r) {
  const struct kv_gate_opts *o = s->o;
  if (!cand->ok)
    return;
  enum kv_verdict v = r->verdict;
  int rejected = v == KV_V_CRASH || v == KV_V_WRONG_OUTPUT || v == KV_V_UNWRITTEN_OUTPUT ||
                 v == KV_V_STALE_OUTPUT;
  if (!s->sf->device_in_worker) {
    /* cpu: AddressSanitizer and UndefinedBehaviorSanitizer instead */
    if (!s->torch && (o->debug == 2 || (o->debug == 1 && rejected)) && v != KV_V_POLICY_VIOLATION &&
        v != KV_V_COMPILE_ERROR && v != KV_V_LOAD_ERROR)
      kv_san_debug_cpu(s, cand, cand_src, r);
    return;
  }
  if (o->debug == 2 || (o->debug == 1 && rejected))
    kv_san_debug(s, cand, cand_src, r);
  if (o->profile == 2
          ? v != KV_V_POLICY_VIOLATION && v != KV_V_COMPILE_ERROR && v != KV_V_LOAD_ERROR
          : o->profile == 1 && v == KV_V_OK)
    kv_ncu_profile(s, ref, cand, ref_src, r);
}

int kv_devtool_probe(const struct kv_gate_opts *o, const char *which, const char *const *off,
                     struct kv_sandbox_status *st, char *without_list, size_t cap, double *seconds,
                     char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  if (without_list && cap)
    without_list[0] = 0;
  int ncu = !strcmp(which, "ncu");
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  char tool[PATH_MAX];
  if (ncu)
    kv_ncu_path(o, tool, sizeof tool);
  else
    kv_san_path(o, tool, sizeof tool);
  if (!tool[0])
    return kv_error(err, errlen, "%s not found", which);
  struct kv_session s;
  memset(&s, 0, sizeof s);
  s.o = o;
  s.sf = kv_surface_find("cuda");
  if (!s.sf)
    return kv_error(err, errlen, "no cuda surface in this build");
  if (o->cache_dir)
    snprintf(s.cache, sizeof s.cache, "%s", o->cache_dir);
  else if (kv_cache_dir(s.cache, sizeof s.cache) < 0)
    return kv_error(err, errlen, "cannot find a cache directory; set KEVO_CACHE_DIR");
  snprintf(s.objdir, sizeof s.objdir, "%s/obj", s.cache);
  snprintf(s.scratch, sizeof s.scratch, "%s/scratch", s.cache);
  if (kv_mkdirs(s.objdir, 0700, err, errlen) < 0 || kv_mkdirs(s.scratch, 0700, err, errlen) < 0)
    return -1;
  const char *wp = o->worker_path;
  if (wp && *wp) {
    snprintf(s.worker_path, sizeof s.worker_path, "%s", wp);
  } else {
    char dir[PATH_MAX - 16];
    if (kv_exe_dir(dir, sizeof dir) < 0)
      return kv_error(err, errlen, "cannot locate kevo-worker; set KEVO_WORKER");
    snprintf(s.worker_path, sizeof s.worker_path, "%s/kevo-worker", dir);
  }
  const char *without[8];
  char store[256];
  if (off) {
    int n = 0;
    while (off[n] && n < 7)
      without[n] = off[n], n++;
    without[n] = NULL;
  } else {
    kv_tool_layers_off(ncu ? "ncu" : "compute-sanitizer", without, 8, store, sizeof store);
  }
  for (int i = 0; without[i] && without_list; i++) {
    size_t u = strlen(without_list);
    snprintf(without_list + u, cap - u, "%s%s", u ? "," : "", without[i]);
  }
  char tooldir[PATH_MAX];
  kv_tool_dir(tool, tooldir, sizeof tooldir);
  const char *wrap_ncu[] = {tool, "--clock-control", "none", NULL};
  const char *wrap_san[] = {tool, "--tool", "memcheck", NULL};
  struct kv_worker_spec spec = {0};
  spec.worker_path = s.worker_path;
  spec.scratch_base = s.scratch;
  spec.read_paths[spec.nread++] = tooldir;
  spec.sandbox = o->sandbox;
  spec.start_deadline_s = 60;
  spec.surface = s.sf->worker_runtime;
  const char *wrapped[16], *worker_off[8];
  char sbx[PATH_MAX];
  int in = kv_tool_in_netns(s.worker_path, s.scratch, ncu ? wrap_ncu : wrap_san, without, wrapped,
                            16, worker_off, 8, sbx, sizeof sbx, err, errlen);
  if (in < 0)
    return -1;
  spec.wrap = wrapped;
  spec.without = worker_off;
  double t0 = kv_now_s();
  struct kv_worker w;
  if (kv_worker_start(&w, &spec, err, errlen) < 0)
    return -1;
  kv_sandbox_status_from_hello(w.hello, st);
  /* The tool's network namespace, for kevo doctor (kv_devtool_probe's word
   * on it: the first note). */
  char note[sizeof st->note];
  snprintf(note, sizeof note, "%s%s%s",
           in ? "tool_netns: active (the tool and the worker share a network namespace of "
                "their own)"
              : "tool_netns: OFF (the tool runs in the host's network)",
           st->note[0] ? "; " : "", st->note);
  snprintf(st->note, sizeof st->note, "%s", note);
  json_t *c = json_object_get(w.hello, "cuda");
  int ok = json_is_true(json_object_get(c, "ok"));
  if (!ok) {
    const char *e = json_string_value(json_object_get(c, "error"));
    kv_error(err, errlen, "under %s the worker cannot use the device: %s", which,
             e ? e : "no reason given");
  }
  int exited;
  kv_tool_stop(&w, 30, &exited);
  if (seconds)
    *seconds = kv_now_s() - t0;
  return ok ? 0 : -1;
}
