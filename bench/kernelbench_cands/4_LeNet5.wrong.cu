// WRONG on purpose (must be rejected): conv2's output is flattened (h, w, c)
// instead of view(-1, 400)'s (c, h, w), so fc1 sees its inputs permuted.
// Otherwise as 4_LeNet5.cu:
// KernelBench level3/4 (LeNet-5 on 1x32x32 images): conv 5x5 (1 -> 6) + ReLU
// + 2x2 max pool, conv 5x5 (6 -> 16) + ReLU + 2x2 max pool, flatten (c, h, w)
// to 400, Linear 400 -> 120 + ReLU, 120 -> 84 + ReLU, 84 -> num_classes.
// No library: the whole network is one kernel, SAMPLES images per block, every
// activation kept in shared memory; each thread computes pooled outputs
// directly (the four conv values under a pool window, then ReLU and max), so
// no pre-pool activation is ever stored. The fully connected layers are done
// a warp per output neuron, lanes striding over its (coalesced) weight row,
// each weight read once for all the block's images.
#include <cuda_runtime.h>

#define SAMPLES 4
#define THREADS 256
#define IMG 32            // input height and width
#define C1 6              // conv1 channels
#define P1 14             // after conv1 (28x28) and the pool
#define C2 16             // conv2 channels
#define P2 5              // after conv2 (10x10) and the pool
#define FLAT (C2 * P2 * P2) // 400
#define F1 120
#define F2 84

// Sum over a warp, the result in every lane.
static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// out_act[s][o] = act(in_act[s][:] . w[o][:] + b[o]) for the block's images,
// a warp per output.
template <bool RELU>
static __device__ void dense(const float *__restrict__ w, const float *__restrict__ b,
                             const float *in_act, int nin, float *out_act, int nout) {
  int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int o = warp; o < nout; o += THREADS / 32) {
    float acc[SAMPLES];
#pragma unroll
    for (int s = 0; s < SAMPLES; s++)
      acc[s] = 0.f;
    const float *row = w + (size_t)o * nin;
    for (int k = lane; k < nin; k += 32) {
      float wv = __ldg(row + k);
#pragma unroll
      for (int s = 0; s < SAMPLES; s++)
        acc[s] = fmaf(wv, in_act[s * nin + k], acc[s]);
    }
    float bo = __ldg(b + o);
#pragma unroll
    for (int s = 0; s < SAMPLES; s++) {
      float v = warp_sum(acc[s]) + bo;
      if (lane == 0)
        out_act[s * nout + o] = RELU ? fmaxf(v, 0.f) : v;
    }
  }
}

