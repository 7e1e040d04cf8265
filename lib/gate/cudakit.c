/* The CUDA toolkit and the device, as the cuda surface's compilers and tools
 * find them (cudakit.h): nvcc's path and the tools beside it, the GPU's
 * architecture, and ptxas's resource report. Below nvcc.c, nvrtc.c and
 * sass.c, which all use it (issue 33: no circle among lib/gate's files). */
#include "cudakit.h"

#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/gate.h"
#include "kevo/util.h"

static char nvcc_default[PATH_MAX];

static void find_default_nvcc(void) {
  if (kv_which("nvcc", nvcc_default, sizeof nvcc_default) != 0) {
    if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
      snprintf(nvcc_default, sizeof nvcc_default, "/usr/local/cuda/bin/nvcc");
    else
      nvcc_default[0] = 0;
  }
}

const char *kv_nvcc_path(const struct kv_gate_opts *o) {
  const char *want = o ? o->nvcc_path : NULL;
  if (want && *want && access(want, X_OK) == 0)
    return want;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_default_nvcc);
  return nvcc_default;
}

void kv_cuda_tool_find(const char *env, const char *name, const char *alt,
                       const struct kv_gate_opts *o, char *out, size_t cap) {
  const char *e = getenv(env);
  if (e && *e && access(e, X_OK) == 0) {
    snprintf(out, cap, "%s", e);
    return;
  }
  const char *nv = kv_nvcc_path(o);
  const char *sl = nv ? strrchr(nv, '/') : NULL;
  for (int i = 0; sl && i < 2; i++) {
    const char *rel = i == 0 ? name : alt;
    if (!rel)
      continue;
    snprintf(out, cap, "%.*s/%s", (int)(sl - nv), nv, rel);
    if (access(out, X_OK) == 0)
      return;
  }
  if (kv_which(name, out, cap) != 0 && cap)
    out[0] = 0;
}

/* "sm_90", "sm_90a", "90", "9.0" -> "sm_90" / "sm_90a"; -1 if not an architecture. */
static int norm_arch(const char *in, char *out, size_t cap) {
  while (*in == ' ')
    in++;
  if (!strncmp(in, "sm_", 3))
    in += 3;
  int major = 0, minor = 0, n = 0;
  char suffix[4] = "";
  if (strchr(in, '.')) {
    if (sscanf(in, "%d.%d%n", &major, &minor, &n) != 2)
      return -1;
  } else {
    int v;
    if (sscanf(in, "%d%n", &v, &n) != 1 || v < 10)
      return -1;
    major = v / 10;
    minor = v % 10;
  }
  const char *rest = in + n;
  if (*rest == 'a' || *rest == 'f') {
    suffix[0] = *rest++;
    suffix[1] = 0;
  }
  while (*rest == ' ' || *rest == '\n' || *rest == '\r')
    rest++;
  if (*rest || major < 3 || major > 20 || minor < 0 || minor > 9)
    return -1;
  snprintf(out, cap, "sm_%d%d%s", major, minor, suffix);
  return 0;
}

/* norm_arch of a text's first line (nvidia-smi's answer, or its memo). */
static int first_line_arch(const char *text, char *out, size_t cap) {
  char line[64];
  snprintf(line, sizeof line, "%.*s", (int)strcspn(text, "\n"), text);
  return norm_arch(line, out, cap);
}

/* The identity of the device the worker will use, as the driver states it
 * under proc_root (/proc/driver/nvidia): the `information` file of the
 * idx-th GPU in PCI order (its model and UUID among others) and the
 * driver's `version`, hashed into key. -1 when they cannot be read (no
 * driver, a container without /proc/driver/nvidia, fewer GPUs). */
