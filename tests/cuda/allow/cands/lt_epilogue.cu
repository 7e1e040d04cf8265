// Honest: the whole layer in one cuBLASLt call, the bias and the ReLU fused
// into the GEMM's epilogue (CUBLASLT_EPILOGUE_RELU_BIAS). The handle and the
// workspace are made once (static); the descriptors and the algorithm are
// kept per shape, so a timed call at the bench size only launches.
// Expected: ok where the task allows cublaslt (or cublas); policy_violation
// ("cublaslt is not allowed by this task") where it allows neither.
#include <cublasLt.h>
#include <cuda_runtime.h>

#define WS_BYTES (32u << 20)

static __global__ void bias_relu(float *y, const float *bias, int m, int n) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, total = (size_t)m * (size_t)n;
  for (; i < total; i += (size_t)gridDim.x * blockDim.x) {
    float v = y[i] + bias[i % (size_t)n];
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

struct plan {
  int m, n, k, ok, fused; // fused: the epilogue does bias + ReLU (else a kernel after)
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, d;
  cublasLtMatmulAlgo_t algo;
};

static void drop(struct plan *p) {
  if (p->op)
    cublasLtMatmulDescDestroy(p->op);
  if (p->a)
    cublasLtMatrixLayoutDestroy(p->a);
  if (p->b)
    cublasLtMatrixLayoutDestroy(p->b);
  if (p->d)
    cublasLtMatrixLayoutDestroy(p->d);
  *p = plan{};
}

// Column-major view: d[n,m] = op(a)[n,k] * b[k,m] with a = w (k x n, ld k,
// transposed), b = x (k x m, ld k), d = y (n x m, ld n); the bias has one
// value per row of d.
static int make(cublasLtHandle_t h, struct plan *p, const float *bias, int m, int n, int k,
                int fused) {
  drop(p);
  p->m = m, p->n = n, p->k = k, p->fused = fused;
  cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  cublasLtEpilogue_t epi = fused ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi) ||
      cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                     sizeof bias) ||
      cublasLtMatrixLayoutCreate(&p->a, CUDA_R_32F, k, n, k) ||
      cublasLtMatrixLayoutCreate(&p->b, CUDA_R_32F, k, m, k) ||
      cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, n, m, n))
    return 0;
  cublasLtMatmulPreference_t pref;
  if (cublasLtMatmulPreferenceCreate(&pref))
    return 0;
  size_t ws = WS_BYTES;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(h, p->op, p->a, p->b, p->d, p->d, pref, 1, &res, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (found < 1)
    return 0;
  p->algo = res.algo;
  p->ok = 1;
  return 1;
}

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  static cublasLtHandle_t h;
  static void *ws;
  static struct plan p;
  if (!h && cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS)
    h = NULL;
  if (!ws && cudaMalloc(&ws, WS_BYTES) != cudaSuccess)
    ws = NULL;
  if (!h || !ws || m <= 0 || n <= 0)
    return;
  if (p.m != m || p.n != n || p.k != k || !p.ok) {
    // No algorithm with the fused epilogue for this shape: the plain GEMM
    // and the epilogue as a kernel.
    if (!make(h, &p, bias, m, n, k, 1) && !make(h, &p, bias, m, n, k, 0))
      return;
  } else if (p.fused) {
    // The same shape, maybe another bias buffer (a fresh one each call).
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  }
  const float one = 1.0f, zero = 0.0f;
  cublasLtMatmul(h, p.op, &one, w, p.a, x, p.b, &zero, y, p.d, y, p.d, &p.algo, ws, WS_BYTES,
                 stream);
  if (!p.fused) {
    size_t total = (size_t)m * (size_t)n;
    int blocks = (int)((total + 255) / 256 < 4096 ? (total + 255) / 256 : 4096);
    bias_relu<<<blocks, 256, 0, stream>>>(y, bias, m, n);
  }
}
