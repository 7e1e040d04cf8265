// Attack (or shortcut): calls cuBLAS although the task's "allow" list does not
// name it.
// Defence: the candidate's undefined symbols are checked against the task's
// allowed vendor libraries.
// Expected verdict: policy_violation.
#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    return;
  cublasSetStream(h, stream);
  (void)x;
  (void)y;
  (void)rows;
  (void)cols;
  cublasDestroy(h);
}
