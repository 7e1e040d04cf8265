/* Tests of the worker sandbox. Each test forks a child that enters the
 * sandbox and then attacks: the child reports what each attempt returned over
 * a pipe, and the parent checks the attack failed and left no trace (no file,
 * no connection, no signal received). Per-layer tests show each layer stops
 * its attacks on its own. */
#include "kevo/sandbox.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <omp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <link.h>
#include <setjmp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <seccomp.h>
#include <sys/resource.h>
#include <sys/msg.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define SECRET_NAME "KEVO_SBX_SECRET"
#define SECRET_VALUE "sk-kevo-sandbox-test-7f3a9c"

extern char **environ;

/* ---- harness ---- */

#define NRES 32

struct res {
  struct kv_sandbox_status st;
  long v[NRES]; /* return values */
  int e[NRES];  /* errno after each */
  char text[256];
};

/* Records a result: its value and errno (0 when it succeeded). */
#define R(r, i, expr)                                                                              \
  do {                                                                                             \
    errno = 0;                                                                                     \
    (r)->v[i] = (long)(expr);                                                                      \
    (r)->e[i] = errno;                                                                             \
  } while (0)

typedef void (*probe_fn)(void *ctx, struct res *r);

struct fixture {
  char scratch[64];
  char objects[64]; /* where built objects live (read only to the child) */
  char outside[64];
  char outside_dir[80];
};

