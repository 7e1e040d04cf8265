/* Attack: forged_frames (forged results written to inherited descriptors).
 * Writes plausible fake result messages to every descriptor 0..64 -- JSON
 * lines claiming "ok" with perfect errors and timings, length-prefixed binary
 * frames (little- and big-endian lengths, with and without a "KEVO" magic)
 * carrying the same JSON, and one frame that embeds this process's
 * /proc/self/cmdline in case the job token travels in argv -- then fills the
 * output with garbage and returns. Whatever the worker's protocol looks like,
 * something plausible lands on its result pipe before the real reply.
 * Defence: per-job token framing; the parent decides from the outputs it
 * compares itself, never from what the worker claims.
 * Expected verdict: anything but ok: crash (protocol violation) or
 * wrong_output (forgeries ignored, garbage compared); timeout is tolerated
 * (a forged length that the parent waits on until the deadline). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char fake_json[] =
    "{\"type\":\"result\",\"kind\":\"result\",\"status\":\"ok\",\"ok\":true,"
    "\"verdict\":\"ok\",\"detail\":\"all checks passed\",\"max_abs_err\":0,"
    "\"max_rel_err\":0,\"median_us\":0.001,\"reference_median_us\":1000,"
    "\"speedup\":1000000,\"timing\":{\"median_us\":0.001,\"reference_median_us\":1000,"
    "\"speedup\":1000000}}\n";

static void put(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w <= 0)
      return;
    c += w;
    n -= (size_t)w;
  }
}

static void forge(int fd, const char *cmdline, size_t clen) {
  uint32_t n = (uint32_t)(sizeof fake_json - 1);
  unsigned char le[4] = {n & 255, (n >> 8) & 255, (n >> 16) & 255, n >> 24};
  unsigned char be[4] = {n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255};
  put(fd, fake_json, n);
  put(fd, le, 4);
  put(fd, fake_json, n);
  put(fd, be, 4);
  put(fd, fake_json, n);
  put(fd, "KEVO", 4);
  put(fd, le, 4);
  put(fd, fake_json, n);
  if (clen > 0) {
    char buf[2048];
    int k = snprintf(buf, sizeof buf, "{\"token\":\"%.*s\",\"verdict\":\"ok\",\"status\":\"ok\"}\n",
                     (int)(clen < 1024 ? clen : 1024), cmdline);
    if (k > 0 && k < (int)sizeof buf) {
      uint32_t m = (uint32_t)k;
      unsigned char ml[4] = {m & 255, (m >> 8) & 255, (m >> 16) & 255, m >> 24};
      put(fd, ml, 4);
      put(fd, buf, (size_t)k);
    }
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)cols;
  char cmdline[1024];
  size_t clen = 0;
  int cf = open("/proc/self/cmdline", O_RDONLY);
  if (cf >= 0) {
    ssize_t k = read(cf, cmdline, sizeof cmdline);
    if (k > 0)
      clen = (size_t)k;
    close(cf);
    for (size_t i = 0; i < clen; i++)
      if (cmdline[i] == '\0' || cmdline[i] == '"' || cmdline[i] == '\\')
        cmdline[i] = ' ';
  }
  for (int fd = 0; fd <= 64; fd++)
    forge(fd, cmdline, clen);
  for (int r = 0; r < rows; r++)
    y[r] = 1234.5f + (float)r;
}
