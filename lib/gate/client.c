/* The parent's side of kevo-worker: start, call with a deadline, stop. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/wire.h"

static void close_fd(int *fd) {
  if (*fd >= 0)
    close(*fd);
  *fd = -1;
}

static void reap(struct kv_worker *w, int force) {
  if (w->pid <= 0)
    return;
  if (force) {
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL);
  }
  int st = 0;
  pid_t r = -1;
  /* A worker whose channel closed is exiting; give it a moment, then kill. */
  for (int i = 0; i < 200; i++) {
    r = waitpid(w->pid, &st, WNOHANG);
    if (r != 0)
      break;
    usleep(5000);
  }
  if (r == 0) {
    kill(-w->pid, SIGKILL);
    kill(w->pid, SIGKILL);
    r = waitpid(w->pid, &st, 0);
  }
  if (!w->death[0] && r == w->pid) {
    struct kv_proc_result pr = {0};
    pr.exited = WIFEXITED(st);
    pr.status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    pr.signaled = WIFSIGNALED(st);
    pr.sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    kv_proc_describe(&pr, w->death, sizeof w->death);
  }
  w->pid = -1;
  w->alive = 0;
  close_fd(&w->req_fd);
  close_fd(&w->resp_fd);
}

static void drain(int *fd, struct kv_buf *b) {
  char chunk[65536];
  for (int i = 0; i < 16 && *fd >= 0; i++) {
    ssize_t n = read(*fd, chunk, sizeof chunk);
    if (n > 0) {
      kv_buf_append(b, chunk, (size_t)n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR))
      close_fd(fd);
    break;
  }
}

/* Waits for one frame on resp_fd while draining stdout/stderr and writing the
 * pending request bytes. */
static enum kv_call_status pump(struct kv_worker *w, const uint8_t *out, size_t outlen,
                                double deadline, struct kv_frame_parser *fp) {
  size_t sent = 0;
  uint8_t chunk[1 << 16];
  for (;;) {
    double left = deadline - kv_now_s();
    if (left <= 0)
      return KV_CALL_TIMEOUT;
    struct pollfd p[4];
    int np = 0;
    int ireq = -1, iresp = -1, iout = -1, ierr = -1;
    if (sent < outlen && w->req_fd >= 0) {
      p[np] = (struct pollfd){.fd = w->req_fd, .events = POLLOUT};
      ireq = np++;
    }
    if (w->resp_fd >= 0) {
      p[np] = (struct pollfd){.fd = w->resp_fd, .events = POLLIN};
      iresp = np++;
    }
    if (w->out_fd >= 0) {
      p[np] = (struct pollfd){.fd = w->out_fd, .events = POLLIN};
      iout = np++;
    }
    if (w->err_fd >= 0) {
      p[np] = (struct pollfd){.fd = w->err_fd, .events = POLLIN};
      ierr = np++;
    }
    if (iresp < 0)
      return KV_CALL_DIED;
    int ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
    int rc = poll(p, (nfds_t)np, ms);
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      return KV_CALL_DIED;
    }
    if (ireq >= 0 && (p[ireq].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = kv_write_nosigpipe(w->req_fd, out + sent, outlen - sent);
      if (n > 0)
        sent += (size_t)n;
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        return KV_CALL_DIED;
    }
    if (iout >= 0 && (p[iout].revents & (POLLIN | POLLHUP | POLLERR)))
      drain(&w->out_fd, &w->out);
    if (ierr >= 0 && (p[ierr].revents & (POLLIN | POLLHUP | POLLERR)))
      drain(&w->err_fd, &w->err);
    if (iresp >= 0 && (p[iresp].revents & (POLLIN | POLLHUP | POLLERR))) {
      for (int i = 0; i < 64; i++) {
        ssize_t n = read(w->resp_fd, chunk, sizeof chunk);
        if (n > 0) {
          size_t used = 0;
          while (used < (size_t)n && !fp->done && !fp->bad)
            used += kv_frame_parser_feed(fp, chunk + used, (size_t)n - used);
          if (fp->bad)
            return KV_CALL_PROTOCOL;
          if (fp->done) {
            /* Anything after the frame is junk nobody asked for. */
            if (used < (size_t)n)
              return KV_CALL_PROTOCOL;
            return KV_CALL_OK;
          }
          continue;
        }
        if (n == 0)
          return KV_CALL_DIED;
        if (errno == EAGAIN)
          break;
        if (errno != EINTR)
          return KV_CALL_DIED;
      }
    }
  }
}