static struct fixture fx;

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static int setup(void **state) {
  (void)state;
  snprintf(fx.scratch, sizeof fx.scratch, "/tmp/kevo-sbx-scratch-XXXXXX");
  if (!mkdtemp(fx.scratch))
    return -1;
  snprintf(fx.objects, sizeof fx.objects, "/tmp/kevo-sbx-objects-XXXXXX");
  if (!mkdtemp(fx.objects))
    return -1;
  snprintf(fx.outside, sizeof fx.outside, "/tmp/kevo-sbx-test-%ld", (long)getpid());
  unlink(fx.outside);
  snprintf(fx.outside_dir, sizeof fx.outside_dir, "%s.d", fx.outside);
  rmdir(fx.outside_dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  nftw(fx.scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  nftw(fx.objects, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  unlink(fx.outside);
  rmdir(fx.outside_dir);
  return 0;
}

/* Forks, enters the sandbox with `o` in the child (o == NULL: no sandbox),
 * runs `fn`, ships the results back. Returns the child's wait status. */
static int run_child(const struct kv_sandbox_opts *o, probe_fn fn, void *ctx, struct res *out) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    static struct res r;
    memset(&r, 0, sizeof r);
    if (o)
      kv_sandbox_enter(o, &r.st);
    fn(ctx, &r);
    ssize_t w = write(p[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 3);
  }
  close(p[1]);
  memset(out, 0, sizeof *out);
  size_t got = 0;
  while (got < sizeof *out) {
    ssize_t n = read(p[0], (char *)out + got, sizeof *out - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
  }
  close(p[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (got != sizeof *out)
    memset(out, 0, sizeof *out);
  return status;
}

static void expect_clean_exit(int status, const struct res *r) {
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("child did not exit cleanly (status 0x%x); note: %s", status, r->st.note);
}

/* Asserts result i failed with errno `err`. */
static void expect_fail(const struct res *r, int i, int err, const char *what) {
  if (r->v[i] != -1 || r->e[i] != err)
    fail_msg("%s: want -1/%s, got %ld/%s", what, strerror(err), r->v[i], strerror(r->e[i]));
}

static void expect_ok(const struct res *r, int i, const char *what) {
  if (r->v[i] < 0)
    fail_msg("%s: failed: %s", what, strerror(r->e[i]));
}

/* What kevo-worker applies. */
static void opts_all(struct kv_sandbox_opts *o) {
  kv_sandbox_worker_defaults(o, fx.scratch);
}

static void opts_only(struct kv_sandbox_opts *o, int netns, int landlock, int seccomp,
                      int rlimits) {
  kv_sandbox_defaults(o, fx.scratch);
  o->netns = netns;
  o->landlock = landlock;
  o->seccomp = seccomp;
  o->rlimits = rlimits;
}

/* A loopback TCP listener in the parent and an unconnected socket the child
 * inherits (it cannot make one when socket() is denied). */
struct net_ctx {
  int listener;
  int client;
  int port;
  int skip_inherited; /* a socket made before the netns keeps its namespace */
};

static void net_open(struct net_ctx *n) {
  n->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(n->listener >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(n->listener, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(n->listener, 4), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(n->listener, (struct sockaddr *)&a, &len), 0);
  n->port = ntohs(a.sin_port);
  n->client = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(n->client >= 0);
  n->skip_inherited = 0;
}

static int net_connect(int fd, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  return connect(fd, (struct sockaddr *)&a, sizeof a);
}

/* True when the listener got no connection attempt. */
static int net_untouched(struct net_ctx *n) {
  struct pollfd pf = {.fd = n->listener, .events = POLLIN};
  int rc = poll(&pf, 1, 300);
  close(n->listener);
  close(n->client);
  return rc == 0;
}

/* Signals the parent counts: a successful kill from the child shows here. */
static volatile sig_atomic_t got_term, got_urg;

static void on_signal(int sig) {
  if (sig == SIGTERM)
    got_term++;
  else if (sig == SIGURG)
    got_urg++;
}

static void catch_signals(struct sigaction *old_term, struct sigaction *old_urg) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  got_term = got_urg = 0;
  sigaction(SIGTERM, &sa, old_term);
  sigaction(SIGURG, &sa, old_urg);
}

static void restore_signals(const struct sigaction *old_term, const struct sigaction *old_urg) {
  sigaction(SIGTERM, old_term, NULL);
  sigaction(SIGURG, old_urg, NULL);
}

static int read_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t got = 0;
  ssize_t n;
  while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
    got += (size_t)n;
  close(fd);
  buf[got] = 0;
  return (int)got;
}

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Does /proc/<ppid>/environ hold the secret? 1 yes, 0 no, -1 unreadable. */
static int parent_environ_has_secret(void) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/environ", (long)getppid());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  static char buf[1 << 16];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n < 0)
    return -1;
  return memmem(buf, (size_t)n, SECRET_VALUE, strlen(SECRET_VALUE)) != NULL;
}

/* ---- status ---- */

static void probe_nothing(void *ctx, struct res *r) {
  (void)ctx;
  (void)r;
}

static void test_status_all_active(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_nothing, NULL, &r);
  expect_clean_exit(status, &r);
  print_message("sandbox: nnp=%s netns=%s landlock=%s (abi %d) seccomp=%s rlimits=%s "
                "scratch=%s (%llu bytes, %llu inodes) note='%s'\n",
                kv_layer_state_name(r.st.no_new_privs), kv_layer_state_name(r.st.netns),
                kv_layer_state_name(r.st.landlock), r.st.landlock_abi,
                kv_layer_state_name(r.st.seccomp), kv_layer_state_name(r.st.rlimits),
                kv_layer_state_name(r.st.scratch), (unsigned long long)r.st.scratch_bytes,
                (unsigned long long)r.st.scratch_inodes, r.st.note);
  assert_int_equal(r.st.no_new_privs, KV_LAYER_ACTIVE);
  assert_int_equal(r.st.netns, KV_LAYER_ACTIVE);
  /* Where a network namespace can be made, so can a mount namespace. */
  assert_int_equal(r.st.scratch, KV_LAYER_ACTIVE);
  assert_true(r.st.scratch_bytes == KV_SCRATCH_BYTES);
  assert_true(r.st.scratch_inodes == KV_SCRATCH_INODES);
  assert_true(r.st.file_limit_bytes == 64ULL << 20);
  assert_int_equal(r.st.exec_lock, KV_LAYER_OFF);
  assert_int_equal(r.st.landlock, KV_LAYER_ACTIVE);
  assert_int_equal(r.st.seccomp, KV_LAYER_ACTIVE);
  assert_int_equal(r.st.rlimits, KV_LAYER_ACTIVE);
  assert_true(r.st.landlock_abi >= 1);
}

static void test_defaults_and_names(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  kv_sandbox_defaults(&o, "/x");
  assert_string_equal(o.scratch_dir, "/x");
  assert_true(o.netns && o.landlock && o.seccomp && o.rlimits);
  assert_true(o.mem_limit_bytes == 16ULL << 30);
  assert_true(o.file_limit_bytes == 64ULL << 20);
  assert_int_equal(o.cpu_seconds, 600);
  /* The compiler's sandbox writes its outputs to its directory: no tmpfs. */
  assert_true(o.scratch_bytes == 0);
  assert_int_equal(o.thread_names, 0);
  kv_sandbox_worker_defaults(&o, "/x");
  assert_true(o.scratch_bytes == KV_SCRATCH_BYTES && o.scratch_inodes == KV_SCRATCH_INODES);
  assert_true(o.netns && o.landlock && o.seccomp && o.rlimits);
  assert_string_equal(kv_layer_state_name(KV_LAYER_ACTIVE), "active");
  assert_string_equal(kv_layer_state_name(KV_LAYER_OFF), "off");
  assert_string_equal(kv_layer_state_name(KV_LAYER_UNAVAILABLE), "unavailable");
  assert_string_equal(kv_layer_state_name(KV_LAYER_FAILED), "failed");
  /* Everything off: nothing applied, nothing reported. */
  opts_only(&o, 0, 0, 0, 0);
  struct res r;
  int status = run_child(&o, probe_nothing, NULL, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.st.no_new_privs, KV_LAYER_OFF);
  assert_int_equal(r.st.landlock, KV_LAYER_OFF);
  assert_int_equal(r.st.seccomp, KV_LAYER_OFF);
  assert_int_equal(r.st.scratch, KV_LAYER_OFF);
}

/* ---- process creation ---- */

static void probe_spawn(void *ctx, struct res *r) {
  (void)ctx;
  pid_t pid;
  R(r, 0, pid = fork());
  if (pid == 0)
    _exit(0); /* the attack worked: the parent sees v[0] == 0 */
  char *const argv[] = {"/bin/true", NULL};
  R(r, 1, execve("/bin/true", argv, environ));
  R(r, 2, syscall(SYS_clone3, NULL, 0));
  R(r, 3, pid = (pid_t)syscall(SYS_vfork));
  if (pid == 0)
    _exit(0);
  R(r, 4, ptrace(PTRACE_ATTACH, getppid(), NULL, NULL));
  R(r, 5, unshare(CLONE_NEWNS));
  R(r, 6, setsid());
  R(r, 7, execveat(AT_FDCWD, "/bin/true", argv, environ, 0));
}

static void test_no_process_creation(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_spawn, NULL, &r);
  expect_clean_exit(status, &r);
  expect_fail(&r, 0, EPERM, "fork");
  expect_fail(&r, 1, EPERM, "execve");
  expect_fail(&r, 2, ENOSYS, "clone3");
  expect_fail(&r, 3, EPERM, "vfork");
  expect_fail(&r, 4, EPERM, "ptrace attach parent");
  expect_fail(&r, 5, EPERM, "unshare");
  expect_fail(&r, 6, EPERM, "setsid");
  expect_fail(&r, 7, EPERM, "execveat");
}

/* ---- threads ---- */

static pthread_barrier_t bar;
static volatile long thread_tid;

static void *thread_main(void *arg) {
  thread_tid = (long)syscall(SYS_gettid);
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  return (void *)((intptr_t)arg * 2);
}

static void probe_threads(void *ctx, struct res *r) {
  (void)ctx;
  pthread_t t;
  pthread_barrier_init(&bar, NULL, 2);
  int rc = pthread_create(&t, NULL, thread_main, (void *)(intptr_t)21);
  r->v[0] = rc;
  if (rc == 0) {
    pthread_barrier_wait(&bar);
    /* Naming another thread writes /proc/self/task/<tid>/comm (libcuda does). */
    r->v[5] = pthread_setname_np(t, "kevo-probe");
    char name[16] = "";
    pthread_getname_np(t, name, sizeof name);
    r->v[6] = strcmp(name, "kevo-probe") == 0;
    /* libcuda names its threads with fopen("w"), which truncates. */
    char path[96];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", (long)thread_tid);
    R(r, 7, write_text(path, "kevo-cuda"));
    pthread_getname_np(t, name, sizeof name);
    r->v[8] = strcmp(name, "kevo-cuda") == 0;
    pthread_barrier_wait(&bar);
    void *ret = NULL;
    r->v[1] = pthread_join(t, &ret);
    r->v[2] = (long)(intptr_t)ret;
  }
  int seen[4] = {0};
  int team = 0;
#pragma omp parallel num_threads(4)
  {
    int id = omp_get_thread_num();
    if (id < 4)
      seen[id] = 1;
#pragma omp single
    team = omp_get_num_threads();
  }
  r->v[3] = team;
  r->v[4] = seen[0] + seen[1] + seen[2] + seen[3];
}

static void test_threads_work(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  o.thread_names = 1; /* as for libcuda */
  struct res r;
  int status = run_child(&o, probe_threads, NULL, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.v[0], 0);
  assert_int_equal(r.v[1], 0);
  assert_int_equal(r.v[2], 42);
  assert_int_equal(r.v[3], 4);
  assert_int_equal(r.v[4], 4);
  assert_int_equal(r.v[5], 0);
  assert_int_equal(r.v[6], 1);
  expect_ok(&r, 7, "rename a thread through /proc with O_TRUNC");
  assert_int_equal(r.v[8], 1);
}

/* ---- privileges ---- */

static void probe_privileges(void *ctx, struct res *r) {
  (void)ctx;
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0xff, sizeof data);
  R(r, 0, syscall(SYS_capget, &hdr, data));
  r->v[1] = (long)(data[0].effective | data[1].effective | data[0].permitted | data[1].permitted);
  char path[96];
  snprintf(path, sizeof path, "/proc/self/task/%ld/oom_score_adj", (long)syscall(SYS_gettid));
  R(r, 2, write_text(path, "-1000\n"));
  R(r, 3, write_text("/proc/self/oom_score_adj", "-1000\n"));
  R(r, 4, setrlimit(RLIMIT_NOFILE, &(struct rlimit){1 << 20, 1 << 20}));
  R(r, 5, prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0));
  R(r, 6, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

static void test_privileges_dropped(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_privileges, NULL, &r);
  expect_clean_exit(status, &r);
  expect_ok(&r, 0, "capget");
  if (r.v[1] != 0)
    fail_msg("capabilities left: 0x%lx", (unsigned long)r.v[1]);
  if (r.v[2] == 0 || r.v[3] == 0)
    fail_msg("the sandboxed worker made itself immune to the OOM killer");
  expect_fail(&r, 4, EPERM, "raise RLIMIT_NOFILE");
  if (r.v[5] == 0)
    fail_msg("no_new_privs was cleared");
  assert_int_equal(r.v[6], 1);
}

/* ---- network ---- */

/* Unix-domain listeners of the parent: one at a path, one abstract. */
struct unix_ctx {
  struct net_ctx tcp;
  int path_listener, abstract_listener;
  struct sockaddr_un path_addr, abstract_addr;
  socklen_t abstract_len;
};

static int unix_listen(struct sockaddr_un *a, socklen_t len) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)a, len), 0);
  assert_int_equal(listen(fd, 4), 0);
  return fd;
}

static int unix_untouched(int fd) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  int rc = poll(&pf, 1, 100);
  close(fd);
  return rc == 0;
}

