/* The sleepy task's reference: y[r] = sum of row r of x (in double), and at
 * the bench size a 1 ms wait, so that a call's time is the clock's, steady
 * even on a loaded host. */
#include <time.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (rows == 64) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, 0);
  }
}
