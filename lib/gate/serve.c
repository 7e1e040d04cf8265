/* The gate server (see serve.h): frames in, verdicts out. */
#include "kevo/serve.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kevo/task.h"
#include "kevo/util.h"
#include "kevo/wire.h"

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

/* ---- jobs -------------------------------------------------------------------- */

/* A plain file name: letters, digits, '_', '-', '.', not starting with '.'. */
static int plain_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > KV_JOB_NAME_MAX || s[0] == '.')
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-' || c == '.'))
      return 0;
  }
  return 1;
}

static int hex64(const char *s) {
  if (!s || strlen(s) != 64)
    return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

void kv_job_bundle_hash(const struct kv_job_file *files, int n, char hex[65]) {
  struct kv_sha256 *h = kv_sha256_new();
  for (int i = 0; i < n; i++) {
    char len[32];
    int k = snprintf(len, sizeof len, "%zu", files[i].len);
    kv_sha256_update(h, files[i].name, strlen(files[i].name) + 1);
    kv_sha256_update(h, len, (size_t)k + 1);
    kv_sha256_update(h, files[i].data, files[i].len);
  }
  kv_sha256_final(h, hex);
}

/* {"name", "bytes"} into f, its bytes at *off in the blob. */
static int take_file(json_t *o, const char *what, const uint8_t *blob, uint64_t blob_len,
                     uint64_t *off, size_t cap, struct kv_job_file *f, char *err, size_t errlen) {
  const char *name = json_string_value(json_object_get(o, "name"));
  json_t *b = json_object_get(o, "bytes");
  if (!name || !plain_name(name))
    return kv_error(err, errlen,
                    "job: %s: \"name\" must be a plain file name (letters, digits, _ - ., at most "
                    "%d, not starting with a dot)",
                    what, KV_JOB_NAME_MAX);
  if (!json_is_integer(b) || json_integer_value(b) < 0 ||
      (uint64_t)json_integer_value(b) > (uint64_t)cap)
    return kv_error(err, errlen, "job: %s %s: \"bytes\" must be a count from 0 to %zu", what, name,
                    cap);
  uint64_t n = (uint64_t)json_integer_value(b);
  if (n > blob_len - *off)
    return kv_error(err, errlen, "job: %s %s: %llu bytes, but the frame holds only %llu more", what,
                    name, (unsigned long long)n, (unsigned long long)(blob_len - *off));
  snprintf(f->name, sizeof f->name, "%s", name);
  f->data = blob + *off;
  f->len = (size_t)n;
  *off += n;
  return 0;
}

int kv_job_parse(const char *json, const uint8_t *blob, uint64_t blob_len, struct kv_job *job,
                 char *err, size_t errlen) {
  memset(job, 0, sizeof *job);
  job->timing = 1;
  json_error_t je;
  json_t *j = json_loads(json ? json : "", 0, &je);
  int rc = -1;
  if (!json_is_object(j)) {
    kv_error(err, errlen, "job: not a JSON object (%s)", j ? "another type" : je.text);
    goto out;
  }
  json_t *proto = json_object_get(j, "protocol");
  if (!json_is_integer(proto) || json_integer_value(proto) != KV_GATE_PROTOCOL) {
    kv_error(err, errlen,
             "job: protocol %lld, but this server (kevo %s) speaks protocol %d; run the same "
             "kevo version on both sides",
             json_is_integer(proto) ? (long long)json_integer_value(proto) : -1LL, KEVO_VERSION,
             KV_GATE_PROTOCOL);
    goto out;
  }
  const char *id = json_string_value(json_object_get(j, "id"));
  if (!id || strlen(id) >= sizeof job->id) {
    kv_error(err, errlen, "job: \"id\" must be a string of at most %zu bytes", sizeof job->id - 1);
    goto out;
  }
  snprintf(job->id, sizeof job->id, "%s", id);
  json_t *task = json_object_get(j, "task");
  const char *hash = json_string_value(json_object_get(task, "hash"));
  if (!hex64(hash)) {
    kv_error(err, errlen, "job %s: task.hash must be 64 lowercase hex digits (sha256)", job->id);
    goto out;
  }
  memcpy(job->task_hash, hash, 65);
  uint64_t off = 0;
  json_t *files = json_object_get(task, "files");
  if (files && (!json_is_array(files) || json_array_size(files) > KV_JOB_FILES_MAX)) {
    kv_error(err, errlen, "job %s: task.files must be an array of at most %d files", job->id,
             KV_JOB_FILES_MAX);
    goto out;
  }
  size_t i;
  json_t *f;
  int has_task_json = 0;
  json_array_foreach(files, i, f) {
    if (take_file(f, "task file", blob, blob_len, &off, KV_JOB_FILE_MAX, &job->files[i], err,
                  errlen) < 0)
      goto out;
    for (size_t k = 0; k < i; k++)
      if (!strcmp(job->files[k].name, job->files[i].name)) {
        kv_error(err, errlen, "job %s: task file %s is given twice", job->id, job->files[i].name);
        goto out;
      }
    has_task_json |= !strcmp(job->files[i].name, "task.json");
    job->nfiles = (int)i + 1;
  }
  if (job->nfiles && !has_task_json) {
    kv_error(err, errlen, "job %s: the task's files hold no task.json", job->id);
    goto out;
  }
  if (job->nfiles) {
    char h[65];
    kv_job_bundle_hash(job->files, job->nfiles, h);
    if (strcmp(h, job->task_hash)) {
      kv_error(err, errlen, "job %s: the task's files hash to %.12s..., not the %.12s... claimed",
               job->id, h, job->task_hash);
      goto out;
    }
  }
  if (take_file(json_object_get(j, "candidate"), "candidate", blob, blob_len, &off, KV_SOURCE_MAX,
                &job->candidate, err, errlen) < 0)
    goto out;
  if (off != blob_len) {
    kv_error(err, errlen, "job %s: %llu bytes in the frame that no file claims", job->id,
             (unsigned long long)(blob_len - off));
    goto out;
  }
  json_t *o = json_object_get(j, "options");
  if (o && !json_is_object(o)) {
    kv_error(err, errlen, "job %s: \"options\" must be an object", job->id);
    goto out;
  }
  const char *sf = json_string_value(json_object_get(o, "surface"));
  const char *tc = json_string_value(json_object_get(o, "torch_compile"));
  if ((sf && strlen(sf) >= sizeof job->surface) ||
      (tc && strlen(tc) >= sizeof job->torch_compile)) {
    kv_error(err, errlen, "job %s: options.surface or options.torch_compile is too long", job->id);
    goto out;
  }
  snprintf(job->surface, sizeof job->surface, "%s", sf ? sf : "");
  snprintf(job->torch_compile, sizeof job->torch_compile, "%s", tc ? tc : "");
  json_t *seed = json_object_get(o, "seed");
  if (seed) {
    if (!json_is_integer(seed) || json_integer_value(seed) < 0) {
      kv_error(err, errlen, "job %s: options.seed must be a whole number >= 0", job->id);
      goto out;
    }
    job->has_seed = 1;
    job->seed = (uint64_t)json_integer_value(seed);
  }
  json_t *timing = json_object_get(o, "timing");
  if (timing)
    job->timing = json_is_true(timing);
  json_t *ci = json_object_get(o, "timing_ci");
  if (ci) {
    if (!json_is_number(ci) || json_number_value(ci) < 0 || json_number_value(ci) > 0.5) {
      kv_error(err, errlen, "job %s: options.timing_ci must be a number in [0, 0.5]", job->id);
      goto out;
    }
    job->has_timing_ci = 1;
    job->timing_ci = json_number_value(ci);
  }
  job->budget_s = json_number_value(json_object_get(o, "budget_s"));
  job->deadline_s = json_number_value(json_object_get(o, "deadline_s"));
  if (job->budget_s < 0 || job->budget_s > 600 || job->deadline_s < 0 || job->deadline_s > 3600) {
    kv_error(err, errlen,
             "job %s: options.budget_s must be in [0, 600] and deadline_s in [0, 3600]", job->id);
    goto out;
  }
  rc = 0;
out:
  json_decref(j);
  return rc;
}

/* ---- the channel ---------------------------------------------------------------- */

static int send_json(int fd, uint32_t type, uint64_t token, json_t *j, char *err, size_t errlen) {
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!s)
    return kv_error(err, errlen, "out of memory");
  int rc = kv_wire_write(fd, type, token, s, NULL, 0);
  free(s);
  if (rc < 0)
    return kv_error(err, errlen, "gate serve: the client's channel closed: %s", strerror(errno));
  return 0;
}

