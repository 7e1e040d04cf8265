/* Exclusive use of a device for timing, across threads and processes.
 *
 * Two timing loops on one GPU (or on the same cores) disturb each other's
 * medians, so only one runs at a time: a timing loop holds its device's lock.
 * The lock is an open-file-description lock (fcntl F_OFD_SETLK) on a file in
 * kevo's lock directory: each acquisition opens the file anew, so two threads
 * of one process exclude each other as two processes do; the kernel releases
 * it when the holder dies, however it dies; the descriptor is close-on-exec,
 * so no worker, compiler or candidate inherits it. Waiting polls, up to a
 * deadline: past it the caller gets an error naming the holder (its pid, what
 * it is doing, how long it has held the lock). Never prints, never exits. */
#ifndef KEVO_GATE_DEVLOCK_H
#define KEVO_GATE_DEVLOCK_H

#include <stddef.h>

/* How long a timing loop waits for its device by default (s). */
#define KV_DEVLOCK_WAIT_S 600.0
/* Slots one lock may name (CPUs of an affinity set). */
#define KV_DEVLOCK_MAX_SLOTS 65536

struct kv_devlock {
  int held; /* 1 between a successful acquisition and the release (a zeroed lock: 0) */
  int fd;
  char key[160];   /* what is locked, for messages: "cpus 0-1", "GPU GPU-8f6e..." */
  char path[4200]; /* the lock file */
  double waited_s; /* how long the acquisition waited */
};

/* The directory of kevo's locks: $KEVO_LOCK_DIR, else /tmp/kevo-locks-<uid>
 * (the same for every kevo process of a user, whatever its environment),
 * created 0700. A directory that is a symbolic link, belongs to another user
 * or is writable by group or others is refused, with the fix in err. */
int kv_devlock_dir(char *out, size_t cap, char *err, size_t errlen);
/* The same with def_dir in place of /tmp/kevo-locks-<uid> (for tests). When
 * the default directory is squatted (a link, another user's, writable by
 * others: any local user can make it first), a private one under kevo's
 * cache directory (kv_cache_dir()/locks) is used instead, and
 * kv_devlock_note() says so (else ""); $KEVO_LOCK_DIR is never replaced. */
int kv_devlock_dir_at(const char *def_dir, char *out, size_t cap, char *err, size_t errlen);
const char *kv_devlock_note(void);

/* Locks slots[0..n-1] (each a record of the lock file `file` in the lock
 * directory; sorted and deduplicated here, then taken in ascending order, so
 * that holders of overlapping sets cannot deadlock), waiting at most wait_s
 * seconds (0: try once). `key` names the device in messages, `what` says what
 * the holder does ("timing rowsum"), recorded in the file with its pid and
 * the time for whoever waits. 0, or -1 with the reason in err (l is then not
 * held). */
int kv_devlock_acquire(struct kv_devlock *l, const char *file, const int *slots, int n,
                       const char *key, const char *what, double wait_s, char *err, size_t errlen);
/* The cpu surface: the CPUs the calling thread may run on
 * (sched_getaffinity, inherited by the workers it starts), one slot each of
 * cpus.lock. */
int kv_devlock_cpus(struct kv_devlock *l, const char *what, double wait_s, char *err,
                    size_t errlen);
/* The cuda surface: the GPU of that UUID ("GPU-8f6e..." from the worker's
 * hello); NULL or "" (a worker that named none): one lock for every such GPU
 * of this host, which serializes more than needed but never less. */
int kv_devlock_gpu(struct kv_devlock *l, const char *uuid, const char *what, double wait_s,
                   char *err, size_t errlen);
void kv_devlock_release(struct kv_devlock *l);

/* The calling thread's CPUs as slots (ascending; at most cap), and as text
 * ("0-3,8"). Returns the count, or -1 with the reason in err. */
int kv_devlock_cpu_slots(int *slots, int cap, char *text, size_t textcap, char *err, size_t errlen);

#endif