static __global__ void __launch_bounds__(THREADS)
    lenet5(const float *__restrict__ x, const float *__restrict__ w1, const float *__restrict__ b1,
           const float *__restrict__ w2, const float *__restrict__ b2,
           const float *__restrict__ fw1, const float *__restrict__ fb1,
           const float *__restrict__ fw2, const float *__restrict__ fb2,
           const float *__restrict__ fw3, const float *__restrict__ fb3, float *__restrict__ out,
           int batch, int ncls) {
  // xs holds the images; once conv1 has read them, the same space holds the
  // flattened conv2 output and the two hidden layers.
  __shared__ __align__(16) float xs[SAMPLES * IMG * IMG];
  __shared__ float p1[SAMPLES * C1 * P1 * P1];
  __shared__ float w1s[C1 * 25], b1s[C1], w2s[C2 * C1 * 25], b2s[C2];
  float *p2 = xs, *h1 = xs + SAMPLES * FLAT, *h2 = h1 + SAMPLES * F1;
  const int tid = threadIdx.x;
  const int first = blockIdx.x * SAMPLES;

  for (int i = tid; i < C1 * 25; i += THREADS)
    w1s[i] = __ldg(w1 + i);
  for (int i = tid; i < C2 * C1 * 25; i += THREADS)
    w2s[i] = __ldg(w2 + i);
  if (tid < C1)
    b1s[tid] = __ldg(b1 + tid);
  if (tid < C2)
    b2s[tid] = __ldg(b2 + tid);
  for (int i = tid; i < SAMPLES * IMG * IMG; i += THREADS) {
    int s = i / (IMG * IMG);
    xs[i] = first + s < batch ? __ldg(x + (size_t)first * IMG * IMG + i) : 0.f;
  }
  __syncthreads();

  // conv1 + ReLU + pool: p1[s][c][py][px].
  for (int i = tid; i < SAMPLES * C1 * P1 * P1; i += THREADS) {
    int s = i / (C1 * P1 * P1), r = i % (C1 * P1 * P1);
    int c = r / (P1 * P1), q = r % (P1 * P1), py = q / P1, px = q % P1;
    const float *img = xs + s * IMG * IMG + (2 * py) * IMG + 2 * px;
    const float *wc = w1s + c * 25;
    float a00 = 0.f, a01 = 0.f, a10 = 0.f, a11 = 0.f;
#pragma unroll
    for (int ky = 0; ky < 5; ky++)
#pragma unroll
      for (int kx = 0; kx < 5; kx++) {
        float wv = wc[ky * 5 + kx];
        a00 = fmaf(wv, img[ky * IMG + kx], a00);
        a01 = fmaf(wv, img[ky * IMG + kx + 1], a01);
        a10 = fmaf(wv, img[(ky + 1) * IMG + kx], a10);
        a11 = fmaf(wv, img[(ky + 1) * IMG + kx + 1], a11);
      }
    float m = fmaxf(fmaxf(a00, a01), fmaxf(a10, a11)) + b1s[c];
    p1[i] = fmaxf(m, 0.f); // max then ReLU = ReLU then max; the bias is common
  }
  __syncthreads();

  // conv2 + ReLU + pool, flattened as view(-1, 400) does: p2[s][c*25 + py*5 + px].
  for (int i = tid; i < SAMPLES * FLAT; i += THREADS) {
    int s = i / FLAT, r = i % FLAT;
    int c = r / (P2 * P2), q = r % (P2 * P2), py = q / P2, px = q % P2;
    float a00 = 0.f, a01 = 0.f, a10 = 0.f, a11 = 0.f;
    for (int ci = 0; ci < C1; ci++) {
      const float *in = p1 + (s * C1 + ci) * P1 * P1 + (2 * py) * P1 + 2 * px;
      const float *wc = w2s + (c * C1 + ci) * 25;
#pragma unroll
      for (int ky = 0; ky < 5; ky++)
#pragma unroll
        for (int kx = 0; kx < 5; kx++) {
          float wv = wc[ky * 5 + kx];
          a00 = fmaf(wv, in[ky * P1 + kx], a00);
          a01 = fmaf(wv, in[ky * P1 + kx + 1], a01);
          a10 = fmaf(wv, in[(ky + 1) * P1 + kx], a10);
          a11 = fmaf(wv, in[(ky + 1) * P1 + kx + 1], a11);
        }
    }
    float m = fmaxf(fmaxf(a00, a01), fmaxf(a10, a11)) + b2s[c];
    p2[s * FLAT + (py * P2 + px) * C2 + c] = fmaxf(m, 0.f);
  }
  __syncthreads();

  dense<true>(fw1, fb1, p2, FLAT, h1, F1);
  __syncthreads();
  dense<true>(fw2, fb2, h1, F1, h2, F2);
  __syncthreads();

  // fc3, straight to out (rows of images past the batch are not written).
  int warp = tid >> 5, lane = tid & 31;
  for (int o = warp; o < ncls; o += THREADS / 32) {
    float acc[SAMPLES];
#pragma unroll
    for (int s = 0; s < SAMPLES; s++)
      acc[s] = 0.f;
    for (int k = lane; k < F2; k += 32) {
      float wv = __ldg(fw3 + (size_t)o * F2 + k);
#pragma unroll
      for (int s = 0; s < SAMPLES; s++)
        acc[s] = fmaf(wv, h2[s * F2 + k], acc[s]);
    }
    float bo = __ldg(fb3 + o);
#pragma unroll
    for (int s = 0; s < SAMPLES; s++) {
      float v = warp_sum(acc[s]) + bo;
      if (lane == 0 && first + s < batch)
        out[(size_t)(first + s) * ncls + o] = v;
    }
  }
}

extern "C" void op_4_LeNet5(const float *x, const float *conv1_weight, const float *conv1_bias,
                            const float *conv2_weight, const float *conv2_bias,
                            const float *fc1_weight, const float *fc1_bias,
                            const float *fc2_weight, const float *fc2_bias,
                            const float *fc3_weight, const float *fc3_bias, float *out,
                            int batch_size, int num_classes, cudaStream_t stream) {
  if (batch_size <= 0 || num_classes <= 0)
    return;
  int blocks = (batch_size + SAMPLES - 1) / SAMPLES;
  lenet5<<<blocks, THREADS, 0, stream>>>(x, conv1_weight, conv1_bias, conv2_weight, conv2_bias,
                                         fc1_weight, fc1_bias, fc2_weight, fc2_bias, fc3_weight,
                                         fc3_bias, out, batch_size, num_classes);
}