static void probe_net(void *ctx, struct res *r) {
  struct unix_ctx *u = ctx;
  R(r, 0, socket(AF_INET, SOCK_STREAM, 0));
  R(r, 1, socket(AF_INET6, SOCK_DGRAM, 0));
  R(r, 2, net_connect(u->tcp.client, u->tcp.port));
  int sv[2];
  R(r, 3, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
  R(r, 4, socket(AF_NETLINK, SOCK_RAW, 0));
  R(r, 5, socket(AF_UNIX, SOCK_DGRAM, 0));
  R(r, 6, socket(AF_UNIX, SOCK_RAW, 0));
  /* Stream sockets exist (libcuda needs one) but reach nothing. */
  int fd;
  R(r, 7, fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  R(r, 8, connect(fd, (struct sockaddr *)&u->path_addr, sizeof u->path_addr));
  R(r, 9, connect(fd, (struct sockaddr *)&u->abstract_addr, u->abstract_len));
  /* An abstract bind (libcuda's UVM server) lands in the private netns. */
  struct sockaddr_un mine = {.sun_family = AF_UNIX};
  snprintf(mine.sun_path + 1, sizeof mine.sun_path - 1, "kevo-sbx-child-%ld", (long)getpid());
  R(r, 11,
    bind(fd, (struct sockaddr *)&mine,
         (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(mine.sun_path + 1))));
  R(r, 10, listen(fd, 1));
  R(r, 12, readlink("/proc/self/ns/net", r->text, sizeof r->text - 1));
  /* A file socket would need a socket file: Landlock grants MAKE_SOCK nowhere. */
  int fd2 = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un file = {.sun_family = AF_UNIX};
  snprintf(file.sun_path, sizeof file.sun_path, "%s/s.sock", fx.scratch);
  R(r, 13, bind(fd2, (struct sockaddr *)&file, sizeof file));
}

static void test_no_network(void **state) {
  (void)state;
  struct unix_ctx u;
  memset(&u, 0, sizeof u);
  net_open(&u.tcp);
  u.path_addr.sun_family = AF_UNIX;
  snprintf(u.path_addr.sun_path, sizeof u.path_addr.sun_path, "%s.sock", fx.outside);
  unlink(u.path_addr.sun_path);
  u.path_listener = unix_listen(&u.path_addr, sizeof u.path_addr);
  u.abstract_addr.sun_family = AF_UNIX;
  snprintf(u.abstract_addr.sun_path + 1, sizeof u.abstract_addr.sun_path - 1, "kevo-sbx-parent-%ld",
           (long)getpid());
  u.abstract_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                               strlen(u.abstract_addr.sun_path + 1));
  u.abstract_listener = unix_listen(&u.abstract_addr, u.abstract_len);

  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_net, &u, &r);
  unlink(u.path_addr.sun_path);
  expect_clean_exit(status, &r);
  expect_fail(&r, 0, EPERM, "socket(AF_INET)");
  expect_fail(&r, 1, EPERM, "socket(AF_INET6)");
  if (r.v[2] == 0)
    fail_msg("connect to the parent's TCP listener succeeded");
  expect_fail(&r, 3, EPERM, "socketpair");
  expect_fail(&r, 4, EPERM, "socket(AF_NETLINK)");
  expect_fail(&r, 5, EPERM, "socket(AF_UNIX, SOCK_DGRAM)");
  expect_fail(&r, 6, EPERM, "socket(AF_UNIX, SOCK_RAW)");
  expect_ok(&r, 7, "socket(AF_UNIX, SOCK_STREAM)");
  expect_fail(&r, 8, EPERM, "connect to a unix socket file");
  expect_fail(&r, 9, EPERM, "connect to an abstract unix socket");
  expect_ok(&r, 10, "listen (private netns)");
  expect_ok(&r, 11, "abstract bind in the private netns");
  expect_ok(&r, 12, "readlink /proc/self/ns/net");
  char mine[256] = "";
  ssize_t n = readlink("/proc/self/ns/net", mine, sizeof mine - 1);
  assert_true(n > 0);
  if (strcmp(mine, r.text) == 0)
    fail_msg("the child shares the parent's network namespace (%s)", mine);
  expect_fail(&r, 13, EACCES, "bind a unix socket file in scratch");
  assert_true(net_untouched(&u.tcp));
  assert_true(unix_untouched(u.path_listener));
  assert_true(unix_untouched(u.abstract_listener));
}

/* ---- files ---- */

static void probe_files(void *ctx, struct res *r) {
  (void)ctx;
  R(r, 0, write_text(fx.outside, "escaped\n"));
  char inside[128];
  snprintf(inside, sizeof inside, "%s/ok.txt", fx.scratch);
  R(r, 1, write_text(inside, "inside\n"));
  char sub[128];
  snprintf(sub, sizeof sub, "%s/sub", fx.scratch);
  R(r, 2, mkdir(sub, 0700));
  char buf[256];
  R(r, 3, read_file("/etc/passwd", buf, sizeof buf));
  R(r, 4, open("/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  R(r, 5, open("/home", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  R(r, 6, read_file("/proc/self/status", buf, sizeof buf));
  R(r, 7, read_file("/dev/urandom", buf, 16));
  R(r, 8, write_text("/dev/null", "x"));
  R(r, 9, chmod(inside, 0777));
  R(r, 10, mkdir(fx.outside_dir, 0700));
  R(r, 11, read_file("/sys/devices/system/cpu/online", buf, sizeof buf));
  R(r, 12, read_file(inside, r->text, sizeof r->text));
}

static void test_files_confined(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_files, NULL, &r);
  expect_clean_exit(status, &r);
  expect_fail(&r, 0, EACCES, "write outside scratch");
  assert_int_equal(access(fx.outside, F_OK), -1);
  assert_int_equal(errno, ENOENT);
  expect_ok(&r, 1, "write inside scratch");
  assert_int_equal(r.v[12], 7);
  assert_string_equal(r.text, "inside\n");
  /* On the worker's private tmpfs: nothing of it reaches the directory. */
  char path[128];
  snprintf(path, sizeof path, "%s/ok.txt", fx.scratch);
  assert_int_equal(r.st.scratch, KV_LAYER_ACTIVE);
  assert_int_equal(access(path, F_OK), -1);
  expect_ok(&r, 2, "mkdir inside scratch");
  expect_fail(&r, 3, EACCES, "read /etc/passwd");
  expect_fail(&r, 4, EACCES, "open /root");
  if (access("/home", F_OK) == 0)
    expect_fail(&r, 5, EACCES, "open /home");
  expect_ok(&r, 6, "read /proc/self/status");
  expect_ok(&r, 7, "read /dev/urandom");
  expect_ok(&r, 8, "write /dev/null");
  expect_fail(&r, 9, EPERM, "chmod");
  expect_fail(&r, 10, EACCES, "mkdir outside scratch");
  if (access(fx.outside_dir, F_OK) == 0)
    fail_msg("directory created outside scratch");
  expect_ok(&r, 11, "read /sys/devices/system/cpu/online");
}

/* ---- the parent's secrets ---- */

static void probe_environ(void *ctx, struct res *r) {
  (void)ctx;
  r->v[0] = parent_environ_has_secret();
  r->e[0] = errno;
  r->v[1] = getenv(SECRET_NAME) != NULL; /* inherited: the worker's parent scrubs it */
}

static void test_parent_environ_unreadable(void **state) {
  (void)state;
  /* Precondition: the secret is in our environ, and without a sandbox a
   * child reads it from /proc/<ppid>/environ. */
  assert_non_null(getenv(SECRET_NAME));
  struct res r;
  int status = run_child(NULL, probe_environ, NULL, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.v[0], 1);

  struct kv_sandbox_opts o;
  opts_all(&o);
  status = run_child(&o, probe_environ, NULL, &r);
  expect_clean_exit(status, &r);
  if (r.v[0] != -1)
    fail_msg("sandboxed child opened the parent's environ (found secret: %ld)", r.v[0]);
}

/* ---- signals ---- */

static volatile sig_atomic_t self_usr1;

static void on_usr1(int sig) {
  (void)sig;
  self_usr1++;
}

static void probe_signals(void *ctx, struct res *r) {
  (void)ctx;
  R(r, 0, kill(getppid(), SIGTERM));
  R(r, 1, kill(0, SIGURG));
  R(r, 2, kill(-getpgrp(), SIGURG));
  R(r, 3, kill(-1, SIGURG));
  R(r, 4, syscall(SYS_tgkill, getppid(), getppid(), SIGTERM));
  R(r, 5, kill(getpid(), 0));
  signal(SIGUSR1, on_usr1);
  R(r, 6, raise(SIGUSR1));
  r->v[7] = self_usr1;
  R(r, 8, syscall(SYS_pidfd_open, getppid(), 0));
  R(r, 9, prlimit(getppid(), RLIMIT_NOFILE, NULL, &(struct rlimit){0, 0}));
}

static void test_no_signals_out(void **state) {
  (void)state;
  struct sigaction ot, ou;
  catch_signals(&ot, &ou);
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_signals, NULL, &r);
  usleep(50 * 1000);
  restore_signals(&ot, &ou);
  expect_clean_exit(status, &r);
  expect_fail(&r, 0, EPERM, "kill(parent, SIGTERM)");
  expect_fail(&r, 1, EPERM, "kill(0, SIGURG)");
  expect_fail(&r, 2, EPERM, "kill(-pgrp, SIGURG)");
  expect_fail(&r, 3, EPERM, "kill(-1, SIGURG)");
  expect_fail(&r, 4, EPERM, "tgkill(parent)");
  expect_ok(&r, 5, "kill(self, 0)");
  expect_ok(&r, 6, "raise(SIGUSR1)");
  assert_int_equal(r.v[7], 1);
  expect_fail(&r, 8, EPERM, "pidfd_open(parent)");
  expect_fail(&r, 9, EPERM, "prlimit(parent)");
  assert_int_equal(got_term, 0);
  assert_int_equal(got_urg, 0);
  assert_int_equal(kill(getpid(), 0), 0);
}