static int device_key(const char *proc_root, int idx, char key[65]) {
  char dir[PATH_MAX], path[PATH_MAX + 300];
  snprintf(dir, sizeof dir, "%s/gpus", proc_root);
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  char names[64][256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 64;)
    if (e->d_name[0] != '.')
      snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  closedir(d);
  if (idx < 0 || idx >= n)
    return -1;
  qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
  char *info = NULL, *ver = NULL;
  size_t il = 0, vl = 0;
  snprintf(path, sizeof path, "%s/%s/information", dir, names[idx]);
  int rc = kv_read_file(path, 1 << 16, &info, &il, NULL, 0);
  snprintf(path, sizeof path, "%s/version", proc_root);
  if (rc == 0)
    rc = kv_read_file(path, 1 << 16, &ver, &vl, NULL, 0);
  if (rc == 0 && il > 0 && strstr(info, "UUID")) {
    size_t len = il + vl + 16;
    char *both = malloc(len);
    if (both) {
      int m = snprintf(both, len, "%s\n--\n%s", info, ver ? ver : "");
      kv_sha256_hex(both, (size_t)m, key);
      free(both);
    } else {
      rc = -1;
    }
  } else {
    rc = -1;
  }
  free(info);
  free(ver);
  return rc;
}

int kv_cuda_arch_at(const char *proc_root, const char *cache_dir, char *out, size_t cap, char *err,
                    size_t errlen) {
  /* The worker uses the first visible device; nvidia-smi counts in PCI order,
   * as the worker does (CUDA_DEVICE_ORDER=PCI_BUS_ID). */
  char idx[32] = "0";
  const char *vis = getenv("CUDA_VISIBLE_DEVICES");
  if (vis && *vis >= '0' && *vis <= '9')
    snprintf(idx, sizeof idx, "%.*s", (int)strspn(vis, "0123456789"), vis);
  /* nvidia-smi takes about a second on a GPU host, once per kevo process (on
   * an H100 it was most of a new candidate's compile time): its answer is
   * kept per device identity in the cache directory, and asked again only
   * for a device (or driver) not seen before. */
  char key[65], memo[PATH_MAX + 100] = "";
  if (cache_dir && *cache_dir && device_key(proc_root, atoi(idx), key) == 0) {
    snprintf(memo, sizeof memo, "%s/cuda-arch-%.32s", cache_dir, key);
    char *text = NULL;
    size_t len = 0;
    if (kv_read_file(memo, 64, &text, &len, NULL, 0) == 0) {
      int rc = first_line_arch(text, out, cap);
      free(text);
      if (rc == 0)
        return 0;
    }
  }
  char smi[PATH_MAX];
  if (kv_which("nvidia-smi", smi, sizeof smi) != 0)
    return kv_error(err, errlen,
                    "--surface cuda: no NVIDIA GPU found (nvidia-smi is not on PATH); the cuda "
                    "surface runs candidates on an NVIDIA GPU with its driver; to only compile, "
                    "set KEVO_CUDA_ARCH (e.g. sm_90)");
  char *argv[] = {smi, "--query-gpu=compute_cap", "--format=csv,noheader", "-i", idx, NULL};
  struct kv_buf b;
  kv_buf_init(&b, 4096);
  struct kv_proc_result r;
  if (kv_run(argv, NULL, NULL, 30, NULL, NULL, &b, &r, err, errlen) < 0) {
    kv_buf_release(&b);
    return -1;
  }
  const char *txt = b.data ? b.data : "";
  int ok = r.exited && r.status == 0 && first_line_arch(txt, out, cap) == 0;
  if (!ok) {
    char how[128];
    kv_proc_describe(&r, how, sizeof how);
    kv_error(err, errlen,
             "--surface cuda: no usable NVIDIA GPU (nvidia-smi --query-gpu=compute_cap %s: "
             "%.300s); check the driver with nvidia-smi, or set KEVO_CUDA_ARCH to only compile",
             how, txt);
  } else if (memo[0]) {
    kv_write_file(memo, out, strlen(out), NULL, 0); /* best effort: asked again if it fails */
  }
  kv_buf_release(&b);
  return ok ? 0 : -1;
}

