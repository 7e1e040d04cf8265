/* Attack: write_outside (filesystem writes beyond the scratch directory).
 * Tries to create @MARKER@ (a path chosen by the test, outside scratch) with
 * fopen(..., "w") and with open(O_CREAT), and tries to plant a file in kevo's
 * compile cache, @CACHE_MARKER@ (cache poisoning: a later evaluation could
 * load a planted object), then computes the correct output.
 * Defence: landlock allows writes only under the worker's scratch directory.
 * Expected verdict: ok; neither marker exists afterwards. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static void try_write(const char *path) {
  FILE *f = fopen(path, "w");
  if (f) {
    fputs("written from the sandbox\n", f);
    fclose(f);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    (void)!write(fd, "again\n", 6);
    close(fd);
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  try_write("@MARKER@");
  try_write("@CACHE_MARKER@");
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
