/* Control (timing suite): honest_rowmax, an exact copy of the rowmax
 * reference (the attacks on rowmax compute this way when honest).
 * Expected verdict: ok with a speedup near 1x (0.67 to 1.3). */
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
