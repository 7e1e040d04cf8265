// WRONG on purpose (must be rejected): the ReLU is taken before the bias is
// added (relu(x W^T) + bias), so an output whose GEMM value is negative comes
// out as bias instead of relu(gemm + bias). Otherwise as 76_Gemm_Add_ReLU.cu:
// + bias). The GEMM stays in cuBLAS (cublasSgemm, plain FP32 as PyTorch runs
// it by default); the bias add and the ReLU are one pass over out in a kernel
// of our own on the same stream, instead of PyTorch's two. Needs the task to
// allow cublas (`kevo import --allow cublas`); without it kevo refuses it
// (policy_violation). The handle and its workspace are made once (static) on
// the first call, an untimed correctness call; every call points the handle
// at the entry's stream.
#include <cublas_v2.h>
#include <cuda_runtime.h>

static cublasHandle_t g_handle;
static void *g_ws;
static const size_t WS_BYTES = 32u << 20;

static __global__ void bias_relu4(float4 *y, const float4 *bias, int n4, size_t total4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total4;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 v = y[i], b = __ldg(bias + i % (size_t)n4);
    v.x = fmaxf(v.x, 0.f) + b.x;
    v.y = fmaxf(v.y, 0.f) + b.y;
    v.z = fmaxf(v.z, 0.f) + b.z;
    v.w = fmaxf(v.w, 0.f) + b.w;
    y[i] = v;
  }
}

static __global__ void bias_relu(float *y, const float *bias, int n, size_t total) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = fmaxf(y[i], 0.f) + __ldg(bias + i % (size_t)n);
}

extern "C" void op_76_Gemm_Add_ReLU(const float *x, const float *bias, const float *gemm_weight,
                                    float *out, int batch_size, int in_features, int out_features,
                                    cudaStream_t stream) {
  if (batch_size <= 0 || out_features <= 0)
    return;
  if (!g_handle && cublasCreate(&g_handle) != CUBLAS_STATUS_SUCCESS) {
    g_handle = NULL;
    return;
  }
  if (!g_ws && cudaMalloc(&g_ws, WS_BYTES) != cudaSuccess) {
    g_ws = NULL;
    return;
  }
  cublasSetStream(g_handle, stream);
  cublasSetWorkspace(g_handle, g_ws, WS_BYTES); // SetStream resets it
  // Row-major out[m][n] = sum_k x[m][k] W[n][k] is, column-major,
  // out^T (n x m) = W (as k x n, transposed) times x^T (k x m).
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(g_handle, CUBLAS_OP_T, CUBLAS_OP_N, out_features, batch_size, in_features, &one,
              gemm_weight, in_features, x, in_features, &zero, out, out_features);
  size_t total = (size_t)batch_size * out_features;
  if (out_features % 4 == 0) {
    size_t t4 = total / 4;
    size_t blocks = (t4 + 255) / 256;
    bias_relu4<<<(int)(blocks < 132 * 16 ? blocks : 132 * 16), 256, 0, stream>>>(
        (float4 *)out, (const float4 *)bias, out_features / 4, t4);
  } else {
    size_t blocks = (total + 255) / 256;
    bias_relu<<<(int)(blocks < 132 * 16 ? blocks : 132 * 16), 256, 0, stream>>>(out, bias,
                                                                                out_features, total);
  }
}