/* ---- other processes' scheduling ---- */

/* Each call on the victim sets what is already there (its own nice, CPUs
 * and I/O priority), so it changes nothing even where it is allowed; the
 * filter judges the arguments, so EPERM is the answer that counts. */
static void probe_sched_others(void *ctx, struct res *r) {
  pid_t v = *(const pid_t *)ctx;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  int vnice = getpriority(PRIO_PROCESS, (id_t)v);
  long vio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, v);
  R(r, 0, sched_getaffinity(v, sizeof mask, &mask));
  R(r, 1, sched_setaffinity(v, sizeof mask, &mask));
  R(r, 2, setpriority(PRIO_PROCESS, (id_t)v, vnice));
  R(r, 3, sched_setparam(v, &(struct sched_param){.sched_priority = 0}));
  R(r, 4, sched_setscheduler(v, SCHED_OTHER, &(struct sched_param){.sched_priority = 0}));
  R(r, 5, syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, v, vio < 0 ? 0 : vio));
  R(r, 6, setpriority(PRIO_PGRP, (id_t)getpgrp(), getpriority(PRIO_PGRP, (id_t)getpgrp())));
  R(r, 7, syscall(SYS_ioprio_set, 2 /* IOPRIO_WHO_PGRP */, 0, vio < 0 ? 0 : vio));
  /* its own: still allowed */
  CPU_ZERO(&mask);
  R(r, 8, sched_getaffinity(0, sizeof mask, &mask));
  R(r, 9, sched_setaffinity(0, sizeof mask, &mask));
  R(r, 10, setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0)));
  R(r, 11, sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){.sched_priority = 0}));
}

/* The victim: a process of this user with no capabilities, as the
 * reference's worker of an unprivileged kevo is (a root one keeps
 * capabilities that the kernel itself protects from a capless child). */
static pid_t start_victim(void) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  fflush(NULL);
  pid_t v = fork();
  assert_true(v >= 0);
  if (v == 0) {
    close(p[0]);
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    char ok = syscall(SYS_capset, &h, d) == 0 ? 'y' : 'n';
    if (write(p[1], &ok, 1) != 1)
      _exit(3);
    for (;;)
      pause();
  }
  close(p[1]);
  char ok = 0;
  ssize_t n = read(p[0], &ok, 1);
  close(p[0]);
  assert_true(n == 1 && ok == 'y');
  return v;
}

static void expect_sched_denied(const struct res *r) {
  expect_ok(r, 0, "sched_getaffinity(victim)");
  expect_fail(r, 1, EPERM, "sched_setaffinity(victim)");
  expect_fail(r, 2, EPERM, "setpriority(PRIO_PROCESS, victim)");
  expect_fail(r, 3, EPERM, "sched_setparam(victim)");
  expect_fail(r, 4, EPERM, "sched_setscheduler(victim, SCHED_OTHER)");
  expect_fail(r, 5, EPERM, "ioprio_set(IOPRIO_WHO_PROCESS, victim)");
  expect_fail(r, 6, EPERM, "setpriority(PRIO_PGRP)");
  expect_fail(r, 7, EPERM, "ioprio_set(IOPRIO_WHO_PGRP)");
  expect_ok(r, 9, "sched_setaffinity(self)");
  expect_ok(r, 10, "setpriority(self)");
  expect_ok(r, 11, "sched_setscheduler(self, SCHED_OTHER)");
}

static void test_no_scheduling_others(void **state) {
  (void)state;
  pid_t v = start_victim();
  struct res plain, alone, all;
  struct kv_sandbox_opts o1, o2;
  opts_only(&o1, 0, 0, 1, 0);
  opts_all(&o2);
  int s0 = run_child(NULL, probe_sched_others, &v, &plain);
  int s1 = run_child(&o1, probe_sched_others, &v, &alone);
  int s2 = run_child(&o2, probe_sched_others, &v, &all);
  kill(v, SIGKILL); /* before any assertion: it holds the test's output open */
  waitpid(v, NULL, 0);
  /* Unsandboxed, a process of the same user may set all of these on the
   * victim (the attack a candidate would make on the reference's worker). */
  expect_clean_exit(s0, &plain);
  expect_ok(&plain, 1, "unsandboxed: sched_setaffinity(victim)");
  expect_ok(&plain, 2, "unsandboxed: setpriority(victim)");
  expect_ok(&plain, 3, "unsandboxed: sched_setparam(victim)");
  expect_ok(&plain, 4, "unsandboxed: sched_setscheduler(victim)");
  /* The seccomp filter alone denies them, and so does every layer. */
  expect_clean_exit(s1, &alone);
  expect_sched_denied(&alone);
  expect_clean_exit(s2, &all);
  expect_sched_denied(&all);
}

/* System V IPC (issue 28): an evaluation leaves a shared memory segment and
 * a message queue under a known key; a later one looks them up. */
static void probe_ipc_leave(void *ctx, struct res *r) {
  key_t key = *(const key_t *)ctx;
  R(r, 0, shmget(key, 4096, IPC_CREAT | 0600));
  if (r->v[0] >= 0) {
    char *p = shmat((int)r->v[0], NULL, 0);
    if (p != (void *)-1) {
      strcpy(p, "left by an earlier evaluation");
      shmdt(p);
    }
  }
  R(r, 1, msgget(key, IPC_CREAT | 0600));
}

static void probe_ipc_find(void *ctx, struct res *r) {
  key_t key = *(const key_t *)ctx;
  R(r, 0, shmget(key, 0, 0));
  R(r, 1, msgget(key, 0));
}

static void ipc_remove(key_t key) {
  int id = shmget(key, 0, 0);
  if (id >= 0)
    shmctl(id, IPC_RMID, NULL);
  id = msgget(key, 0);
  if (id >= 0)
    msgctl(id, IPC_RMID, NULL);
}