/* One frame: 1 read, 0 end of input or idle for idle_s, -1 broken. */
static int read_frame(int fd, struct kv_frame_parser *fp, double idle_s, double frame_s, char *err,
                      size_t errlen) {
  kv_frame_parser_init(fp, KV_JOB_BLOB_MAX);
  double start = kv_now_s(), first = 0;
  uint8_t buf[65536];
  while (!fp->done) {
    double now = kv_now_s();
    double until = first > 0 ? first + frame_s : start + idle_s;
    if (now >= until) {
      if (first > 0)
        return kv_error(err, errlen, "gate serve: a frame began but did not arrive in %.0f s",
                        frame_s);
      return 0;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int ms = (int)((until - now) * 1000) + 1;
    int r = poll(&p, 1, ms > 1000 ? 1000 : ms);
    if (r < 0 && errno != EINTR)
      return kv_error(err, errlen, "gate serve: poll: %s", strerror(errno));
    if (r <= 0)
      continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0) {
      if (first > 0)
        return kv_error(err, errlen, "gate serve: the input ended inside a frame");
      return 0;
    }
    if (first == 0)
      first = kv_now_s();
    size_t used = 0;
    while (used < (size_t)n && !fp->done && !fp->bad)
      used += kv_frame_parser_feed(fp, buf + used, (size_t)n - used);
    if (fp->bad)
      return kv_error(err, errlen,
                      "gate serve: a malformed frame (not kevo's wire format, or "
                      "beyond its caps)");
    if (fp->done && used < (size_t)n)
      return kv_error(err, errlen,
                      "gate serve: a frame arrived before the previous verdict; send "
                      "one job at a time");
  }
  return 1;
}

