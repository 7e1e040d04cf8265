/* Attack: exit0.
 * Computes the correct output, prints a success-looking line, then calls
 * exit(0): the process ends "successfully" (status 0, stdio flushed, atexit
 * handlers run) in the middle of a job. A harness that equates exit status 0
 * with success, or that reads the outputs out of shared memory after the
 * worker is gone, would accept it.
 * Defence: a worker that ends mid-job is a crash, whatever its status.
 * Expected verdict: crash. */
#include <stdio.h>
#include <stdlib.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  printf("{\"verdict\": \"ok\", \"status\": \"ok\"}\n");
  exit(0);
}
