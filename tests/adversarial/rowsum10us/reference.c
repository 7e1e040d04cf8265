/* Reference for the adversarial suite's rowsum10us task (rowsum at a size
 * where a call takes about 10 us): y[r] = sum of row r of x, in double. */
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
