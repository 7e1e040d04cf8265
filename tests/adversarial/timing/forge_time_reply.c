/* Attack (timing class 1, forged report): forge_time_reply. Computes honestly
 * (an exact copy of the reference) and times its own calls; on its fifth
 * call at the bench size (the third timed iteration of the worker's TIME
 * job, on input set 0 perturbed at iteration 2, whose correct output it has
 * just computed) it finds the job token on the stack (the worker keeps the
 * request's frame header, magic "KVW1" then type TIME then the token, in a
 * local of its main loop), writes its own TIME reply frame on the reply
 * descriptor 4 -- three iterations (fewer than the gate's minimum), candidate
 * times 2.5x shorter than its real ones, reference times equal to its real
 * ones, t_begin/t_end inside the parent's window, and the true output of the
 * "last" iteration as the blob -- and exits before the worker can send the
 * real reply. No clock is touched: the numbers are simply made up.
 * Defence: no number that decides a verdict comes from the candidate's
 * process; the token is out of the candidate's reach or useless to it; fewer
 * than the minimum number of iterations is never ok.
 * Expected verdict: anything but ok with a speedup >= 1.3 (crash: the worker
 * died or sent a malformed/forged frame; implausible; or ok near 1x). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FORGE_AT 2 /* timed iteration */
#define FACTOR 2.5

extern char **environ;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int bench_calls;
static long long t_first, took[FORGE_AT + 1];

/* The token of the TIME request being served: a frame header (magic, type)
 * somewhere between this frame and the top of the stack. */
static int find_token(uint64_t *token) {
  const unsigned char *lo = (const unsigned char *)__builtin_frame_address(0);
  const unsigned char *hi = (const unsigned char *)environ;
  if (!hi || hi <= lo || hi - lo > (64 << 20))
    return -1;
  for (const unsigned char *p = (const unsigned char *)(((uintptr_t)lo + 7) & ~(uintptr_t)7);
       p + 16 <= hi; p += 8) {
    uint32_t magic, type;
    memcpy(&magic, p, 4);
    memcpy(&type, p + 4, 4);
    if (magic == 0x3157564bu && type == 5 /* KV_MSG_TIME */) {
      memcpy(token, p + 8, 8);
      return 0;
    }
  }
  return -1;
}

static void put(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0)
      return;
    p += w;
    n -= (size_t)w;
  }
}

static void forge(const float *y, int rows) {
  uint64_t token;
  if (find_token(&token) != 0)
    return; /* stay honest */
  char json[4096];
  size_t n = 0;
  n += (size_t)snprintf(json + n, sizeof json - n, "{\"cand_ns\":[");
  for (int i = 0; i <= FORGE_AT; i++)
    n += (size_t)snprintf(json + n, sizeof json - n, "%s%lld", i ? "," : "",
                          (long long)((double)took[i] / FACTOR));
  n += (size_t)snprintf(json + n, sizeof json - n, "],\"ref_ns\":[");
  for (int i = 0; i <= FORGE_AT; i++)
    n += (size_t)snprintf(json + n, sizeof json - n, "%s%lld", i ? "," : "", took[i]);
  n += (size_t)snprintf(json + n, sizeof json - n,
                        "],\"last_iter\":%d,\"last_set\":%d,\"t_begin\":%lld,\"t_end\":%lld}",
                        FORGE_AT, FORGE_AT % 2, t_first, mono_ns());
  /* Header: magic | type REPLY (100) | token | json_len | blob_len, little-endian. */
  unsigned char h[28];
  uint32_t magic = 0x3157564bu, type = 100, jl = (uint32_t)n;
  uint64_t bl = (uint64_t)rows * sizeof(float);
  memcpy(h, &magic, 4);
  memcpy(h + 4, &type, 4);
  memcpy(h + 8, &token, 8);
  memcpy(h + 16, &jl, 4);
  memcpy(h + 20, &bl, 8);
  put(4, h, sizeof h);
  put(4, json, n);
  put(4, y, (size_t)bl);
  syscall(SYS_exit_group, 0); /* before the worker sends the real reply */
}

void rowsum(const float *x, float *y, int rows, int cols) {
  int bench = (long)rows * cols >= (1l << 20);
  long long t0 = mono_ns();
  if (bench && bench_calls == 0)
    t_first = t0;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (!bench)
    return;
  int iter = bench_calls++ - 2; /* two warm-up calls, then the timed loop */
  if (iter >= 0 && iter <= FORGE_AT)
    took[iter] = mono_ns() - t0;
  if (iter == FORGE_AT)
    forge(y, rows);
}