/* ---- judging --------------------------------------------------------------------- */

/* A bundle's file list, written beside its files: their names in the order
 * they were hashed, one a line (a name starting with a dot is never a task
 * file's, plain_name). */
#define BUNDLE_LIST ".kevo-files"

/* The files of the bundle in dir, as its list names them, with their bytes
 * (caller frees each data); the count, or -1 when the list is missing or
 * malformed, a listed file unreadable, or the directory holds anything else. */
static int bundle_read(const char *dir, struct kv_job_file *files, char *names, size_t ncap) {
  char p[PATH_MAX], err[256], *list;
  size_t len;
  snprintf(p, sizeof p, "%s/%s", dir, BUNDLE_LIST);
  if (kv_read_file(p, ncap - 1, &list, &len, err, sizeof err) < 0)
    return -1;
  memcpy(names, list, len);
  names[len] = 0;
  free(list);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(names, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
    if (n >= KV_JOB_FILES_MAX || !plain_name(t))
      return -n - 1;
    snprintf(files[n].name, sizeof files[n].name, "%s", t);
    snprintf(p, sizeof p, "%s/%s", dir, t);
    char *data;
    if (kv_read_file(p, KV_JOB_FILE_MAX, &data, &files[n].len, err, sizeof err) < 0)
      return -n - 1;
    files[n++].data = (const uint8_t *)data;
  }
  return n;
}

static void bundle_free(struct kv_job_file *files, int n) {
  for (int i = 0; i < n; i++)
    free((void *)files[i].data);
}

/* 1 when dir holds exactly the files its list names (no others) and they
 * hash to the directory's name; else 0. */
static int bundle_intact(const char *dir, const char *hash) {
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return 0;
  struct kv_job_file files[KV_JOB_FILES_MAX];
  char names[KV_JOB_FILES_MAX * (KV_JOB_NAME_MAX + 1) + 1];
  int n = bundle_read(dir, files, names, sizeof names);
  if (n <= 0) {
    bundle_free(files, n < 0 ? -n - 1 : 0);
    return 0;
  }
  char h[65];
  kv_job_bundle_hash(files, n, h);
  bundle_free(files, n);
  if (strcmp(h, hash) != 0)
    return 0;
  DIR *d = opendir(dir);
  int entries = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (d)
    closedir(d);
  return d && entries == n + 1; /* the files and the list: nothing else */
}

/* A bundle that is not what its name says (altered, extra files, no list)
 * is moved aside and removed: it is then missing, fetched again. */
static void bundle_discard(const char *root, const char *dir) {
  char stale[PATH_MAX], err[256];
  if (kv_mkdtemp(root, "stale", stale, sizeof stale, err, sizeof err) < 0)
    return;
  if (rename(dir, stale) != 0 && errno == ENOTDIR) /* a file or link in its place */
    unlink(dir);
  kv_rmtree(stale);
}