static void test_ipc_private(void **state) {
  (void)state;
  key_t key = (key_t)(0x4b000000 | (getpid() & 0xffffff));
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  ipc_remove(key);
  /* Unsandboxed, the objects outlive the process: the attack works. */
  expect_clean_exit(run_child(NULL, probe_ipc_leave, &key, &r), &r);
  expect_ok(&r, 0, "unsandboxed: shmget");
  int left_shm = shmget(key, 0, 0) >= 0, left_msg = msgget(key, 0) >= 0;
  ipc_remove(key);
  assert_true(left_shm && left_msg);
  /* Sandboxed: System V IPC is denied outright (seccomp). */
  expect_clean_exit(run_child(&o, probe_ipc_leave, &key, &r), &r);
  assert_true(r.v[0] < 0 && r.e[0] == EPERM);
  assert_true(r.v[1] < 0 && r.e[1] == EPERM);
  assert_false(shmget(key, 0, 0) >= 0 || msgget(key, 0) >= 0);
  /* Where seccomp is unavailable, the private IPC namespace (given with the
   * network's) still holds: objects can be made but die with the process. */
  struct kv_sandbox_opts ns;
  opts_only(&ns, 1, 0, 0, 0);
  expect_clean_exit(run_child(&ns, probe_ipc_leave, &key, &r), &r);
  expect_ok(&r, 0, "private IPC namespace: shmget");
  expect_ok(&r, 1, "private IPC namespace: msgget");
  left_shm = shmget(key, 0, 0) >= 0;
  left_msg = msgget(key, 0) >= 0;
  ipc_remove(key);
  assert_false(left_shm);
  assert_false(left_msg);
  /* And what others left is out of reach. */
  int id = shmget(key, 4096, IPC_CREAT | 0600), q = msgget(key, IPC_CREAT | 0600);
  assert_true(id >= 0 && q >= 0);
  expect_clean_exit(run_child(&ns, probe_ipc_find, &key, &r), &r);
  ipc_remove(key);
  assert_true(r.v[0] < 0 && r.e[0] == ENOENT);
  assert_true(r.v[1] < 0 && r.e[1] == ENOENT);
}

static void probe_abort(void *ctx, struct res *r) {
  (void)ctx;
  (void)r;
  abort();
}

static void test_abort_kills_self(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  struct res r;
  int status = run_child(&o, probe_abort, NULL, &r);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* ---- loading a candidate ---- */

struct dl_ctx {
  char so[128];
};

static void probe_dlopen(void *ctx, struct res *r) {
  struct dl_ctx *d = ctx;
  void *h = dlopen(d->so, RTLD_NOW | RTLD_LOCAL);
  r->v[0] = h != NULL;
  if (!h) {
    snprintf(r->text, sizeof r->text, "%s", dlerror());
    return;
  }
  int (*fn)(int) = (int (*)(int))dlsym(h, "kevo_probe");
  r->v[1] = fn != NULL;
  if (fn)
    r->v[2] = fn(20);
  dlclose(h);
}

static void test_dlopen_candidate(void **state) {
  (void)state;
  struct dl_ctx d;
  char src[128], cmd[512];
  snprintf(src, sizeof src, "%s/cand.c", fx.objects);
  snprintf(d.so, sizeof d.so, "%s/libcand.so", fx.objects);
  assert_int_equal(write_text(src, "#include <math.h>\n"
                                   "int kevo_probe(int x) { return x * 2 + (int)sqrt(4.0); }\n"),
                   0);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o '%s' '%s' -lm", d.so, src);
  if (system(cmd) != 0)
    fail_msg("could not build the test object: %s", cmd);
  struct kv_sandbox_opts o;
  opts_all(&o);
  o.read_paths[o.nread_paths++] = fx.objects;
  struct res r;
  int status = run_child(&o, probe_dlopen, &d, &r);
  expect_clean_exit(status, &r);
  if (r.v[0] != 1)
    fail_msg("dlopen failed in the sandbox: %s", r.text);
  assert_int_equal(r.v[1], 1);
  assert_int_equal(r.v[2], 42);
}

/* ---- each layer on its own ---- */

static void probe_layer(void *ctx, struct res *r) {
  struct net_ctx *n = ctx;
  R(r, 0, write_text(fx.outside, "escaped\n"));
  r->v[1] = parent_environ_has_secret();
  r->e[1] = errno;
  if (!n->skip_inherited)
    R(r, 2, net_connect(n->client, n->port));
  R(r, 3, kill(getppid(), SIGURG));
  pid_t pid;
  R(r, 4, pid = fork());
  if (pid == 0)
    _exit(0);
  R(r, 5, socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (r->v[5] >= 0) {
    R(r, 6, net_connect((int)r->v[5], n->port));
    close((int)r->v[5]);
  }
  R(r, 7, kill(0, SIGURG));
  R(r, 8, syscall(SYS_clone3, NULL, 0));
  R(r, 9, setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0}));
#if defined(__x86_64__)
  R(r, 10, syscall(452 /* fchmodat2 */, AT_FDCWD, fx.scratch, 0700, 0));
  R(r, 11, syscall(470 /* not yet assigned */, 0, 0, 0));
#endif
  struct rlimit rl;
  getrlimit(RLIMIT_CORE, &rl);
  r->v[12] = (long)rl.rlim_max;
  getrlimit(RLIMIT_FSIZE, &rl);
  r->v[13] = (long)rl.rlim_max;
  getrlimit(RLIMIT_AS, &rl);
  r->v[14] = (long)rl.rlim_max;
  getrlimit(RLIMIT_CPU, &rl);
  r->v[15] = (long)rl.rlim_cur;
  R(r, 16, sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){.sched_priority = 1}));
  int pfd[2];
  char ch = 'x';
  if (pipe(pfd) == 0)
    R(r, 17, ioctl(pfd[0], TIOCSTI, &ch)); /* a pipe: ENOTTY unless the filter stops it first */
}

static void run_layer(int netns, int landlock, int seccomp, int rlimits, struct res *r,
                      int *untouched) {
  struct net_ctx n;
  net_open(&n);
  n.skip_inherited = netns && !landlock && !seccomp;
  struct sigaction ot, ou;
  catch_signals(&ot, &ou);
  struct kv_sandbox_opts o;
  opts_only(&o, netns, landlock, seccomp, rlimits);
  int status = run_child(&o, probe_layer, &n, r);
  usleep(50 * 1000);
  restore_signals(&ot, &ou);
  *untouched = net_untouched(&n);
  expect_clean_exit(status, r);
}

static void test_layer_landlock_alone(void **state) {
  (void)state;
  struct res r;
  int untouched;
  run_layer(0, 1, 0, 0, &r, &untouched);
  assert_int_equal(r.st.landlock, KV_LAYER_ACTIVE);
  assert_int_equal(r.st.seccomp, KV_LAYER_OFF);
  expect_fail(&r, 0, EACCES, "landlock: write outside scratch");
  assert_int_equal(access(fx.outside, F_OK), -1);
  assert_int_equal(r.v[1], -1); /* parent's environ unreadable */
  expect_ok(&r, 4, "landlock alone: fork is not its business");
  if (r.st.landlock_abi >= 4) {
    expect_fail(&r, 2, EACCES, "landlock: connect TCP");
    assert_true(untouched);
  }
  if (r.st.landlock_abi >= 6) {
    expect_fail(&r, 3, EPERM, "landlock: signal the parent");
    assert_int_equal(got_urg, 0);
  }
}

static void test_layer_seccomp_alone(void **state) {
  (void)state;
  struct res r;
  int untouched;
  run_layer(0, 0, 1, 0, &r, &untouched);
  assert_int_equal(r.st.seccomp, KV_LAYER_ACTIVE);
  assert_int_equal(r.st.landlock, KV_LAYER_OFF);
  expect_ok(&r, 0, "seccomp alone: files are not its business");
  unlink(fx.outside);
  /* The parent's environ: dropping capabilities (with no_new_privs) already
   * fails ptrace's access check for a root parent; nothing to show here. */
  expect_fail(&r, 2, EPERM, "seccomp: connect");
  expect_fail(&r, 3, EPERM, "seccomp: kill parent");
  expect_fail(&r, 4, EPERM, "seccomp: fork");
  expect_fail(&r, 5, EPERM, "seccomp: socket");
  expect_fail(&r, 7, EPERM, "seccomp: kill(0)");
  expect_fail(&r, 8, ENOSYS, "seccomp: clone3");
  expect_fail(&r, 9, EPERM, "seccomp: setrlimit");
#if defined(__x86_64__)
  expect_fail(&r, 10, EPERM, "seccomp: fchmodat2");
  expect_fail(&r, 11, ENOSYS, "seccomp: unknown syscall 470");
#endif
  expect_fail(&r, 16, EPERM, "seccomp: SCHED_FIFO");
  expect_fail(&r, 17, EPERM, "seccomp: TIOCSTI");
  assert_true(untouched);
  assert_int_equal(got_urg, 0);
}

