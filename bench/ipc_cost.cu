// What a kernel pays for working in memory another process allocated and
// lent through CUDA IPC (issue 28's lent buffers), against its own
// cudaMalloc'd memory, on one GPU. The parent (the lender) allocates NB
// buffer pairs (offset OFF bytes into each allocation, as kevo-worker's
// lend), exports their IPC handles through a pipe; the child (the borrower)
// opens them and times the same memory-bound kernel (y = 2x over N floats)
// on its own buffers and on the lent ones, each call on the next pair,
// by events, median of R calls, then the host clock around launch + sync.
//   nvcc -O2 -arch=sm_90 -o ipc_cost bench/ipc_cost.cu && ./ipc_cost [N_MFLOATS]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NB 8
#define R 40
#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

__global__ void twice(const float *x, float *y, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    y[i] = 2.f * x[i];
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  float d = *(const float *)a - *(const float *)b;
  return d < 0 ? -1 : d > 0;
}

static void run(const char *what, float **x, float **y, size_t n) {
  float ev[R], host[R];
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 4; i++)
    twice<<<132 * 8, 256>>>(x[i % NB], y[i % NB], n);
  CK(cudaDeviceSynchronize());
  for (int i = 0; i < R; i++) {
    double t0 = now_us();
    CK(cudaEventRecord(a));
    twice<<<132 * 8, 256>>>(x[i % NB], y[i % NB], n);
    CK(cudaEventRecord(b));
    CK(cudaDeviceSynchronize());
    host[i] = (float)(now_us() - t0);
    CK(cudaEventElapsedTime(&ev[i], a, b));
    ev[i] *= 1000.f;
  }
  qsort(ev, R, sizeof *ev, cmp);
  qsort(host, R, sizeof *host, cmp);
  printf("%-34s events median %8.1f us  min %8.1f  host median %8.1f us\n", what, ev[R / 2], ev[0],
         host[R / 2]);
}

int main(int argc, char **argv) {
  size_t n = (size_t)(argc > 1 ? atof(argv[1]) : 64) * 1000000, bytes = n * sizeof(float);
  int p2c[2], c2p[2];
  if (pipe(p2c) || pipe(c2p))
    return 1;
  pid_t pid = fork();
  if (pid == 0) { /* the borrower */
    cudaIpcMemHandle_t h[2][2][NB];
    if (read(p2c[0], h, sizeof h) != (ssize_t)sizeof h)
      return 1;
    float *x[NB], *y[NB];
    for (int i = 0; i < NB; i++) {
      CK(cudaMalloc(&x[i], bytes));
      CK(cudaMalloc(&y[i], bytes));
    }
    printf("N = %zu floats (%.0f MB read + %.0f MB written a call), %d pairs in turn\n", n,
           bytes / 1e6, bytes / 1e6, NB);
    run("own cudaMalloc", x, y, n);
    for (int off = 0; off < 2; off++) {
      float *lx[NB], *ly[NB];
      for (int i = 0; i < NB; i++) {
        char *bx, *by;
        CK(cudaIpcOpenMemHandle((void **)&bx, h[off][0][i], cudaIpcMemLazyEnablePeerAccess));
        CK(cudaIpcOpenMemHandle((void **)&by, h[off][1][i], cudaIpcMemLazyEnablePeerAccess));
        lx[i] = (float *)(bx + (off ? 256 : 0));
        ly[i] = (float *)(by + (off ? 256 : 0));
      }
      run(off ? "lent (IPC), 256 bytes in" : "lent (IPC), at the allocation", lx, ly, n);
    }
    run("own cudaMalloc, again", x, y, n);
    char c = 1;
    return write(c2p[1], &c, 1) == 1 ? 0 : 1;
  }
  /* the lender */
  cudaIpcMemHandle_t h[2][2][NB];
  for (int off = 0; off < 2; off++)
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < NB; i++) {
        char *p;
        CK(cudaMalloc(&p, bytes + (off ? 256 : 0) + (2 << 20)));
        CK(cudaMemset(p, 0, bytes + 256));
        CK(cudaIpcGetMemHandle(&h[off][k][i], p));
      }
  CK(cudaDeviceSynchronize());
  if (write(p2c[1], h, sizeof h) != (ssize_t)sizeof h)
    return 1;
  char c;
  int got = (int)read(c2p[0], &c, 1);
  int st = 0;
  waitpid(pid, &st, 0);
  return got == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
