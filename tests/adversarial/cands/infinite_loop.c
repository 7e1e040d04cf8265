/* Attack: infinite_loop (the hang that outlives a harness's timeout).
 * Spins forever on a volatile counter without a system call, so nothing but
 * a signal from outside can stop it.
 * Defence: the parent kills the worker at the job deadline, always.
 * Expected verdict: timeout (the test sets a short job deadline). */
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  volatile unsigned long spin = 0;
  for (;;)
    spin++;
}
