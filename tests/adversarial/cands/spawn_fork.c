/* Attack: spawn_fork (process creation through libc).
 * Calls fork() directly; the child would be free of the job's deadline.
 * Defence: the policy check of the built object's undefined symbols finds
 * `fork` before anything runs.
 * Expected verdict: policy_violation. */
#include <unistd.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  pid_t p = fork();
  if (p == 0)
    _exit(0);
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