int kv_cuda_arch(const struct kv_gate_opts *o, char *out, size_t cap, char *err, size_t errlen) {
  const char *want = o ? o->cuda_arch : NULL;
  if (want && *want) {
    char arch[32];
    if (norm_arch(want, arch, sizeof arch) < 0)
      return kv_error(err, errlen,
                      "KEVO_CUDA_ARCH=%s is not a CUDA architecture; write e.g. sm_90 (or unset "
                      "it to ask the GPU)",
                      want);
    snprintf(out, cap, "%s", arch);
    return 0;
  }
  /* The GPU's answer, asked once per process. */
  static char cached[32];
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  int rc = 0;
  if (!cached[0]) {
    char cache[PATH_MAX];
    if (o && o->cache_dir)
      snprintf(cache, sizeof cache, "%s", o->cache_dir);
    else if (kv_cache_dir(cache, sizeof cache) < 0)
      cache[0] = 0;
    char arch[32];
    rc = kv_cuda_arch_at("/proc/driver/nvidia", cache, arch, sizeof arch, err, errlen);
    if (rc == 0)
      snprintf(cached, sizeof cached, "%s", arch);
  }
  if (rc == 0)
    snprintf(out, cap, "%s", cached);
  pthread_mutex_unlock(&lock);
  return rc;
}

/* "-arch=sm_90"; architecture-specific targets (sm_90a) need the -gencode form. */
void kv_cuda_arch_flag(const char *arch, char *out, size_t cap) {
  size_t n = strlen(arch);
  if (n && (arch[n - 1] == 'a' || arch[n - 1] == 'f'))
    snprintf(out, cap, "-gencode=arch=compute_%s,code=%s", arch + 3, arch);
  else
    snprintf(out, cap, "-arch=%s", arch);
}

static long num_before(const char *line, const char *what) {
  const char *p = strstr(line, what);
  if (!p)
    return -1;
  while (p > line && p[-1] == ' ')
    p--;
  const char *q = p;
  while (q > line && q[-1] >= '0' && q[-1] <= '9')
    q--;
  return q < p ? strtol(q, NULL, 10) : -1;
}

int kv_parse_ptxas(const char *log, struct kv_kernel_res *k, int max) {
  int n = 0, cur = -1;
  char props[160] = "";
  for (const char *line = log; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    char l[512];
    snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l ? len : sizeof l - 1), line);
    const char *e = strstr(l, "Compiling entry function '");
    const char *fp = strstr(l, "Function properties for ");
    if (e && n < max) {
      e += strlen("Compiling entry function '");
      cur = n++;
      memset(&k[cur], 0, sizeof k[cur]);
      snprintf(k[cur].name, sizeof k[cur].name, "%.*s", (int)strcspn(e, "'"), e);
    } else if (fp) {
      fp += strlen("Function properties for ");
      snprintf(props, sizeof props, "%.*s", (int)strcspn(fp, " \r"), fp);
    } else if (strstr(l, "bytes stack frame") && props[0]) {
      /* Belongs to the entry of that name, if it is one (else a device function). */
      for (int i = 0; i < n; i++) {
        if (strcmp(k[i].name, props) != 0)
          continue;
        k[i].stack_bytes = num_before(l, " bytes stack frame");
        k[i].spill_store_bytes = num_before(l, " bytes spill stores");
        k[i].spill_load_bytes = num_before(l, " bytes spill loads");
      }
      props[0] = 0;
    } else if (strstr(l, "Used ") && strstr(l, " registers") && cur >= 0) {
      k[cur].registers = (int)num_before(l, " registers");
      long bar = num_before(l, " barriers");
      k[cur].barriers = bar > 0 ? (int)bar : 0;
      long sm = num_before(l, " bytes smem");
      k[cur].smem_bytes = sm > 0 ? sm : 0;
      long cm = num_before(l, " bytes cmem[0]");
      k[cur].cmem_bytes = cm > 0 ? cm : 0;
      cur = -1;
    }
    line = nl ? nl + 1 : NULL;
  }
  return n;
}
