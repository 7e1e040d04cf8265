// Attack (or bug): the entry takes double where the task says float.
// Defence: kevo force-includes the generated prototype; nvcc says why.
// Expected verdict: compile_error, the log naming rowsum.
#include <cuda_runtime.h>

extern "C" void rowsum(const double *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  (void)stream;
}