static void test_layer_netns_alone(void **state) {
  (void)state;
  struct res r;
  int untouched;
  run_layer(1, 0, 0, 0, &r, &untouched);
  assert_int_equal(r.st.netns, KV_LAYER_ACTIVE);
  expect_ok(&r, 5, "netns alone: socket");
  if (r.v[6] == 0)
    fail_msg("netns: a fresh socket reached the parent's listener");
  assert_true(untouched);
}

static void test_layer_rlimits_alone(void **state) {
  (void)state;
  struct res r;
  int untouched;
  run_layer(0, 0, 0, 1, &r, &untouched);
  unlink(fx.outside);
  assert_int_equal(r.st.rlimits, KV_LAYER_ACTIVE);
  assert_int_equal(r.v[12], 0);
  assert_true(r.v[13] == 64L << 20);
#if !(defined(KEVO_SANITIZED) && KEVO_SANITIZED)
  assert_true(r.v[14] == 16L << 30);
#endif
  assert_int_equal(r.v[15], 600);
}

static void probe_fsize(void *ctx, struct res *r) {
  (void)ctx;
  signal(SIGXFSZ, SIG_IGN);
  char path[128];
  snprintf(path, sizeof path, "%s/big", fx.scratch);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  static char buf[1 << 16];
  long total = 0;
  ssize_t n = 0;
  while (fd >= 0 && total < (4L << 20) && (n = write(fd, buf, sizeof buf)) > 0)
    total += n;
  r->v[0] = total;
  r->e[0] = n < 0 ? errno : 0;
  if (fd >= 0)
    close(fd);
}

static void test_file_size_limit(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  o.file_limit_bytes = 1 << 20;
  struct res r;
  int status = run_child(&o, probe_fsize, NULL, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.v[0], 1 << 20);
  assert_int_equal(r.e[0], EFBIG);
}

/* ---- /proc/self/task/<tid>/mem: writes through every page protection ---- */

/* A read-only page of this program, to aim at. */
static const char ro_target[4096] __attribute__((aligned(4096))) = "kevo read-only";

static void probe_proc_mem(void *ctx, struct res *r) {
  const int *close_first = ctx;
  char path[96];
  snprintf(path, sizeof path, "/proc/self/task/%ld/mem", (long)syscall(SYS_gettid));
  int fd;
  R(r, 0, fd = open(path, O_RDWR | O_CLOEXEC));
  if (fd >= 0)
    close(fd);
  R(r, 1, fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC));
  if (fd >= 0)
    close(fd);
  if (*close_first) {
    R(r, 2, kv_sandbox_close_proc(&r->st));
    R(r, 3, fd = open(path, O_RDWR | O_CLOEXEC));
    if (fd >= 0) {
      /* The attack the layer stops: rewrite a read-only page. */
      r->v[4] = pwrite(fd, "forged", 6, (off_t)(uintptr_t)ro_target);
      close(fd);
    }
    R(r, 5, read_file(path, r->text, 16) >= 0 || errno == EIO ? 0 : -1); /* reading stays */
    R(r, 6, write_text("/dev/null", "x"));
    char inside[128];
    snprintf(inside, sizeof inside, "%s/after-close", fx.scratch);
    R(r, 7, write_text(inside, "ok"));
    R(r, 8, pthread_setname_np(pthread_self(), "kevo-self") == 0 ? 0 : -1);
  }
  r->v[9] = strcmp(ro_target, "kevo read-only") == 0;
}

static void test_proc_mem_not_writable(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  struct res r;
  int close_first = 0;
  /* The cpu worker: never granted. */
  opts_all(&o);
  int status = run_child(&o, probe_proc_mem, &close_first, &r);
  expect_clean_exit(status, &r);
  expect_fail(&r, 0, EACCES, "open /proc/self/task/<tid>/mem for writing");
  expect_fail(&r, 1, EACCES, "open /proc/self/mem for writing");
  assert_int_equal(r.v[9], 1);
  /* Granted for thread names (libcuda), then withdrawn. */
  o.thread_names = 1;
  close_first = 1;
  status = run_child(&o, probe_proc_mem, &close_first, &r);
  expect_clean_exit(status, &r);
  expect_ok(&r, 0, "thread names granted: task/<tid>/mem opens (why it must be withdrawn)");
  expect_ok(&r, 2, "kv_sandbox_close_proc");
  expect_fail(&r, 3, EACCES, "task/<tid>/mem for writing after kv_sandbox_close_proc");
  expect_ok(&r, 6, "write /dev/null after close_proc");
  expect_ok(&r, 7, "write in scratch after close_proc");
  expect_ok(&r, 8, "name the calling thread after close_proc");
  assert_int_equal(r.v[9], 1);
}

/* ---- scratch: a private tmpfs with a size and an inode cap ---- */

static sigjmp_buf bus_jmp;
static void on_bus(int sig) {
  (void)sig;
  siglongjmp(bus_jmp, 1);
}

