// Honest: the GEMM in cuBLAS, the bias in a small kernel, the ReLU by cuDNN
// (cudnnActivationForward, in place), all on the task's stream. Both handles,
// the workspace and the descriptors are made once (static); the tensor
// descriptor is set again only when the shape changes.
// Expected: ok where the task allows cublas and cudnn; policy_violation
// ("cudnn is not allowed by this task") where it allows only cublas.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdio.h>

static __global__ void add_bias(float *y, const float *bias, int m, int n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, total = (size_t)m * (size_t)n;
  for (; i < total; i += (size_t)gridDim.x * blockDim.x)
    y[i] += bias[i % (size_t)n];
}

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  static cublasHandle_t bl;
  static cudnnHandle_t dn;
  static cudnnTensorDescriptor_t td;
  static cudnnActivationDescriptor_t ad;
  static void *ws;
  static int tm, tn;
  const size_t wsb = 32u << 20;
  if (!bl && cublasCreate(&bl) != CUBLAS_STATUS_SUCCESS)
    bl = NULL;
  if (!dn) {
    cudnnStatus_t st = cudnnCreate(&dn);
    if (st == CUDNN_STATUS_SUCCESS && !(st = cudnnCreateTensorDescriptor(&td)) &&
        !(st = cudnnCreateActivationDescriptor(&ad)))
      st = cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0);
    if (st != CUDNN_STATUS_SUCCESS) { /* said once: the verdict's output shows it */
      fprintf(stderr, "cudnn_relu: cuDNN setup failed: %s\n", cudnnGetErrorString(st));
      dn = NULL;
    }
  }
  if (!ws && cudaMalloc(&ws, wsb) != cudaSuccess)
    ws = NULL;
  if (!bl || !dn || !ws || m <= 0 || n <= 0) {
    fprintf(stderr, "cudnn_relu: not run (cublas %d, cudnn %d, workspace %d, m %d, n %d)\n", !!bl,
            !!dn, !!ws, m, n);
    return;
  }
  if (tm != m || tn != n) {
    cudnnStatus_t st =
        cudnnSetTensor4dDescriptor(td, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, m, n, 1, 1);
    if (st != CUDNN_STATUS_SUCCESS) {
      fprintf(stderr, "cudnn_relu: cudnnSetTensor4dDescriptor: %s\n", cudnnGetErrorString(st));
      return;
    }
    tm = m, tn = n;
  }
  cublasSetStream(bl, stream);
  cublasSetWorkspace(bl, ws, wsb);
  cudnnSetStream(dn, stream);
  const float one = 1.0f, zero = 0.0f;
  cublasStatus_t bs =
      cublasSgemm(bl, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, k, x, k, &zero, y, n);
  if (bs != CUBLAS_STATUS_SUCCESS)
    fprintf(stderr, "cudnn_relu: cublasSgemm: status %d\n", (int)bs);
  size_t total = (size_t)m * (size_t)n;
  int blocks = (int)((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
  add_bias<<<blocks, 256, 0, stream>>>(y, bias, m, n);
  cudnnStatus_t st = cudnnActivationForward(dn, ad, &one, td, y, &zero, td, y);
  static int told;
  if (st != CUDNN_STATUS_SUCCESS && !told++)
    fprintf(stderr, "cudnn_relu: cudnnActivationForward: %s\n", cudnnGetErrorString(st));
}
