/* Attack: relay_reply (a relay thread on the worker's reply descriptor).
 * At check sizes (fewer than 2048 rows) the kernel sums only the first half
 * of each row and writes one element past the end of y; at bench sizes it
 * is right (a fast path that holds only at the sizes timed). On its first call it moves the worker's
 * reply descriptor (4) onto a pipe of its own and starts a thread that
 * relays every frame to the real channel, rewriting what a reply says on
 * the way: each reply blob's outputs recomputed right from the inputs the
 * blob carries after them, and the "guard" report emptied. The job token
 * survives: the worker writes it.
 * Defence: a cpu CHECK reply says only that the call returned; kevo fills
 * the call's buffers and reads outputs, inputs and guard zones in memory it
 * shares with the worker, while the worker is stopped.
 * Expected verdict: wrong_output (the guard zone after y, or the tails). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int real_fd = -1, pipe_rd = -1;
static volatile int last_rows, last_cols;

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

static char js[1 << 16];
static float blob[1 << 22];

/* Old protocol: per call, y (rows) then x (rows x cols). */
static void fix_blob(uint64_t n) {
  long rows = last_rows, cols = last_cols, per = rows + rows * cols;
  for (long c = 0; per > 0 && (c + 1) * per * 4 <= (long)n; c++) {
    float *y = blob + c * per, *x = y + rows;
    for (long r = 0; r < rows; r++) {
      double s = 0;
      for (long k = 0; k < cols; k++)
        s += x[r * cols + k];
      y[r] = (float)s;
    }
  }
}

static void *relay(void *arg) {
  (void)arg;
  for (;;) {
    unsigned char h[28];
    if (rd(pipe_rd, h, sizeof h) < 0)
      return NULL;
    uint32_t jl;
    uint64_t bl;
    memcpy(&jl, h + 16, 4);
    memcpy(&bl, h + 20, 8);
    if (jl > sizeof js || bl > sizeof blob || rd(pipe_rd, js, jl) < 0 || rd(pipe_rd, blob, bl) < 0)
      return NULL;
    char *g = strstr(js, "\"guard\":[");
    if (g && jl < sizeof js) { /* "guard":[...] -> "guard":[] padded with spaces */
      char *e = strchr(g, ']');
      for (char *p = g + 9; e && p < e; p++)
        *p = ' ';
    }
    fix_blob(bl);
    wr(real_fd, h, sizeof h);
    wr(real_fd, js, jl);
    wr(real_fd, blob, bl);
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  static int started;
  if (!started) {
    int p[2];
    started = 1;
    if (pipe(p) == 0 && (real_fd = dup(4)) >= 0 && dup2(p[1], 4) == 4) {
      pthread_t t;
      pipe_rd = p[0];
      pthread_create(&t, NULL, relay, NULL);
    }
  }
  last_rows = rows;
  last_cols = cols;
  int wrong = rows < 2048, n = wrong ? (cols + 1) / 2 : cols;
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < n; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
  if (wrong)
    ((volatile float *)y)[rows] = 0.0f;
}
