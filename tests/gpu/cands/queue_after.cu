// Attack (issue 28, work left on the GPU after answering): a relay on the
// worker's reply descriptor queues the owed work once a TIME reply is out.
// At the bench size (8192 rows) a call computes only the first third of the
// rows (the reference's algorithm) and remembers the rest as owed; at check
// sizes it computes everything. On its first call it moves the worker's
// reply descriptor (4) onto a pipe of its own and starts a thread that
// passes every frame on; after a TIME reply (a phase's times) it launches
// the owed rows on a stream of its own and does not wait: the phase has
// answered while its work still runs on the GPU, where stopping the process
// does not stop it.
// Defence: every phase ends, inside kevo's clock, with the candidate's
// process stopped and the clean worker's probe kernel running promptly (no
// other process's work left on the GPU): the owed work counts as the
// phase's; still running 3 s later, the candidate's process is ended and a
// GPU idle then makes it `implausible`; a validated call read before the
// work was queued is stale.
// Expected: anything but ok at 1.3x or more (implausible, stale_output, or
// ok with kevo's clock raising the candidate's time).
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_THREADS 256
#define SHARE 3 /* a timed call computes 1/SHARE of the rows */

/* Rows r0 + blockIdx.x, the reference's algorithm. */
static __global__ void rows_kernel(const float *x, float *y, int r0, int cols) {
  __shared__ double part[REF_THREADS];
  int r = r0 + blockIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += REF_THREADS)
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

static struct owed {
  const float *x;
  float *y;
  int r0, rows, cols;
} owed[4096];
static int nowed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void owe(const float *x, float *y, int r0, int rows, int cols) {
  pthread_mutex_lock(&mu);
  int i = 0;
  while (i < nowed && owed[i].y != y)
    i++;
  if (i < 4096) {
    owed[i] = (struct owed){x, y, r0, rows, cols};
    nowed += i == nowed;
  }
  pthread_mutex_unlock(&mu);
}

static int real_fd = -1, pipe_rd = -1;
static cudaStream_t side;

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

/* The owed rows on the side stream, not waited for. */
static void queue_all(void) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < nowed; i++)
    rows_kernel<<<owed[i].rows - owed[i].r0, REF_THREADS, 0, side>>>(owed[i].x, owed[i].y,
                                                                     owed[i].r0, owed[i].cols);
  nowed = 0;
  pthread_mutex_unlock(&mu);
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
    char *body = (char *)malloc(jl + bl + 1);
    if (!body || rd(pipe_rd, body, jl + bl) < 0)
      return NULL;
    body[jl + bl] = 0;
    int timed = jl > 6 && memmem(body, jl, "\"ns\":[", 6) != NULL;
    wr(real_fd, h, sizeof h);
    wr(real_fd, body, jl + bl);
    free(body);
    if (timed)
      queue_all();
  }
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int started;
  if (!started) {
    int p[2];
    started = 1;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    if (pipe(p) == 0 && (real_fd = dup(4)) >= 0 && dup2(p[1], 4) == 4) {
      pthread_t t;
      pipe_rd = p[0];
      pthread_create(&t, NULL, relay, NULL);
    }
  }
  int now = rows >= 8192 ? rows / SHARE : rows;
  if (now > 0)
    rows_kernel<<<now, REF_THREADS, 0, stream>>>(x, y, 0, cols);
  if (now < rows)
    owe(x, y, now, rows, cols);
}