/* The worker's whole environment: nothing of kevo's own (no API keys). */
struct worker_env {
  char home[4200], tmp[4200], omp[64], ldpath[4200], visible[256], inductor[4300], triton[4300];
  char *env[28];
};

static void worker_env(struct worker_env *we, const char *scratch, int cuda, int torch,
                       const char *torch_cache) {
  int n = 0;
  we->env[n++] = "PATH=/usr/bin:/bin";
  we->env[n++] = "LANG=C";
  snprintf(we->home, sizeof we->home, "HOME=%s", scratch);
  snprintf(we->tmp, sizeof we->tmp, "TMPDIR=%s", scratch);
  we->env[n++] = we->home;
  we->env[n++] = we->tmp;
  /* OpenMP threads sleep between parallel regions instead of spinning: a
   * call's threads must not go on burning cores once it has returned (kevo's
   * clock charges whatever runs beside the next phase to the candidate). */
  we->env[n++] = "OMP_WAIT_POLICY=PASSIVE";
  const char *o = getenv("OMP_NUM_THREADS");
  if (o && strlen(o) < 16) {
    snprintf(we->omp, sizeof we->omp, "OMP_NUM_THREADS=%s", o);
    we->env[n++] = we->omp;
  }
  if (cuda) {
    /* Where the driver and vendor libraries live, which GPU, in nvidia-smi's
     * order; no JIT cache writes. */
    const char *l = getenv("LD_LIBRARY_PATH");
    if (l && strlen(l) < 4000) {
      snprintf(we->ldpath, sizeof we->ldpath, "LD_LIBRARY_PATH=%s", l);
      we->env[n++] = we->ldpath;
    }
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (v && strlen(v) < 200) {
      snprintf(we->visible, sizeof we->visible, "CUDA_VISIBLE_DEVICES=%s", v);
      we->env[n++] = we->visible;
    }
    we->env[n++] = "CUDA_DEVICE_ORDER=PCI_BUS_ID";
    we->env[n++] = "CUDA_CACHE_DISABLE=1";
  }
  if (torch) {
    /* Python: no bytecode written, no user site; on the cpu surface torch
     * sees no GPU. */
    we->env[n++] = "PYTHONDONTWRITEBYTECODE=1";
    we->env[n++] = "PYTHONNOUSERSITE=1";
    if (!cuda)
      we->env[n++] = "CUDA_VISIBLE_DEVICES=";
    /* torch.compile (a baseline): its code cache (and Triton's, on the GPU)
     * outlives the worker, and it compiles in the worker's own process (no
     * pool of compile processes). */
    if (torch_cache && strlen(torch_cache) < 4000) {
      snprintf(we->inductor, sizeof we->inductor, "TORCHINDUCTOR_CACHE_DIR=%s/torchinductor",
               torch_cache);
      we->env[n++] = we->inductor;
      snprintf(we->triton, sizeof we->triton, "TRITON_CACHE_DIR=%s/triton", torch_cache);
      we->env[n++] = we->triton;
    }
    we->env[n++] = "TORCHINDUCTOR_COMPILE_THREADS=1";
    /* The user's explicit consent to a torch worker with the network where
     * no network namespace can be made (kevo_torch_worker.py refuses else). */
    const char *net = getenv("KEVO_TORCH_ALLOW_NETWORK");
    if (net && strcmp(net, "1") == 0)
      we->env[n++] = "KEVO_TORCH_ALLOW_NETWORK=1";
  }
#ifdef KEVO_SANITIZED
  /* LeakSanitizer needs ptrace, which the sandbox forbids. */
  we->env[n++] = "ASAN_OPTIONS=detect_leaks=0";
#endif
  we->env[n] = NULL;
}

/* A start that failed half-way leaves no descriptor and no scratch behind. */
static void start_cleanup(struct kv_worker *w, int pipes[4][2]) {
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      close_fd(&pipes[i][j]);
  if (w->scratch[0])
    kv_rmtree(w->scratch);
  w->scratch[0] = 0;
  close_fd(&w->shm_fd);
  close_fd(&w->chk_fd);
  kv_buf_release(&w->out);
  kv_buf_release(&w->err);
}

