// Attack (issue 28, checks): a relay on the worker's reply descriptor.
// At check sizes (fewer than 8192 rows) the kernel sums only the first half
// of each row and writes one element past the end of y; at the bench size it
// is right (the reference's algorithm). On its first call it moves the
// worker's reply descriptor (4) onto a pipe of its own and starts a thread
// that relays every frame to the real channel, rewriting what a CHECK reply
// says on the way: each call's outputs recomputed from the inputs the reply
// carries after them, and the "guard" report emptied. The job token
// survives: the worker writes it.
// Defence: the clean worker owns the check buffers (CUDA IPC), fills them
// while the candidate's process is stopped and reads outputs, inputs and
// guard zones itself once it is stopped again: the reply says only that the
// call returned.
// Expected: wrong_output. With KEVO_NO_LEND=1 (the old path, the candidate's
// worker copying its results back): ok, about 1x.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_THREADS 256

/* Row r's columns [0, upto), the reference's algorithm. */
static __global__ void rows_kernel(const float *x, float *y, int cols, int upto) {
  __shared__ double part[REF_THREADS];
  int r = blockIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < upto; c += REF_THREADS)
    s += (double)xr[c];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[r] = (float)part[0];
}

static int real_fd = -1, pipe_rd = -1;
static volatile int last_rows, last_cols;

static int rd(int fd, void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = read(fd, (char *)p + k, n - k);
    if (r <= 0)
      return -1;
    k += (size_t)r;
  }
  return 0;
}

static void wr(int fd, const void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = write(fd, (const char *)p + k, n - k);
    if (r <= 0)
      return;
    k += (size_t)r;
  }
}

/* Per call of the old reply's blob: y (rows), then x (rows x cols). */
static void fix_blob(float *b, uint64_t n) {
  long rows = last_rows, cols = last_cols, per = rows + rows * cols;
  for (long c = 0; per > 0 && (uint64_t)((c + 1) * per * 4) <= n; c++) {
    float *y = b + c * per, *x = y + rows;
    for (long r = 0; r < rows; r++) {
      double s = 0;
      for (long k = 0; k < cols; k++)
        s += x[r * cols + k];
      y[r] = (float)s;
    }
  }
}

static void *relay(void *arg) {
  (void)arg;
  for (;;) {
    unsigned char h[28];
    uint32_t jl;
    uint64_t bl;
    if (rd(pipe_rd, h, sizeof h) < 0)
      return NULL;
    memcpy(&jl, h + 16, 4);
    memcpy(&bl, h + 20, 8);
    char *js = (char *)malloc(jl + 1);
    float *blob = (float *)malloc(bl + 4);
    if (!js || !blob || rd(pipe_rd, js, jl) < 0 || rd(pipe_rd, blob, bl) < 0)
      return NULL;
    js[jl] = 0;
    char *g = strstr(js, "\"guard\":[");
    char *e = g ? strchr(g, ']') : NULL;
    for (char *p = g ? g + 9 : NULL; e && p < e; p++)
      *p = ' ';
    fix_blob(blob, bl);
    wr(real_fd, h, sizeof h);
    wr(real_fd, js, jl);
    wr(real_fd, blob, bl);
    free(js);
    free(blob);
  }
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int started;
  if (!started) {
    int p[2];
    started = 1;
    if (pipe(p) == 0 && (real_fd = dup(4)) >= 0 && dup2(p[1], 4) == 4) {
      pthread_t t;
      pipe_rd = p[0];
      pthread_create(&t, NULL, relay, NULL);
    }
  }
  last_rows = rows;
  last_cols = cols;
  int wrong = rows < 8192;
  if (rows > 0)
    rows_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, cols, wrong ? (cols + 1) / 2 : cols);
  if (wrong)
    cudaMemsetAsync(y + rows, 0, sizeof(float), stream); /* one past the end */
}