/* Writes the job's files and their list into tmp. */
static int bundle_write(const char *tmp, const struct kv_job *job, char *err, size_t errlen) {
  struct kv_buf list;
  kv_buf_init(&list, KV_JOB_FILES_MAX * (KV_JOB_NAME_MAX + 1) + 1);
  int rc = 0;
  for (int i = 0; i < job->nfiles && rc == 0; i++) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", tmp, job->files[i].name);
    rc = kv_write_file(p, job->files[i].data, job->files[i].len, err, errlen);
    kv_buf_append(&list, job->files[i].name, strlen(job->files[i].name));
    kv_buf_append(&list, "\n", 1);
  }
  if (rc == 0) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", tmp, BUNDLE_LIST);
    rc = kv_write_file(p, list.data, list.len, err, errlen);
  }
  kv_buf_release(&list);
  return rc;
}

/* The bundle's directory, written once (into a temporary directory renamed
 * into place) with its file list, and re-hashed on every use: one that is
 * not what its name says is discarded (kevo then writes the job's files, or
 * asks the client for them). 0, 1 when the server does not hold it and the
 * job did not send it, -1 with err. */
static int bundle_dir(const char *root, const struct kv_job *job, char *dir, size_t cap, char *err,
                      size_t errlen) {
  snprintf(dir, cap, "%s/%s", root, job->task_hash);
  struct stat st;
  if (lstat(dir, &st) == 0) {
    if (bundle_intact(dir, job->task_hash))
      return 0;
    bundle_discard(root, dir);
  }
  if (!job->nfiles)
    return 1;
  char tmp[PATH_MAX];
  if (kv_mkdtemp(root, "incoming", tmp, sizeof tmp, err, errlen) < 0)
    return -1;
  if (bundle_write(tmp, job, err, errlen) < 0) {
    kv_rmtree(tmp);
    return -1;
  }
  if (rename(tmp, dir) != 0 && !bundle_intact(dir, job->task_hash)) {
    int e = errno;
    kv_rmtree(tmp);
    return kv_error(err, errlen, "%s: cannot keep the task: %s", dir, strerror(e));
  }
  kv_rmtree(tmp); /* another server won the race: its copy is the same bytes */
  return 0;
}

/* serve/ must be ours and writable by no one else: what it holds is judged
 * against (the bundles are re-hashed too, bundle_intact). */
static int serve_root_trusted(const char *root, char *err, size_t errlen) {
  struct stat st;
  if (lstat(root, &st) != 0)
    return kv_error(err, errlen, "%s: %s", root, strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
    return kv_error(err, errlen,
                    "%s: not a directory of yours that only you can write (a link, another "
                    "user's, or mode %o); remove it (rm -rf %s) and kevo makes a fresh one 0700",
                    root, (unsigned)(st.st_mode & 07777), root);
  return 0;
}

/* Judges one job: the verdict's JSON (the "result" of kv_gate_result_json),
 * or NULL with err (and *need_task when the server lacks the bundle). */
static json_t *judge(const struct kv_serve_opts *so, struct kv_gate_warm *warm, const char *root,
                     const struct kv_job *job, int *need_task, char *err, size_t errlen) {
  *need_task = 0;
  char dir[PATH_MAX];
  int b = bundle_dir(root, job, dir, sizeof dir, err, errlen);
  if (b < 0)
    return NULL;
  if (b == 1) {
    *need_task = 1;
    kv_error(err, errlen, "job %s: this server does not hold task %.12s...; send its files",
             job->id, job->task_hash);
    return NULL;
  }
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, errlen) < 0)
    return NULL;
  char jobdir[PATH_MAX], cand[PATH_MAX];
  json_t *res = NULL;
  if (kv_mkdtemp(root, "job", jobdir, sizeof jobdir, err, errlen) < 0) {
    kv_task_free(t);
    return NULL;
  }
  snprintf(cand, sizeof cand, "%s/%s", jobdir, job->candidate.name);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r)
    kv_error(err, errlen, "out of memory");
  else if (kv_write_file(cand, job->candidate.data, job->candidate.len, err, errlen) == 0) {
    struct kv_gate_opts o;
    if (so->gate)
      o = *so->gate;
    else
      kv_gate_opts_default(&o);
    if (job->surface[0])
      o.surface = job->surface;
    if (job->torch_compile[0])
      o.torch_compile = job->torch_compile;
    if (job->has_seed)
      o.seed = job->seed;
    o.timing = job->timing;
    if (job->budget_s > 0)
      o.time_budget_s = job->budget_s;
    if (job->has_timing_ci)
      o.timing_ci = job->timing_ci;
    if (job->deadline_s > 0)
      o.job_deadline_s = job->deadline_s;
    o.calib = so->calib;
    o.warm = warm; /* this server's workers, kept warm from job to job */
    if (kv_gate_eval(t, cand, &o, r, err, errlen) == 0) {
      char *s = kv_gate_result_json(r);
      res = s ? json_loads(s, 0, NULL) : NULL;
      free(s);
      if (!res)
        kv_error(err, errlen, "out of memory");
    }
    kv_gate_result_release(r);
  }
  free(r);
  kv_rmtree(jobdir);
  kv_task_free(t);
  return res;
}