/* Fills scratch every way it can; v[] holds how far each way got. */
static void probe_fill_scratch(void *ctx, struct res *r) {
  (void)ctx;
  signal(SIGXFSZ, SIG_IGN);
  char path[160];
  static char chunk[1 << 16];
  memset(chunk, 'k', sizeof chunk);
  /* 1. Many files of 1 MiB, written. */
  long total = 0;
  int err = 0;
  for (int i = 0; i < 64 && !err; i++) {
    snprintf(path, sizeof path, "%s/w%d", fx.scratch, i);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      err = errno;
      break;
    }
    for (int k = 0; k < 16; k++) {
      ssize_t n = write(fd, chunk, sizeof chunk);
      if (n < 0) {
        err = errno;
        break;
      }
      total += n;
    }
    close(fd);
  }
  r->v[0] = total;
  r->e[0] = err;
  for (int i = 0; i < 64; i++) {
    snprintf(path, sizeof path, "%s/w%d", fx.scratch, i);
    unlink(path);
  }
  /* 2. Through a shared mapping of a sparse file: SIGBUS at the cap. */
  snprintf(path, sizeof path, "%s/mapped", fx.scratch);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const long len = 32L << 20;
  volatile long touched = 0;
  r->v[1] = -1;
  if (fd >= 0 && ftruncate(fd, len) == 0) {
    char *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      signal(SIGBUS, on_bus);
      if (sigsetjmp(bus_jmp, 1) == 0) {
        for (long off = 0; off < len; off += 4096) {
          p[off] = 1;
          touched = off + 4096;
        }
        r->e[1] = 0;
      } else
        r->e[1] = EFAULT; /* SIGBUS */
      signal(SIGBUS, SIG_DFL);
      munmap(p, (size_t)len);
    }
    r->v[1] = touched;
  }
  if (fd >= 0)
    close(fd);
  unlink(path);
  /* 3. fallocate beyond the cap. */
  snprintf(path, sizeof path, "%s/falloc", fx.scratch);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  R(r, 2, fallocate(fd, 0, 0, 16L << 20));
  close(fd);
  unlink(path);
  /* 4. noexec: a file written there cannot be mapped executable. */
  snprintf(path, sizeof path, "%s/code", fx.scratch);
  fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0 && write(fd, chunk, 4096) == 4096) {
    errno = 0;
    void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    r->v[5] = x == MAP_FAILED ? -1 : 0;
    r->e[5] = x == MAP_FAILED ? errno : 0;
  }
  if (fd >= 0)
    close(fd);
  unlink(path);
  /* 5. Many empty files. */
  int nfiles = 0;
  err = 0;
  for (; nfiles < 100000; nfiles++) {
    snprintf(path, sizeof path, "%s/e%d", fx.scratch, nfiles);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
      err = errno;
      break;
    }
    close(fd);
  }
  r->v[3] = nfiles;
  r->e[3] = err;
  for (int i = 0; i < nfiles; i++) {
    snprintf(path, sizeof path, "%s/e%d", fx.scratch, i);
    unlink(path);
  }
  /* 6. A deep chain of directories. */
  int dfd = open(fx.scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int depth = 0;
  err = 0;
  for (; dfd >= 0 && depth < 100000; depth++) {
    if (mkdirat(dfd, "d", 0700) != 0) {
      err = errno;
      break;
    }
    int next = openat(dfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(dfd);
    dfd = next;
  }
  if (dfd >= 0)
    close(dfd);
  r->v[4] = depth;
  r->e[4] = err;
  struct statvfs vfs;
  r->v[6] = statvfs(fx.scratch, &vfs) == 0 ? (long)(vfs.f_blocks * vfs.f_frsize) : -1;
}

static int dir_is_empty(const char *path) {
  DIR *d = opendir(path);
  if (!d)
    return 0;
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n == 0;
}

static void test_scratch_capped(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  o.scratch_bytes = 4 << 20;
  o.scratch_inodes = 64;
  struct res r;
  int status = run_child(&o, probe_fill_scratch, NULL, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.st.scratch, KV_LAYER_ACTIVE);
  assert_true(r.st.scratch_bytes == 4 << 20);
  assert_true(r.st.scratch_inodes == 64);
  print_message("scratch of 4 MiB, 64 inodes: wrote %ld bytes (%s), mapped %ld (%s), "
                "%ld files, %ld levels\n",
                r.v[0], strerror(r.e[0]), r.v[1], r.e[1] ? "SIGBUS" : "no fault", r.v[3], r.v[4]);
  /* Written: stops at the cap with ENOSPC. */
  assert_true(r.v[0] > 0 && r.v[0] <= 4L << 20);
  assert_int_equal(r.e[0], ENOSPC);
  /* Through a mapping: SIGBUS at the cap, never 32 MiB. */
  assert_true(r.v[1] >= 0 && r.v[1] <= 4L << 20);
  assert_int_equal(r.e[1], EFAULT);
  expect_fail(&r, 2, ENOSPC, "fallocate 16 MiB in a 4 MiB scratch");
  /* Files and directories: at most the inode cap. */
  assert_true(r.v[3] < 64);
  assert_int_equal(r.e[3], ENOSPC);
  assert_true(r.v[4] < 64);
  assert_int_equal(r.e[4], ENOSPC);
  expect_fail(&r, 5, EPERM, "mmap(PROT_EXEC) of a file written in scratch (noexec)");
  assert_int_equal(r.v[6], 4L << 20);
  /* And nothing of it is left in, or was ever seen from, the directory. */
  assert_true(dir_is_empty(fx.scratch));
}

/* Without a mount namespace: reported, and files stay capped one by one. */
static void probe_no_namespaces(void *ctx, struct res *r) {
  /* Runs before the sandbox: refuse unshare as a kernel without user
   * namespaces (or a container's filter) would. */
  scmp_filter_ctx c = seccomp_init(SCMP_ACT_ALLOW);
  if (!c || seccomp_rule_add(c, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 0) != 0 ||
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || seccomp_load(c) != 0)
    _exit(4);
  seccomp_release(c);
  kv_sandbox_enter(ctx, &r->st);
  probe_fsize(NULL, r);
}

static void test_scratch_fallback(void **state) {
  (void)state;
  struct kv_sandbox_opts o;
  opts_all(&o);
  o.netns = 0;
  o.file_limit_bytes = 1 << 20;
  struct res r;
  int status = run_child(NULL, probe_no_namespaces, &o, &r);
  expect_clean_exit(status, &r);
  assert_int_equal(r.st.scratch, KV_LAYER_UNAVAILABLE);
  assert_non_null(strstr(r.st.note, "RLIMIT_FSIZE"));
  assert_true(r.st.file_limit_bytes == 1 << 20);
  assert_int_equal(r.v[0], 1 << 20);
  assert_int_equal(r.e[0], EFBIG);
}

/* ---- the lockdown after load ---- */

struct lock_ctx {
  char so[128];
  char other[128]; /* a second object, to load after the lock */
};

/* The main program's PT_GNU_RELRO (its GOT under full RELRO). */
static int find_relro(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t *range = arg;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
      range[0] = (uintptr_t)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr) & ~4095UL;
      range[1] =
          (uintptr_t)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz) &
          ~4095UL;
    }
  return 1; /* the first object is the main program */
}

static pthread_barrier_t lock_bar;
static volatile long early_thread_mmap_exec, early_thread_mem;
static volatile int early_thread_errno, early_thread_mem_errno;

/* Created before the lock: the filter must reach it too. */
static void *early_thread(void *arg) {
  (void)arg;
  pthread_barrier_wait(&lock_bar);
  pthread_barrier_wait(&lock_bar);
  errno = 0;
  void *p =
      mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  early_thread_mmap_exec = p == MAP_FAILED ? -1 : 0;
  early_thread_errno = errno;
  /* With thread names granted, this thread keeps Landlock's older domain
   * (before ABI 8): the lock's seccomp filter must stop it. */
  char path[96];
  snprintf(path, sizeof path, "/proc/self/task/%ld/mem", (long)syscall(SYS_gettid));
  errno = 0;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  early_thread_mem = fd;
  early_thread_mem_errno = errno;
  if (fd >= 0)
    close(fd);
  return NULL;
}

/* malloc in many sizes (arenas grow by mprotect, big blocks are mmapped). */
static void *malloc_thread(void *arg) {
  long ok = 1;
  for (int round = 0; round < 200; round++) {
    void *p[16];
    for (int i = 0; i < 16; i++) {
      size_t n = (size_t)(16 << (i % 16)) + (size_t)round; /* 16 B .. 512 KiB */
      p[i] = malloc(n);
      if (!p[i])
        ok = 0;
      else
        memset(p[i], i, n);
    }
    for (int i = 0; i < 16; i++)
      free(p[i]);
  }
  void *big = malloc(64 << 20);
  if (!big)
    ok = 0;
  else
    memset(big, 1, 64 << 20);
  free(big);
  *(long *)arg = ok;
  return NULL;
}

static void probe_lock(void *ctx, struct res *r) {
  struct lock_ctx *d = ctx;
  void *h = dlopen(d->so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(r->text, sizeof r->text, "%s", dlerror());
    return;
  }
  int (*fn)(int) = (int (*)(int))dlsym(h, "kevo_probe");
  pthread_t early;
  pthread_barrier_init(&lock_bar, NULL, 2);
  pthread_create(&early, NULL, early_thread, NULL);
  pthread_barrier_wait(&lock_bar);
  char before[160];
  snprintf(before, sizeof before, "%s/opened-before", fx.scratch);
  int wfd = open(before, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

  R(r, 0, kv_sandbox_lock_exec(&r->st));

  pthread_barrier_wait(&lock_bar);
  pthread_join(early, NULL);
  r->v[1] = early_thread_mmap_exec;
  r->e[1] = early_thread_errno;

  uintptr_t code = (uintptr_t)fn & ~4095UL;
  R(r, 2, mprotect((void *)code, 4096, PROT_READ | PROT_WRITE | PROT_EXEC));
  R(r, 3, mprotect((void *)code, 4096, PROT_READ | PROT_WRITE)); /* sealed */
  uintptr_t relro[2] = {0, 0};
  dl_iterate_phdr(find_relro, relro);
  R(r, 4, relro[0] ? mprotect((void *)relro[0], 4096, PROT_READ | PROT_WRITE) : -2);
  void *p;
  R(r, 5,
    (p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED
        ? -1
        : 0);
  /* Data stays data: RW mappings and mprotect among RW, R and none. */
  char *rw = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  r->v[6] = rw != MAP_FAILED;
  if (rw != MAP_FAILED) {
    rw[0] = 1;
    R(r, 7, mprotect(rw, 4096, PROT_READ));
    R(r, 8, mprotect(rw, 4096, PROT_NONE));
    R(r, 9, mprotect(rw, 4096, PROT_READ | PROT_WRITE));
    R(r, 10, mprotect(rw, 4096, PROT_READ | PROT_WRITE | PROT_EXEC));
    R(r, 11, syscall(SYS_pkey_mprotect, rw, 4096, PROT_READ | PROT_EXEC, -1));
  }
  /* memfd: writable and mappable, never executable. */
  int mfd = (int)syscall(SYS_memfd_create, "kevo", 0);
  if (mfd >= 0 && ftruncate(mfd, 4096) == 0)
    R(r, 12, mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_SHARED, mfd, 0) == MAP_FAILED ? -1 : 0);
  if (mfd >= 0)
    close(mfd);
  int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  if (shm >= 0) {
    R(r, 13, shmat(shm, NULL, SHM_EXEC) == (void *)-1 ? -1 : 0);
    shmctl(shm, IPC_RMID, NULL);
  } else
    r->v[13] = -2;
  /* No more code: a second object does not load. */
  void *h2 = dlopen(d->other, RTLD_NOW | RTLD_LOCAL);
  r->v[14] = h2 != NULL;
  /* What must keep working: the loaded code, threads, malloc, OpenMP. */
  r->v[15] = fn ? fn(20) : -1;
  pthread_t t[8];
  long ok[8] = {0};
  for (int i = 0; i < 8; i++)
    r->v[16] += pthread_create(&t[i], NULL, malloc_thread, &ok[i]) == 0;
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 8; i++)
    r->v[17] += ok[i];
  int team = 0;
#if defined(__clang__)
  team = 4; /* LLVM's libomp registers itself in /dev/shm, which Landlock refuses */
#else
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    team = omp_get_num_threads();
  }
