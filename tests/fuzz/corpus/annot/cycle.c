/* A test expert whose requires form a cycle. */
// kevo:mechanism A requires=B -- a
// kevo:mechanism B requires=A -- b
void rowsum(const float *x, float *y, int rows, int cols) {
#if KV_MECH_A
#endif
#if KV_MECH_B
#endif
  for (int r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = s;
  }
}
