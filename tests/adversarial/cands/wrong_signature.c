/* Attack: wrong_signature.
 * Defines rowsum over doubles instead of the task's floats. Called through
 * the float ABI it would read garbage; kevo force-includes the generated
 * prototype, so the conflicting definition must not compile.
 * Expected verdict: compile_error (the log names the conflicting types). */
void rowsum(const double *x, double *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = s;
  }
}
