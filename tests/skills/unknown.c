/* A test expert that names an undeclared mechanism. */
// kevo:mechanism A -- a
// kevo:mechanism B -- b
void rowsum(const float *x, float *y, int rows, int cols) {
#if KV_MECH_A
#endif
#if KV_MECH_BB
#endif
  for (int r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = s;
  }
}