int kv_worker_start(struct kv_worker *w, const struct kv_worker_spec *spec, char *err,
                    size_t errlen) {
  if (kv_worker_spawn(w, spec, err, errlen) < 0)
    return -1;
  return kv_worker_hello(w, err, errlen);
}

int kv_worker_spawn(struct kv_worker *w, const struct kv_worker_spec *spec, char *err,
                    size_t errlen) {
  memset(w, 0, sizeof(*w));
  w->pid = -1;
  w->req_fd = w->resp_fd = w->out_fd = w->err_fd = w->shm_fd = w->chk_fd = -1;
  kv_buf_init(&w->out, KV_OUTPUT_CAP);
  kv_buf_init(&w->err, KV_OUTPUT_CAP);
  const char *exe = spec->python ? spec->python : spec->worker_path;
  if (access(exe, X_OK) != 0)
    return kv_error(err, errlen,
                    spec->python ? "%s: cannot run the torch reference worker's Python; set "
                                   "KEVO_PYTHON"
                                 : "%s: the worker executable is missing; run 'make' or set "
                                   "KEVO_WORKER",
                    exe);
  if (spec->python && kv_torch_cache_check(spec->torch_cache, err, errlen) < 0)
    return -1;
  if (kv_mkdtemp(spec->scratch_base, "worker", w->scratch, sizeof w->scratch, err, errlen) < 0)
    return -1;
  int pipes[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
  w->shm_fd = memfd_create("kevo-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  w->chk_fd = memfd_create("kevo-check", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (w->shm_fd < 0 || w->chk_fd < 0) {
    int e = errno;
    start_cleanup(w, pipes);
    return kv_error(err, errlen, "memfd_create: %s", strerror(e));
  }
  int *req = pipes[0], *resp = pipes[1], *out = pipes[2], *er = pipes[3];
  for (int i = 0; i < 4; i++)
    if (pipe2(pipes[i], O_CLOEXEC) < 0) {
      int e = errno;
      start_cleanup(w, pipes);
      return kv_error(err, errlen, "pipe: %s", strerror(e));
    }
  /* Replies carry outputs of up to hundreds of MiB (a validated timed call):
   * a 1 MiB pipe moves them in 16x fewer wake-ups than the default 64 KiB.
   * Best effort: a smaller limit (/proc/sys/fs/pipe-max-size) keeps the default. */
  fcntl(resp[1], F_SETPIPE_SZ, 1 << 20);
  char *argv[16 + 2 * 8 + 48];
  int a = 0;
  for (int i = 0; spec->wrap && spec->wrap[i] && i < 32; i++)
    argv[a++] = (char *)spec->wrap[i];
  argv[a++] = (char *)exe;
  if (spec->python) {
    argv[a++] = "-B";
    argv[a++] = (char *)spec->script;
    argv[a++] = "--rt";
    argv[a++] = (char *)spec->rtlib;
  }
  argv[a++] = "--scratch";
  argv[a++] = w->scratch;
  int cuda = kv_surface_gpu(kv_surface_find(spec->surface));
  if (spec->surface) {
    argv[a++] = "--surface";
    argv[a++] = (char *)spec->surface;
  }
  for (int i = 0; i < spec->nread && i < 8; i++) {
    argv[a++] = "--read";
    argv[a++] = (char *)spec->read_paths[i];
  }
  if (!spec->sandbox)
    argv[a++] = "--no-sandbox";
  for (int i = 0; spec->without && spec->without[i] && i < 7; i++) {
    argv[a++] = "--without";
    argv[a++] = (char *)spec->without[i];
  }
  argv[a] = NULL;
  struct worker_env *we = malloc(sizeof *we);
  if (!we) {
    start_cleanup(w, pipes);
    return kv_error(err, errlen, "out of memory");
  }
  worker_env(we, w->scratch, cuda, spec->python != NULL, spec->torch_cache);
  char **envp = we->env;
  for (int n = 0, i = 0; spec->extra_env && spec->extra_env[i] && i < 8; i++) {
    while (envp[n])
      n++;
    if (n + 1 < (int)(sizeof we->env / sizeof we->env[0]))
      envp[n++] = (char *)spec->extra_env[i], envp[n] = NULL;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    free(we);
    start_cleanup(w, pipes);
    return kv_error(err, errlen, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    /* Dies with kevo (with the thread that forked it, in fact: see
     * internal.h), even stopped; and at once if kevo died already. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(126);
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    /* Move everything above 6 first so the dup2s below cannot clobber. */
    int fds[7] = {devnull, out[1], er[1], req[0], resp[1], w->shm_fd, w->chk_fd};
    for (int i = 0; i < 7; i++) {
      int f = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
      fds[i] = f;
    }
    for (int i = 0; i < 7; i++)
      if (fds[i] < 0 || dup2(fds[i], i) < 0)
        _exit(126);
    close_range(7, ~0U, 0);
    if (chdir(w->scratch) < 0)
      _exit(126);
    execve(spec->wrap && spec->wrap[0] ? spec->wrap[0] : exe, argv, envp);
    _exit(127);
  }
  setpgid(pid, pid);
  free(we);
  close(req[0]);
  close(resp[1]);
  close(out[1]);
  close(er[1]);
  w->pid = pid;
  w->req_fd = req[1];
  w->resp_fd = resp[0];
  w->out_fd = out[0];
  w->err_fd = er[0];
  fcntl(w->req_fd, F_SETFL, O_NONBLOCK);
  fcntl(w->resp_fd, F_SETFL, O_NONBLOCK);
  fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
  fcntl(w->err_fd, F_SETFL, O_NONBLOCK);
  w->alive = 1;
  w->start_deadline = kv_now_s() + (spec->start_deadline_s > 0 ? spec->start_deadline_s : 10);
  snprintf(w->name, sizeof w->name, "%s", spec->python ? spec->script : spec->worker_path);
  return 0;
}

int kv_worker_hello(struct kv_worker *w, char *err, size_t errlen) {
  struct kv_frame_parser fp;
  kv_frame_parser_init(&fp, 0);
  enum kv_call_status s = pump(w, NULL, 0, w->start_deadline, &fp);
  if (s != KV_CALL_OK || fp.h.type != KV_MSG_HELLO) {
    kv_frame_parser_release(&fp);
    reap(w, 1);
    kv_error(err, errlen, "%s: the worker did not start (%s)%s%s", w->name,
             w->death[0] ? w->death : "no hello", w->err.len ? ": " : "",
             w->err.len ? w->err.data : "");
    kv_worker_stop(w); /* its descriptors, scratch and captured output go too */
    return -1;
  }
  w->hello = json_loads(fp.json, 0, NULL);
  kv_frame_parser_release(&fp);
  return 0;
}

enum kv_call_status kv_worker_call(struct kv_worker *w, uint32_t type, json_t *req,
                                   double deadline_s, json_t **reply, uint8_t **blob,
                                   uint64_t want_blob, char *detail, size_t detlen) {
  *reply = NULL;
  if (blob)
    *blob = NULL;
  detail[0] = 0;
  if (!w->alive) {
    snprintf(detail, detlen, "the worker is not running");
    return KV_CALL_DIED;
  }
  kv_worker_resume(w);
  uint64_t token = kv_random_u64();
  char *js = json_dumps(req, JSON_COMPACT);
  size_t jl = js ? strlen(js) : 0;
  size_t total = KV_WIRE_HEADER + jl;
  uint8_t *frame = malloc(total);
  if (!frame || !js) {
    free(frame);
    free(js);
    snprintf(detail, detlen, "out of memory");
    return KV_CALL_PROTOCOL;
  }
  struct kv_frame_header h = {KV_WIRE_MAGIC, type, token, (uint32_t)jl, 0};
  kv_wire_pack_header(&h, frame);
  memcpy(frame + KV_WIRE_HEADER, js, jl);
  free(js);
  struct kv_frame_parser fp;
  kv_frame_parser_init(&fp, want_blob);
  double t0 = kv_now_s();
  enum kv_call_status s = pump(w, frame, total, t0 + deadline_s, &fp);
  free(frame);
  if (s == KV_CALL_OK) {
    if (fp.h.token != token) {
      s = KV_CALL_PROTOCOL;
      snprintf(detail, detlen, "the worker replied with a forged or stale job token");
    } else if (fp.h.type != KV_MSG_REPLY && fp.h.type != KV_MSG_ERROR) {
      s = KV_CALL_PROTOCOL;
      snprintf(detail, detlen, "the worker replied with an unexpected frame type %u", fp.h.type);
    } else if (!(*reply = json_loads(fp.json, 0, NULL)) || !json_is_object(*reply)) {
      json_decref(*reply);
      *reply = NULL;
      s = KV_CALL_PROTOCOL;
      snprintf(detail, detlen, "the worker's reply is not a JSON object");
    } else if (fp.h.type == KV_MSG_ERROR) {
      s = KV_CALL_ERROR;
      const char *e = json_string_value(json_object_get(*reply, "error"));
      snprintf(detail, detlen, "%s", e ? e : "unspecified error");
      /* A sticky CUDA error leaves the worker unusable: it exits, and is
       * replaced for the next job. */
      if (json_is_true(json_object_get(*reply, "fatal"))) {
        snprintf(w->death, sizeof w->death, "exited after a fatal error: %.200s",
                 e ? e : "unspecified");
        reap(w, 0);
      }
    } else if (fp.h.blob_len != want_blob) {
      s = KV_CALL_PROTOCOL;
      snprintf(detail, detlen, "the worker returned %llu bytes of results, expected %llu",
               (unsigned long long)fp.h.blob_len, (unsigned long long)want_blob);
      json_decref(*reply);
      *reply = NULL;
    } else if (blob) {
      *blob = fp.blob;
      fp.blob = NULL;
    }
  }
  kv_frame_parser_release(&fp);
  if (s == KV_CALL_TIMEOUT) {
    reap(w, 1);
    snprintf(detail, detlen, "no answer within %.1f s: the worker was killed", deadline_s);
    snprintf(w->death, sizeof w->death, "killed at the %.1f s deadline", deadline_s);
  } else if (s == KV_CALL_DIED) {
    reap(w, 0);
    snprintf(detail, detlen, "the worker %s during the job", w->death[0] ? w->death : "died");
  } else if (s == KV_CALL_PROTOCOL) {
    if (!detail[0])
      snprintf(detail, detlen, "the worker sent a malformed frame (forged output on its channel?)");
    reap(w, 1);
  }
  /* Collect what the candidate printed so far. */
  drain(&w->out_fd, &w->out);
  drain(&w->err_fd, &w->err);
  return s;
}

int kv_worker_pause(struct kv_worker *w) {
  if (!w->alive || w->pid <= 0)
    return -1;
  if (w->paused)
    return 0;
  if (kill(w->pid, SIGSTOP) < 0)
    return -1;
  /* Stopped for certain before the caller goes on: waitpid reports it. */
  int st;
  double give_up = kv_now_s() + 5;
  for (;;) {
    pid_t r = waitpid(w->pid, &st, WUNTRACED | WNOHANG);
    if (r == w->pid && WIFSTOPPED(st))
      break;
    if (r == w->pid) { /* it died meanwhile */
      w->alive = 0;
      snprintf(w->death, sizeof w->death, "died while being stopped");
      w->pid = -1;
      return -1;
    }
    if (r < 0 || kv_now_s() > give_up)
      return -1;
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  w->paused = 1;
  return 0;
}

/* Sizes (once) and maps a memfd shared with the worker. Sealed, so that a
 * worker can neither shrink it under our mapping nor grow it. */
static uint8_t *shared_map(int fd, uint8_t **map, size_t *maplen, size_t len, const char *what,
                           char *err, size_t errlen) {
  if (*map && len <= *maplen)
    return *map;
  if (*map) {
    kv_error(err, errlen, "the %s are already sized (%zu bytes, %zu asked)", what, *maplen, len);
    return NULL;
  }
  if (fd < 0 || len == 0 || ftruncate(fd, (off_t)len) < 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    kv_error(err, errlen, "sizing the %s (%zu bytes): %s", what, len, strerror(errno));
    return NULL;
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    kv_error(err, errlen, "mapping the %s (%zu bytes): %s", what, len, strerror(errno));
    return NULL;
  }
  *map = p;
  *maplen = len;
  return p;
}

uint8_t *kv_worker_shm(struct kv_worker *w, size_t len, char *err, size_t errlen) {
  if (w->shm && w->shm_len != len) {
    kv_error(err, errlen, "the shared buffers are already sized (%zu bytes)", w->shm_len);
    return NULL;
  }
  return shared_map(w->shm_fd, &w->shm, &w->shm_len, len, "shared buffers", err, errlen);
}

uint8_t *kv_worker_chk(struct kv_worker *w, size_t len, char *err, size_t errlen) {
  return shared_map(w->chk_fd, &w->chk, &w->chk_len, len, "check buffers", err, errlen);
}

int kv_worker_resume(struct kv_worker *w) {
  if (!w->paused || w->pid <= 0)
    return 0;
  w->paused = 0;
  return kill(w->pid, SIGCONT);
}

static void worker_stop(struct kv_worker *w, int keep_output) {
  if (w->pid > 0) {
    if (w->req_fd >= 0) {
      struct kv_frame_header h = {KV_WIRE_MAGIC, KV_MSG_QUIT, 0, 0, 0};
      uint8_t hdr[KV_WIRE_HEADER];
      kv_wire_pack_header(&h, hdr);
      ssize_t n = kv_write_nosigpipe(w->req_fd, hdr, sizeof hdr);
      (void)n;
    }
    reap(w, 1);
  }
  drain(&w->out_fd, &w->out);
  drain(&w->err_fd, &w->err);
  close_fd(&w->out_fd);
  close_fd(&w->err_fd);
  close_fd(&w->req_fd);
  close_fd(&w->resp_fd);
  if (w->shm)
    munmap(w->shm, w->shm_len);
  w->shm = NULL;
  w->shm_len = 0;
  close_fd(&w->shm_fd);
  if (w->chk)
    munmap(w->chk, w->chk_len);
  w->chk = NULL;
  w->chk_len = 0;
  close_fd(&w->chk_fd);
  if (w->scratch[0])
    kv_rmtree(w->scratch);
  w->scratch[0] = 0;
  json_decref(w->hello);
  w->hello = NULL;
  if (!keep_output) {
    kv_buf_release(&w->out);
    kv_buf_release(&w->err);
  }
}

void kv_worker_stop(struct kv_worker *w) {
  worker_stop(w, 0);
}

static void *reaper_main(void *arg) {
  int st;
  waitpid((pid_t)(intptr_t)arg, &st, 0);
  return NULL;
}

void kv_worker_stop_nowait(struct kv_worker *w) {
  if (w->pid > 0) {
    kv_worker_kill(w);
    pthread_attr_t a;
    pthread_t th;
    int made = pthread_attr_init(&a) == 0;
    made = made && pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
           pthread_create(&th, &a, reaper_main, (void *)(intptr_t)w->pid) == 0;
    if (made)
      w->pid = -1; /* reaped there; else below, waiting */
    pthread_attr_destroy(&a);
  }
  worker_stop(w, 0);
}

void kv_worker_kill(struct kv_worker *w) {
  if (w->pid <= 0)
    return;
  kill(-w->pid, SIGKILL);
  kill(w->pid, SIGKILL);
  w->alive = 0;
}

void kv_worker_stop_keep_output(struct kv_worker *w) {
  worker_stop(w, 1);
}

static enum kv_layer_state layer(json_t *hello, const char *k) {
  const char *s = json_string_value(json_object_get(hello, k));
  if (!s)
    return KV_LAYER_OFF;
  for (int i = 0; i <= KV_LAYER_FAILED; i++)
    if (!strcmp(s, kv_layer_state_name((enum kv_layer_state)i)))
      return (enum kv_layer_state)i;
  return KV_LAYER_FAILED;
}

void kv_sandbox_status_from_hello(json_t *hello, struct kv_sandbox_status *st) {
  memset(st, 0, sizeof(*st));
  st->no_new_privs = layer(hello, "no_new_privs");
  st->netns = layer(hello, "netns");
  st->landlock = layer(hello, "landlock");
  st->seccomp = layer(hello, "seccomp");
  st->rlimits = layer(hello, "rlimits");
  st->scratch = layer(hello, "scratch");
  st->scratch_bytes = (uint64_t)json_integer_value(json_object_get(hello, "scratch_bytes"));
  st->scratch_inodes = (uint64_t)json_integer_value(json_object_get(hello, "scratch_inodes"));
  st->file_limit_bytes = (uint64_t)json_integer_value(json_object_get(hello, "file_limit_bytes"));
  st->landlock_abi = (int)json_integer_value(json_object_get(hello, "landlock_abi"));
  const char *n = json_string_value(json_object_get(hello, "note"));
  snprintf(st->note, sizeof st->note, "%s", n ? n : "");
}
