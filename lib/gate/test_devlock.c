/* Device locks: one timing loop per device, across threads and processes.
 * Each test records when every holder entered and left its critical section
 * (CLOCK_MONOTONIC, the same clock in every process) and fails on any
 * overlap; without the lock the holders below would overlap at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/gate/internal.h"

static char g_tmp[4096], g_locks[4200];

static int setup(void **state) {
  (void)state;
  char err[512];
  if (kv_mkdtemp("/tmp", "kevo-devlock-test", g_tmp, sizeof g_tmp, err, sizeof err) < 0)
    return -1;
  snprintf(g_locks, sizeof g_locks, "%s/locks", g_tmp);
  setenv("KEVO_LOCK_DIR", g_locks, 1); /* apart from every other kevo on this machine */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kv_rmtree(g_tmp);
  return 0;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- critical sections, recorded in memory shared with children ---- */

#define MAX_SPANS 4096
struct span {
  uint64_t enter, leave;
  int who;
  uint32_t slots; /* bit i: slot i was held (the cpu-set test) */
};
struct spans {
  int n;
  pthread_mutex_t mu; /* process-shared */
  struct span s[MAX_SPANS];
};

static struct spans *spans_new(void) {
  struct spans *sp =
      mmap(NULL, sizeof *sp, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(sp != MAP_FAILED);
  memset(sp, 0, sizeof *sp);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(&sp->mu, &a);
  pthread_mutexattr_destroy(&a);
  return sp;
}

static void spans_add(struct spans *sp, uint64_t enter, uint64_t leave, int who, uint32_t slots) {
  pthread_mutex_lock(&sp->mu);
  if (sp->n < MAX_SPANS)
    sp->s[sp->n++] = (struct span){enter, leave, who, slots};
  pthread_mutex_unlock(&sp->mu);
}

/* Fails on two spans that share a slot and overlap in time; returns how
 * many pairs of spans on disjoint slots did overlap (they may). */
static int check_no_overlap(const struct spans *sp) {
  int disjoint_overlaps = 0;
  for (int i = 0; i < sp->n; i++)
    for (int j = i + 1; j < sp->n; j++) {
      const struct span *a = &sp->s[i], *b = &sp->s[j];
      int overlap = a->enter < b->leave && b->enter < a->leave;
      if (overlap && (a->slots & b->slots))
        fail_msg("holders %d and %d were inside at once (%llu-%llu and %llu-%llu ns)", a->who,
                 b->who, (unsigned long long)a->enter, (unsigned long long)a->leave,
                 (unsigned long long)b->enter, (unsigned long long)b->leave);
      disjoint_overlaps += overlap;
    }
  return disjoint_overlaps;
}

struct contender {
  struct spans *sp;
  int who, rounds;
  int slots[4], nslots;
  int failures;
  char err[1024];
};

/* Takes the lock `rounds` times, holding it 2 ms each. */
static void *contend(void *arg) {
  struct contender *c = arg;
  uint32_t mask = 0;
  for (int i = 0; i < c->nslots; i++)
    mask |= 1u << c->slots[i];
  for (int r = 0; r < c->rounds; r++) {
    struct kv_devlock l;
    int rc = c->nslots
                 ? kv_devlock_acquire(&l, "cpus-test.lock", c->slots, c->nslots, "test cpus",
                                      "contending", 60, c->err, sizeof c->err)
                 : kv_devlock_gpu(&l, "GPU-00000000-test", "contending", 60, c->err, sizeof c->err);
    if (rc < 0) {
      c->failures++;
      continue;
    }
    uint64_t t0 = kv_now_ns();
    nap_ms(2);
    uint64_t t1 = kv_now_ns();
    kv_devlock_release(&l);
    spans_add(c->sp, t0, t1, c->who, c->nslots ? mask : 1);
  }
  return NULL;
}

/* Threads of this process and of two children, all after one GPU. */
static void test_threads_and_processes_exclude(void **state) {
  (void)state;
  struct spans *sp = spans_new();
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    assert_true(kids[k] >= 0);
    if (kids[k] == 0) {
      struct contender c[2] = {{.sp = sp, .who = 10 * (k + 1), .rounds = 15},
                               {.sp = sp, .who = 10 * (k + 1) + 1, .rounds = 15}};
      pthread_t th[2];
      for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, contend, &c[i]);
      for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
      _exit(c[0].failures + c[1].failures ? 1 : 0);
    }
  }
  struct contender c[2] = {{.sp = sp, .who = 0, .rounds = 15}, {.sp = sp, .who = 1, .rounds = 15}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, contend, &c[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  for (int k = 0; k < 2; k++) {
    int st;
    assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  assert_int_equal(c[0].failures + c[1].failures, 0);
  assert_int_equal(sp->n, 6 * 15);
  check_no_overlap(sp);
  munmap(sp, sizeof *sp);
}

/* CPU sets: holders of overlapping sets take turns; disjoint sets run side
 * by side; sets taken in any order never deadlock (ascending order inside). */
static void test_cpu_sets(void **state) {
  (void)state;
  char err[1024];
  struct kv_devlock a, b, c;
  int s01[] = {1, 0}, s12[] = {1, 2}, s23[] = {3, 2};
  assert_int_equal(
      kv_devlock_acquire(&a, "cpus-test.lock", s01, 2, "cpus 0-1", "a", 1, err, sizeof err), 0);
  assert_int_equal(
      kv_devlock_acquire(&b, "cpus-test.lock", s12, 2, "cpus 1-2", "b", 0.1, err, sizeof err), -1);
  assert_non_null(strstr(err, "cpus 1-2 timing lock"));
  assert_non_null(strstr(err, "another evaluation in this process"));
  assert_int_equal(
      kv_devlock_acquire(&c, "cpus-test.lock", s23, 2, "cpus 2-3", "c", 0, err, sizeof err),
      0); /* disjoint from a: no wait */
  kv_devlock_release(&a);
  assert_int_equal(
      kv_devlock_acquire(&b, "cpus-test.lock", s12, 2, "cpus 1-2", "b", 0.1, err, sizeof err),
      -1); /* 2 is c's */
  kv_devlock_release(&c);
  assert_int_equal(
      kv_devlock_acquire(&b, "cpus-test.lock", s12, 2, "cpus 1-2", "b", 1, err, sizeof err), 0);
  kv_devlock_release(&b);
  kv_devlock_release(&b); /* twice is harmless */

  /* Three processes with overlapping sets, one with a gap ({0,2}), and two
   * threads each: no overlap on a shared slot, nobody stuck. */
  struct spans *sp = spans_new();
  int sets[3][2] = {{0, 1}, {2, 1}, {2, 0}};
  pid_t kids[3];
  for (int k = 0; k < 3; k++) {
    kids[k] = fork();
    assert_true(kids[k] >= 0);
    if (kids[k] == 0) {
      struct contender cs[2];
      pthread_t th[2];
      for (int i = 0; i < 2; i++) {
        cs[i] = (struct contender){.sp = sp, .who = 10 * k + i, .rounds = 10, .nslots = 2};
        memcpy(cs[i].slots, sets[k], sizeof sets[k]);
        pthread_create(&th[i], NULL, contend, &cs[i]);
      }
      for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
      _exit(cs[0].failures + cs[1].failures ? 1 : 0);
    }
  }
  /* A fourth holder on slot 3 alone, beside all of them. */
  struct contender lone = {.sp = sp, .who = 99, .rounds = 100, .nslots = 1, .slots = {3}};
  contend(&lone);
  for (int k = 0; k < 3; k++) {
    int st;
    assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  assert_int_equal(lone.failures, 0);
  assert_int_equal(sp->n, 3 * 2 * 10 + 100);
  int side_by_side = check_no_overlap(sp);
  print_message("holders of disjoint sets overlapped %d times\n", side_by_side);
  assert_true(side_by_side > 0); /* slot 3 never waited for the others */
  munmap(sp, sizeof *sp);
}

/* A holder that dies by SIGKILL frees the lock; until then, a waiter gives up
 * at its deadline with the holder's pid and what it does. */
static void test_killed_holder_and_deadline(void **state) {
  (void)state;
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t kid = fork();
  assert_true(kid >= 0);
  if (kid == 0) {
    struct kv_devlock l;
    char err[1024];
    if (kv_devlock_gpu(&l, "GPU-00000000-kill", "timing rowsum", 5, err, sizeof err) < 0)
      _exit(1);
    if (write(p[1], "x", 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  char x;
  assert_int_equal(read(p[0], &x, 1), 1);
  nap_ms(1000); /* so that it has held the lock for a second and more */
  struct kv_devlock l;
  char err[1024], want[64];
  double t0 = kv_now_s();
  assert_int_equal(kv_devlock_gpu(&l, "GPU-00000000-kill", "waiting", 0.5, err, sizeof err), -1);
  double waited = kv_now_s() - t0;
  print_message("%s\n", err);
  assert_true(waited >= 0.5 && waited < 3);
  snprintf(want, sizeof want, "another kevo process (pid %d: timing rowsum)", (int)kid);
  assert_non_null(strstr(err, want));
  const char *held = strstr(err, "GPU GPU-00000000-kill timing lock for ");
  assert_non_null(held);
  double held_s = -1;
  assert_int_equal(sscanf(held, "GPU GPU-00000000-kill timing lock for %lf s", &held_s), 1);
  assert_true(held_s >= 1 && held_s < 30);
  assert_non_null(strstr(err, "gave up after waiting 0.5 s"));
  assert_non_null(strstr(err, g_locks));
  assert_int_equal(l.held, 0);
  kill(kid, SIGKILL);
  int st;
  assert_int_equal(waitpid(kid, &st, 0), kid);
  t0 = kv_now_s();
  assert_int_equal(kv_devlock_gpu(&l, "GPU-00000000-kill", "after", 5, err, sizeof err), 0);
  assert_true(kv_now_s() - t0 < 1);
  kv_devlock_release(&l);
  close(p[0]);
  close(p[1]);
}

/* A child started while the lock is held (a worker, a compiler) does not
 * inherit it: the lock's descriptor is not in the child, and once the parent
 * lets go another holder gets it while the child still runs. */
static void test_not_inherited(void **state) {
  (void)state;
  struct kv_devlock l, m;
  char err[1024];
  assert_int_equal(kv_devlock_gpu(&l, "GPU-00000000-exec", "parent", 1, err, sizeof err), 0);
  int p[2];
  assert_int_equal(pipe2(p, O_CLOEXEC), 0);
  pid_t kid = fork();
  assert_true(kid >= 0);
  if (kid == 0) {
    close(p[0]);
    execlp("sleep", "sleep", "30", (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  char x;
  assert_int_equal(read(p[0], &x, 1), 0); /* EOF: the child has exec'd */
  close(p[0]);
  char fds[64];
  snprintf(fds, sizeof fds, "/proc/%d/fd", (int)kid);
  DIR *d = opendir(fds);
  assert_non_null(d);
  struct dirent *e;
  int seen = 0;
  while ((e = readdir(d))) {
    char lp[128], target[PATH_MAX];
    snprintf(lp, sizeof lp, "%s/%s", fds, e->d_name);
    ssize_t n = readlink(lp, target, sizeof target - 1);
    if (n <= 0)
      continue;
    target[n] = 0;
    seen++;
    if (strstr(target, "gpu-GPU-00000000-exec.lock"))
      fail_msg("the child inherited the lock's descriptor (%s -> %s)", lp, target);
  }
  closedir(d);
  assert_true(seen >= 3); /* its stdin, stdout and stderr were looked at */
  assert_int_equal(kv_devlock_gpu(&m, "GPU-00000000-exec", "other", 0.1, err, sizeof err), -1);
  kv_devlock_release(&l);
  assert_int_equal(kv_devlock_gpu(&m, "GPU-00000000-exec", "other", 1, err, sizeof err), 0);
  kv_devlock_release(&m);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
}

/* A lock directory that others could write, or that is a link, is refused
 * with the fix; so is another user's (when this test may chown). */
static void test_unsafe_dir_refused(void **state) {
  (void)state;
  char dir[4300], link[4300], err[1024], out[4096];
  snprintf(dir, sizeof dir, "%s/open", g_tmp);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);
  setenv("KEVO_LOCK_DIR", dir, 1);
  assert_int_equal(kv_devlock_dir(out, sizeof out, err, sizeof err), -1);
  assert_non_null(strstr(err, "writable by group or others (mode 0777)"));
  assert_non_null(strstr(err, "chmod 700"));
  struct kv_devlock l;
  assert_int_equal(kv_devlock_gpu(&l, "GPU-x", "t", 0, err, sizeof err), -1);
  assert_int_equal(l.held, 0);
  assert_int_equal(chmod(dir, 0700), 0);
  assert_int_equal(kv_devlock_dir(out, sizeof out, err, sizeof err), 0);
  snprintf(link, sizeof link, "%s/link", g_tmp);
  assert_int_equal(symlink(dir, link), 0);
  setenv("KEVO_LOCK_DIR", link, 1);
  assert_int_equal(kv_devlock_dir(out, sizeof out, err, sizeof err), -1);
  assert_non_null(strstr(err, "symbolic link"));
  if (chown(dir, 12345, 12345) == 0) {
    setenv("KEVO_LOCK_DIR", dir, 1);
    assert_int_equal(kv_devlock_dir(out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "belongs to uid 12345"));
  } else {
    print_message("not checked: another user's directory (this test cannot chown)\n");
  }
  /* A missing one is created, 0700. */
  snprintf(dir, sizeof dir, "%s/new/locks", g_tmp);
  setenv("KEVO_LOCK_DIR", dir, 1);
  assert_int_equal(kv_devlock_dir(out, sizeof out, err, sizeof err), 0);
  struct stat st;
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_mode & 077, 0);
  setenv("KEVO_LOCK_DIR", g_locks, 1);
}

/* The default lock directory squatted by another local user (made first,
 * writable by all, or a link to their directory): timing is not blocked, a
 * private directory under the cache is used, and kv_devlock_note says so. */
static void test_squatted_default_falls_back(void **state) {
  (void)state;
  char def[4300], home[4300], err[1024], out[4096], other[4300];
  snprintf(def, sizeof def, "%s/squatted", g_tmp);
  snprintf(home, sizeof home, "%s/home", g_tmp);
  assert_int_equal(mkdir(def, 0777), 0);
  assert_int_equal(chmod(def, 0777), 0);
  assert_int_equal(mkdir(home, 0700), 0);
  char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *saved_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  char *saved_lock = strdup(getenv("KEVO_LOCK_DIR"));
  unsetenv("KEVO_LOCK_DIR");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", home, 1);
  assert_int_equal(kv_devlock_dir_at(def, out, sizeof out, err, sizeof err), 0);
  char want[4400];
  snprintf(want, sizeof want, "%s/.cache/kevo/locks", home);
  assert_string_equal(out, want);
  assert_non_null(strstr(kv_devlock_note(), "writable by group or others"));
  assert_non_null(strstr(kv_devlock_note(), want));
  struct stat st;
  assert_int_equal(stat(want, &st), 0);
  assert_int_equal(st.st_mode & 077, 0);
  /* A link planted where the directory should be. */
  snprintf(other, sizeof other, "%s/theirs", g_tmp);
  assert_int_equal(mkdir(other, 0700), 0);
  assert_int_equal(rmdir(def), 0);
  assert_int_equal(symlink(other, def), 0);
  assert_int_equal(kv_devlock_dir_at(def, out, sizeof out, err, sizeof err), 0);
  assert_string_equal(out, want);
  assert_non_null(strstr(kv_devlock_note(), "symbolic link"));
  if (saved_home)
    setenv("HOME", saved_home, 1);
  if (saved_xdg)
    setenv("XDG_CACHE_HOME", saved_xdg, 1);
  setenv("KEVO_LOCK_DIR", saved_lock, 1);
  free(saved_home);
  free(saved_xdg);
  free(saved_lock);
}

/* This thread's CPUs: what sched_getaffinity says, as slots and as text. */
static void test_cpu_slots(void **state) {
  (void)state;
  cpu_set_t set;
  CPU_ZERO(&set);
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  int slots[1024], n;
  char text[128], err[256];
  n = kv_devlock_cpu_slots(slots, 1024, text, sizeof text, err, sizeof err);
  assert_int_equal(n, CPU_COUNT(&set));
  for (int i = 0; i < n; i++)
    assert_true(CPU_ISSET(slots[i], &set) && (i == 0 || slots[i] > slots[i - 1]));
  print_message("this thread's cpus: %s\n", text);
  /* Pinned to its first CPU, the key is that CPU alone. */
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(slots[0], &one);
  assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
  assert_int_equal(kv_devlock_cpu_slots(slots, 1024, text, sizeof text, err, sizeof err), 1);
  char want[32];
  snprintf(want, sizeof want, "%d", slots[0]);
  assert_string_equal(text, want);
  assert_int_equal(sched_setaffinity(0, sizeof set, &set), 0);
}

/* The gate: an evaluation compiles and checks while another process times on
 * the same cores, but waits to time, and gives up at its lock deadline with
 * the holder named; once the holder is gone it times. */
static void test_gate_checks_beside_but_times_alone(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  if (!src)
    src = KEVO_SOURCE_DIR;
  char dir[4096], cand[4200], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", src);
  snprintf(cand, sizeof cand, "%s/tests/adversarial/cands/good.c", src);
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t kid = fork();
  assert_true(kid >= 0);
  if (kid == 0) {
    struct kv_devlock l;
    if (kv_devlock_cpus(&l, "timing another candidate", 5, err, sizeof err) < 0)
      _exit(1);
    if (write(p[1], "x", 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  char x;
  assert_int_equal(read(p[0], &x, 1), 1);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.time_budget_s = 0.1;
  o.lock_wait_s = 1.0;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_int_equal(kv_gate_eval(t, cand, &o, r, err, sizeof err), -1);
  print_message("%s\n", err);
  char want[96];
  snprintf(want, sizeof want, "another kevo process (pid %d: timing another candidate)", (int)kid);
  assert_non_null(strstr(err, want));
  assert_non_null(strstr(err, "timing lock"));
  /* The checks ran, all passed, while the other process held the cores. */
  assert_true(r->nchecks >= 2);
  for (int i = 0; i < r->nchecks; i++)
    assert_int_equal(r->checks[i].verdict, KV_V_OK);
  assert_false(r->timed);
  assert_true(r->lock_wait_s >= 1.0);
  kv_gate_result_release(r);
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  memset(r, 0, sizeof *r);
  assert_int_equal(kv_gate_eval(t, cand, &o, r, err, sizeof err), 0);
  assert_string_equal(kv_verdict_name(r->verdict), "ok");
  assert_true(r->timed);
  assert_true(r->lock_wait_s < 1.0);
  char *js = kv_gate_result_json(r);
  assert_non_null(strstr(js, "\"lock_wait\""));
  free(js);
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
  close(p[0]);
  close(p[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_threads_and_processes_exclude),
      cmocka_unit_test(test_cpu_sets),
      cmocka_unit_test(test_killed_holder_and_deadline),
      cmocka_unit_test(test_not_inherited),
      cmocka_unit_test(test_unsafe_dir_refused),
      cmocka_unit_test(test_squatted_default_falls_back),
      cmocka_unit_test(test_cpu_slots),
      cmocka_unit_test(test_gate_checks_beside_but_times_alone),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