#endif
  r->v[18] = team;
  /* The main program's read-only page cannot be rewritten through /proc. */
  char path[96];
  snprintf(path, sizeof path, "/proc/self/task/%ld/mem", (long)syscall(SYS_gettid));
  int fd;
  R(r, 19, fd = open(path, O_RDWR | O_CLOEXEC));
  if (fd >= 0)
    close(fd);
  r->v[20] = strcmp(ro_target, "kevo read-only") == 0;
  r->v[21] = r->st.sealed;
  r->v[22] = early_thread_mem;
  r->e[22] = early_thread_mem_errno;
  /* Files: read as before; none opened for writing; one opened before the
   * lock still written. */
  char buf[64];
  R(r, 23, read_file("/proc/self/status", buf, sizeof buf));
  char after[160];
  snprintf(after, sizeof after, "%s/opened-after", fx.scratch);
  R(r, 24, open(after, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  R(r, 25, open(before, O_RDWR | O_CLOEXEC));
  R(r, 26, wfd >= 0 ? write(wfd, "ok", 2) : -1);
  if (wfd >= 0)
    close(wfd);
  /* READ_IMPLIES_EXEC would make every readable mapping executable. */
  R(r, 27, personality(READ_IMPLIES_EXEC));
}

static void build_object(const char *so, const char *body) {
  char src[160], cmd[512];
  snprintf(src, sizeof src, "%s.c", so);
  assert_int_equal(write_text(src, body), 0);
  snprintf(cmd, sizeof cmd, "cc -shared -fPIC -O1 -o '%s' '%s' -lm", so, src);
  if (system(cmd) != 0)
    fail_msg("could not build the test object: %s", cmd);
}

static void check_lock(const struct res *r, int thread_names) {
  if (r->v[0] != 0)
    fail_msg("kv_sandbox_lock_exec failed: %s (%s)", r->st.note, r->text);
  assert_int_equal(r->st.exec_lock, KV_LAYER_ACTIVE);
  print_message("lock_exec (thread_names=%d): %d segments sealed; note '%s'\n", thread_names,
                r->st.sealed, r->st.note);
  expect_fail(r, 1, EPERM, "mmap(PROT_EXEC) from a thread created before the lock");
  expect_fail(r, 2, EPERM, "mprotect(code, RWX)");
  if (r->v[21] > 0) {
    expect_fail(r, 3, EPERM, "mprotect(code, RW) of a sealed object");
    expect_fail(r, 4, EPERM, "mprotect(main program's RELRO, RW)");
  } else
    print_message("no mseal here: code and RELRO can still be made writable\n");
  expect_fail(r, 5, EPERM, "mmap(anonymous, PROT_EXEC)");
  assert_int_equal(r->v[6], 1);
  expect_ok(r, 7, "mprotect(RW -> R)");
  expect_ok(r, 8, "mprotect(R -> none)");
  expect_ok(r, 9, "mprotect(none -> RW)");
  expect_fail(r, 10, EPERM, "mprotect(data, RWX)");
  expect_fail(r, 11, EPERM, "pkey_mprotect(data, RX)");
  expect_fail(r, 12, EPERM, "mmap(memfd, PROT_EXEC)");
  if (r->v[13] != -2)
    expect_fail(r, 13, EPERM, "shmat(SHM_EXEC)");
  assert_int_equal(r->v[14], 0);
  assert_int_equal(r->v[15], 42);
  assert_int_equal(r->v[16], 8);
  assert_int_equal(r->v[17], 8);
  assert_int_equal(r->v[18], 4);
  expect_fail(r, 19, EPERM, "open task/<tid>/mem for writing after the lock");
  assert_int_equal(r->v[20], 1);
  expect_fail(r, 22, EPERM, "open task/<tid>/mem for writing from a thread made before the lock");
  expect_ok(r, 23, "read a file after the lock");
  expect_fail(r, 24, EPERM, "create a file after the lock");
  expect_fail(r, 25, EPERM, "open a file for writing after the lock");
  assert_int_equal(r->v[26], 2);
  expect_fail(r, 27, EPERM, "personality(READ_IMPLIES_EXEC)");
}

static void test_lock_exec(void **state) {
  (void)state;
  struct lock_ctx d;
  snprintf(d.so, sizeof d.so, "%s/libcand.so", fx.objects);
  snprintf(d.other, sizeof d.other, "%s/libother.so", fx.objects);
  build_object(d.so, "#include <math.h>\n"
                     "int kevo_probe(int x) { return x * 2 + (int)sqrt(4.0); }\n");
  build_object(d.other, "int kevo_other(void) { return 7; }\n");
  struct kv_sandbox_opts o;
  struct res r;
  for (int names = 0; names <= 1; names++) {
    opts_all(&o);
    o.read_paths[o.nread_paths++] = fx.objects;
    o.thread_names = names; /* the cuda worker's case: closed by the lock */
    int status = run_child(&o, probe_lock, &d, &r);
    expect_clean_exit(status, &r);
    check_lock(&r, names);
  }
  /* Without the sandbox at all (kevo-worker --no-sandbox): the lock alone. */
  int status = run_child(NULL, probe_lock, &d, &r);
  expect_clean_exit(status, &r);
  if (r.v[0] != 0)
    fail_msg("kv_sandbox_lock_exec alone failed: %s", r.st.note);
  expect_fail(&r, 2, EPERM, "alone: mprotect(code, RWX)");
  expect_fail(&r, 5, EPERM, "alone: mmap(PROT_EXEC)");
  expect_fail(&r, 24, EPERM, "alone: create a file");
  expect_fail(&r, 27, EPERM, "alone: personality(READ_IMPLIES_EXEC)");
  assert_int_equal(r.v[15], 42);
  assert_int_equal(r.v[17], 8);
}

int main(int argc, char **argv) {
  (void)argc;
  /* /proc/<pid>/environ shows the environment a process started with, so
   * the secret must be there from exec on: re-exec ourselves with it. */
  if (!getenv(SECRET_NAME)) {
    setenv(SECRET_NAME, SECRET_VALUE, 1);
    execv("/proc/self/exe", argv);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_defaults_and_names, setup, teardown),
      cmocka_unit_test_setup_teardown(test_status_all_active, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_process_creation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_work, setup, teardown),
      cmocka_unit_test_setup_teardown(test_privileges_dropped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_network, setup, teardown),
      cmocka_unit_test_setup_teardown(test_files_confined, setup, teardown),
      cmocka_unit_test_setup_teardown(test_parent_environ_unreadable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_signals_out, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_scheduling_others, setup, teardown),
      cmocka_unit_test_setup_teardown(test_abort_kills_self, setup, teardown),
      cmocka_unit_test_setup_teardown(test_ipc_private, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dlopen_candidate, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_size_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_proc_mem_not_writable, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scratch_capped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scratch_fallback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lock_exec, setup, teardown),
      cmocka_unit_test_setup_teardown(test_layer_landlock_alone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_layer_seccomp_alone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_layer_netns_alone, setup, teardown),
      cmocka_unit_test_setup_teardown(test_layer_rlimits_alone, setup, teardown),
  };
  return cmocka_run_group_tests_name("sandbox", tests, NULL, NULL);
}
