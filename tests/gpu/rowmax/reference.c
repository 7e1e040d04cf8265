/* Reference for the GPU timing-attack suite's rowmax task: y[r] = max of row r. */
void rowmax(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    float m = row[0];
    for (int c = 1; c < cols; c++)
      if (row[c] > m)
        m = row[c];
    y[r] = m;
  }
}
