// Honest: the GEMM in cuBLAS (cublasSgemm), then one fused bias + ReLU kernel
// on the same stream. The handle and its workspace are made once (static), on
// the first call (a correctness call, never a timed one); each call only
// points the handle at the task's stream and the workspace.
// Expected: ok where the task allows cublas; policy_violation ("cublas is not
// allowed by this task") where it does not.
#include <cublas_v2.h>
#include <cuda_runtime.h>

static __global__ void bias_relu(float *y, const float *bias, int m, int n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, total = (size_t)m * (size_t)n;
  for (; i < total; i += (size_t)gridDim.x * blockDim.x) {
    float v = y[i] + bias[i % (size_t)n];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

static cublasHandle_t handle(void) {
  static cublasHandle_t h;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    h = NULL;
  return h;
}

static void *workspace(size_t *bytes) {
  static void *ws;
  *bytes = 32u << 20;
  if (!ws && cudaMalloc(&ws, *bytes) != cudaSuccess)
    ws = NULL;
  return ws;
}

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  cublasHandle_t h = handle();
  size_t wsb;
  void *ws = workspace(&wsb);
  if (!h || !ws || m <= 0 || n <= 0)
    return;
  cublasSetStream(h, stream);
  cublasSetWorkspace(h, ws, wsb); // after SetStream, which resets it
  // Row-major y[m,n] = x[m,k] w[n,k]^T is column-major y^T[n,m] = w^T(T) x^T.
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, k, x, k, &zero, y, n);
  size_t total = (size_t)m * (size_t)n;
  int blocks = (int)((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
  bias_relu<<<blocks, 256, 0, stream>>>(y, bias, m, n);
}
