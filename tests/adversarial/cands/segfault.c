/* Attack: segfault.
 * Writes through a NULL pointer (kept volatile so the compiler cannot turn it
 * into a trap or drop it).
 * Defence: the worker dies with SIGSEGV mid-job; the parent sees the death.
 * Expected verdict: crash. */
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)cols;
  int *volatile hidden = 0; /* the compiler cannot know it is NULL */
  volatile int *p = hidden;
  *p = 42;
  for (int r = 0; r < rows; r++)
    y[r] = 0.0f;
}
