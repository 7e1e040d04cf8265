/* A correct C candidate for examples/kernelbench/1_Softmax_rows.py, imported. */
#include <math.h>

void op_1_Softmax_rows(const float *x, float *out, int batch_size, int dim) {
  for (int i = 0; i < batch_size; i++) {
    const float *r = x + (long)i * dim;
    float *o = out + (long)i * dim;
    float m = -INFINITY, s = 0;
    for (int j = 0; j < dim; j++)
      m = r[j] > m ? r[j] : m;
    for (int j = 0; j < dim; j++) {
      o[j] = expf(r[j] - m);
      s += o[j];
    }
    for (int j = 0; j < dim; j++)
      o[j] /= s;
  }
}
