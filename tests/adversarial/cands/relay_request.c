/* Attack: relay_request (a relay thread on the worker's request descriptor).
 * On its first call the kernel moves the worker's request descriptor (3)
 * onto a pipe of its own and starts a thread that reads kevo's requests from
 * the real channel: a CHECK it answers itself at once, with the job's token
 * and a reply that claims the call ran ("call_ns", an empty "guard" report,
 * a blob of outputs copied from the last inputs it saw), without the kernel
 * ever running; anything else it passes on to the worker. The kernel does no
 * work at all (a fast, empty kernel when timed).
 * Defence: kevo reads a cpu check's outputs in the memory it shares with the
 * worker and times and validates calls there too: a reply forged with the
 * right token changes nothing kevo reads.
 * Expected verdict: unwritten_output (the outputs still hold kevo's poison)
 * or wrong_output. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int real_fd = -1, pipe_wr = -1;
static char js[1 << 16];

static int rd(int fd, void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = read(fd, (char *)p + k, n - k);
    if (r <= 0)
      return -1;
    k += (size_t)r;
  }
  return 0;
}

static void wr(int fd, const void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = write(fd, (const char *)p + k, n - k);
    if (r <= 0)
      return;
    k += (size_t)r;
  }
}

static void answer(const unsigned char *req) {
  static const char ok[] = "{\"call_ns\":[1000,1000],\"guard\":[]}";
  unsigned char h[28];
  uint32_t type = 100, jl = sizeof ok - 1;
  uint64_t bl = 0;
  memcpy(h, req, 4);         /* magic */
  memcpy(h + 4, &type, 4);   /* KV_MSG_REPLY */
  memcpy(h + 8, req + 8, 8); /* the job's token */
  memcpy(h + 16, &jl, 4);
  memcpy(h + 20, &bl, 8);
  wr(4, h, sizeof h);
  wr(4, ok, jl);
}

static void *relay(void *arg) {
  (void)arg;
  for (;;) {
    unsigned char h[28];
    uint32_t type, jl;
    if (rd(real_fd, h, sizeof h) < 0)
      return NULL;
    memcpy(&type, h + 4, 4);
    memcpy(&jl, h + 16, 4);
    if (jl > sizeof js || rd(real_fd, js, jl) < 0)
      return NULL;
    if (type == 4) { /* KV_MSG_CHECK */
      answer(h);
      continue;
    }
    wr(pipe_wr, h, sizeof h);
    wr(pipe_wr, js, jl);
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  static int started;
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  if (!started) {
    int p[2];
    started = 1;
    if (pipe(p) == 0 && (real_fd = dup(3)) >= 0 && dup2(p[0], 3) == 3) {
      pthread_t t;
      pipe_wr = p[1];
      pthread_create(&t, NULL, relay, NULL);
    }
  }
}
