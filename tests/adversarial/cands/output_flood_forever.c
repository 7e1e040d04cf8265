/* Attack: output_flood_forever.
 * Writes to stdout and stderr in an endless loop and never returns (if the
 * writes start failing it keeps spinning). Combines a hang with a flood: a
 * harness that waits for EOF on the output pipes before it checks its
 * deadline never gets there.
 * Defence: the deadline applies whatever the worker writes.
 * Expected verdict: timeout (the test sets a short job deadline). */
#include <unistd.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  static const char line[] = "flood flood flood flood flood flood flood flood flood flood\n";
  for (;;) {
    (void)!write(1, line, sizeof line - 1);
    (void)!write(2, line, sizeof line - 1);
  }
}
