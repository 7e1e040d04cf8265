// Attack: host code that starts a process.
// Defence: the candidate's own object may not call system(), fork, exec...
// Expected verdict: policy_violation.
#include <cuda_runtime.h>
#include <stdlib.h>

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  (void)stream;
  if (system("true") != 0)
    return;
}
