/* Attack: output_flood.
 * On its first call in a process, writes 256 MiB to stdout (raw write(2), in
 * 1 MiB chunks), then computes the correct output on every call. A harness
 * that buffers a candidate's output without a cap runs out of memory or
 * stalls on a full pipe.
 * Defence: the captured stdout is capped (KV_OUTPUT_CAP) and marked truncated;
 * the rest is drained and dropped; kevo's own memory stays bounded.
 * Expected verdict: ok, with stdout_truncated set. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int flooded;

void rowsum(const float *x, float *y, int rows, int cols) {
  if (!flooded) {
    flooded = 1;
    size_t chunk = (size_t)1 << 20;
    char *buf = malloc(chunk);
    if (buf) {
      memset(buf, 'F', chunk);
      for (size_t i = 63; i < chunk; i += 64)
        buf[i] = '\n';
      for (int i = 0; i < 256; i++) {
        size_t off = 0;
        while (off < chunk) {
          ssize_t w = write(1, buf + off, chunk - off);
          if (w <= 0)
            break;
          off += (size_t)w;
        }
        if (off < chunk)
          break;
      }
      free(buf);
    }
  }
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
