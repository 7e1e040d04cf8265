/* A line splice and the digraph %: hide the directive from a naive scan;
 * the path climbs out of the build directory. Refused. */
%:inc\
lude "../../../../../../../../proc/self/environ"
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