static int serve(int in_fd, int out_fd, const struct kv_serve_opts *so, struct kv_gate_warm *warm,
                 char *err, size_t errlen) {
  struct kv_serve_opts defaults = {0};
  if (!so)
    so = &defaults;
  double idle = so->idle_s > 0 ? so->idle_s : 3600, frame = so->frame_s > 0 ? so->frame_s : 60;
  char root[PATH_MAX], cache[PATH_MAX];
  if (so->cache_dir)
    snprintf(cache, sizeof cache, "%s", so->cache_dir);
  else if (so->gate && so->gate->cache_dir)
    snprintf(cache, sizeof cache, "%s", so->gate->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    return kv_error(err, errlen, "gate serve: no cache directory; set KEVO_CACHE_DIR or HOME");
  snprintf(root, sizeof root, "%s/serve", cache);
  if (kv_mkdirs(root, 0700, err, errlen) < 0 || serve_root_trusted(root, err, errlen) < 0)
    return -1;
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  json_t *hello = json_pack("{s:s,s:i,s:s,s:I}", "kevo", KEVO_VERSION, "protocol", KV_GATE_PROTOCOL,
                            "host", host, "pid", (json_int_t)getpid());
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  if (hello && cvd)
    json_object_set_new(hello, "cuda_visible_devices", json_stringn(cvd, strnlen(cvd, 63)));
  if (hello && so->device)
    json_object_set_new(hello, "device", json_string(so->device));
  if (send_json(out_fd, KV_GATE_HELLO, 0, hello, err, errlen) < 0)
    return -1;
  for (;;) {
    struct kv_frame_parser fp;
    int got = read_frame(in_fd, &fp, idle, frame, err, errlen);
    if (got <= 0) {
      kv_frame_parser_release(&fp);
      return got;
    }
    uint32_t type = fp.h.type;
    uint64_t token = fp.h.token;
    if (type == KV_GATE_QUIT) {
      kv_frame_parser_release(&fp);
      return 0;
    }
    json_t *reply;
    char e[4096] = "";
    if (type != KV_GATE_EVAL) {
      reply =
          json_pack("{s:s,s:s}", "id", "", "error", "gate serve: expected an EVAL or QUIT frame");
    } else {
      struct kv_job job;
      int need = 0;
      json_t *res = NULL;
      if (kv_job_parse(fp.json, fp.blob, fp.h.blob_len, &job, e, sizeof e) == 0)
        res = judge(so, warm, root, &job, &need, e, sizeof e);
      if (res)
        reply = json_pack("{s:s,s:o}", "id", job.id, "result", res);
      else {
        reply = json_pack("{s:s,s:s}", "id", job.id, "error", e);
        if (need)
          json_object_set_new(reply, "need_task", json_true());
      }
    }
    kv_frame_parser_release(&fp);
    if (send_json(out_fd, KV_GATE_VERDICT, token, reply, err, errlen) < 0)
      return -1;
  }
}

int kv_gate_serve(int in_fd, int out_fd, const struct kv_serve_opts *so, char *err, size_t errlen) {
  struct kv_gate_warm *warm = kv_gate_warm_new(); /* NULL: none kept warm */
  int rc = serve(in_fd, out_fd, so, warm, err, errlen);
  kv_gate_warm_free(warm);
  return rc;
}
