#include "kevo/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/util.h"
#include "gen_core.h"

int kv_is_output(enum kv_role r) {
  return r == KV_ROLE_OUT || r == KV_ROLE_INOUT;
}
size_t kv_call_bytes(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS], int inputs) {
  size_t n = 0;
  for (int p = 0; p < t->nparams; p++)
    if (kv_is_output(t->params[p].role) || (inputs && t->params[p].role == KV_ROLE_IN))
      n += kv_param_bytes(t, p, nelem);
  return n;
}

int kv_is_input(enum kv_role r) {
  return r == KV_ROLE_IN || r == KV_ROLE_INOUT;
}

static int is_buffer(enum kv_role r) {
  return r == KV_ROLE_IN || r == KV_ROLE_OUT || r == KV_ROLE_INOUT;
}

int kv_layout(const struct kv_task *t, const struct kv_sizeset *s, int64_t nelem[KV_MAX_PARAMS],
              char *err, size_t errlen) {
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    nelem[p] = 0;
  int64_t total;
  if (kv_sizeset_bytes(t, s, &total, err, errlen) < 0)
    return -1;
  for (int p = 0; p < t->nparams; p++)
    if (is_buffer(t->params[p].role) && kv_param_elems(t, p, s, &nelem[p], err, errlen) < 0)
      return -1;
  return 0;
}

size_t kv_param_bytes(const struct kv_task *t, int p, const int64_t nelem[KV_MAX_PARAMS]) {
  if (!is_buffer(t->params[p].role))
    return 0;
  return (size_t)nelem[p] * kv_dtype_size(t->params[p].dtype);
}

static const uint32_t poison32[2] = {0x7fc5a5a5u, 0x7fc35a5au};
static const uint64_t poison64[2] = {0x7ff8a5a5a5a5a5a5ull, 0x7ff85a5a5a5a5a5aull};
static const uint16_t poison_f16[2] = {0x7e5au, 0x7e25u};
static const uint16_t poison_bf16[2] = {0x7fc5u, 0x7fc3u};
static const uint8_t poison_byte[2] = {0xa5u, 0x5au};

void kv_poison_fill(enum kv_dtype d, void *buf, size_t n, int which) {
  which &= 1;
  switch (d) {
  case KV_F32: {
    uint32_t *b = buf;
    for (size_t i = 0; i < n; i++)
      b[i] = poison32[which];
    break;
  }
  case KV_F64: {
    uint64_t *b = buf;
    for (size_t i = 0; i < n; i++)
      b[i] = poison64[which];
    break;
  }
  case KV_F16:
  case KV_BF16: {
    uint16_t *b = buf;
    uint16_t v = d == KV_F16 ? poison_f16[which] : poison_bf16[which];
    for (size_t i = 0; i < n; i++)
      b[i] = v;
    break;
  }
  default:
    memset(buf, poison_byte[which], n * kv_dtype_size(d));
  }
}

int kv_is_poison(enum kv_dtype d, const void *buf, size_t i, int which) {
  which &= 1;
  switch (d) {
  case KV_F32:
    return ((const uint32_t *)buf)[i] == poison32[which];
  case KV_F64:
    return ((const uint64_t *)buf)[i] == poison64[which];
  case KV_F16:
    return ((const uint16_t *)buf)[i] == poison_f16[which];
  case KV_BF16:
    return ((const uint16_t *)buf)[i] == poison_bf16[which];
  default: {
    size_t sz = kv_dtype_size(d);
    const uint8_t *b = (const uint8_t *)buf + i * sz;
    for (size_t k = 0; k < sz; k++)
      if (b[k] != poison_byte[which])
        return 0;
    return 1;
  }
  }
}

uint64_t kv_poison_word(enum kv_dtype d, int which) {
  which &= 1;
  switch (d) {
  case KV_F32:
    return poison32[which];
  case KV_F64:
    return poison64[which];
  case KV_F16:
    return poison_f16[which];
  case KV_BF16:
    return poison_bf16[which];
  default: {
    uint64_t v = 0;
    for (size_t k = 0; k < kv_dtype_size(d); k++)
      v |= (uint64_t)poison_byte[which] << (8 * k);
    return v;
  }
  }
}

void kv_fill_param(const struct kv_task *t, int p, int64_t nelem, void *buf, uint64_t seed) {
  const struct kv_param *pp = &t->params[p];
  kv_gen_fill(pp->dtype, &pp->init, seed, (uint64_t)p, buf, (size_t)nelem);
}

void kv_fill_inputs(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                    void *const bufs[KV_MAX_PARAMS], uint64_t seed) {
  for (int p = 0; p < t->nparams; p++)
    if (kv_is_input(t->params[p].role) && bufs[p])
      kv_fill_param(t, p, nelem[p], bufs[p], seed);
}

/* One chunk of one param, for kv_fill_inputs_mt. */
struct fill_chunk {
  const struct kv_task *t;
  int p;
  uint64_t seed, first;
  size_t n;
  uint8_t *buf;
};

struct fill_work {
  struct fill_chunk *c;
  int n, next;
  pthread_mutex_t mu;
};

static void *fill_main(void *arg) {
  struct fill_work *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int i = w->next < w->n ? w->next++ : -1;
    pthread_mutex_unlock(&w->mu);
    if (i < 0)
      return NULL;
    struct fill_chunk *c = &w->c[i];
    const struct kv_param *pp = &c->t->params[c->p];
    size_t sz = kv_dtype_size(pp->dtype);
    kv_gen_fill_at(pp->dtype, &pp->init, c->seed, (uint64_t)c->p, c->first, c->buf + c->first * sz,
                   c->n);
  }
}

#define FILL_CHUNK ((size_t)1 << 16) /* elements */
#define FILL_MAX_CHUNKS 65536
#define FILL_MAX_THREADS 32

void kv_fill_inputs_mt(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                       void *const bufs[KV_MAX_PARAMS], uint64_t seed, int threads) {
  size_t total = 0;
  for (int p = 0; p < t->nparams; p++)
    if (kv_is_input(t->params[p].role) && bufs[p])
      total += (size_t)nelem[p];
  /* Per call, not static: evaluations run on several threads of one
   * process (synthesis, bench). */
  struct fill_chunk *chunks = NULL;
  if (threads <= 1 || total < 2 * FILL_CHUNK ||
      total / FILL_CHUNK + KV_MAX_PARAMS > FILL_MAX_CHUNKS ||
      !(chunks = malloc((total / FILL_CHUNK + KV_MAX_PARAMS) * sizeof *chunks))) {
    kv_fill_inputs(t, nelem, bufs, seed);
    return;
  }
  struct fill_work w = {chunks, 0, 0, PTHREAD_MUTEX_INITIALIZER};
  for (int p = 0; p < t->nparams; p++) {
    if (!kv_is_input(t->params[p].role) || !bufs[p])
      continue;
    for (size_t first = 0; first < (size_t)nelem[p]; first += FILL_CHUNK) {
      size_t n = (size_t)nelem[p] - first < FILL_CHUNK ? (size_t)nelem[p] - first : FILL_CHUNK;
      chunks[w.n++] = (struct fill_chunk){t, p, seed, first, n, bufs[p]};
    }
  }
  if (threads > FILL_MAX_THREADS)
    threads = FILL_MAX_THREADS;
  if (threads > w.n)
    threads = w.n;
  pthread_t th[FILL_MAX_THREADS];
  int started = 0;
  for (int i = 1; i < threads; i++)
    if (pthread_create(&th[started], NULL, fill_main, &w) == 0)
      started++;
  fill_main(&w);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&w.mu);
  free(chunks);
}

static uint64_t mix64(uint64_t z) {
  return kv_splitmix64(&z);
}

/* Positions and values of the perturbation of param p at iteration iter. */
static void perturb_plan(const struct kv_task *t, int p, int64_t n, uint64_t seed, uint64_t iter,
                         size_t pos[KV_PERTURB_POINTS], uint8_t vals[KV_PERTURB_POINTS * 8]) {
  const struct kv_param *pp = &t->params[p];
  uint64_t key = mix64(seed ^ mix64(iter * 0x100 + (uint64_t)p + 0x51ed27));
  for (int j = 0; j < KV_PERTURB_POINTS; j++)
    pos[j] = (size_t)(mix64(key + (uint64_t)j) % (uint64_t)n);
  kv_gen_fill(pp->dtype, &pp->init, key, 0x7e57u + (uint64_t)p, vals, KV_PERTURB_POINTS);
}

void kv_perturb_points(const struct kv_task *t, int p, int64_t n, uint64_t seed, uint64_t iter,
                       size_t pos[KV_PERTURB_POINTS]) {
  uint8_t vals[KV_PERTURB_POINTS * 8];
  if (n <= 0) {
    for (int j = 0; j < KV_PERTURB_POINTS; j++)
      pos[j] = 0;
    return;
  }
  perturb_plan(t, p, n, seed, iter, pos, vals);
}

void kv_perturb(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                void *const bufs[KV_MAX_PARAMS], uint64_t seed, uint64_t iter, uint8_t *saved) {
  for (int p = 0; p < t->nparams; p++) {
    if (!kv_is_input(t->params[p].role) || !bufs[p] || nelem[p] <= 0)
      continue;
    size_t sz = kv_dtype_size(t->params[p].dtype);
    size_t pos[KV_PERTURB_POINTS];
    uint8_t vals[KV_PERTURB_POINTS * 8];
    perturb_plan(t, p, nelem[p], seed, iter, pos, vals);
    uint8_t *b = bufs[p];
    for (int j = 0; j < KV_PERTURB_POINTS; j++) {
      if (saved)
        memcpy(saved + ((size_t)p * KV_PERTURB_POINTS + (size_t)j) * 8, b + pos[j] * sz, sz);
      memcpy(b + pos[j] * sz, vals + (size_t)j * sz, sz);
    }
  }
}

void kv_unperturb(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                  void *const bufs[KV_MAX_PARAMS], uint64_t seed, uint64_t iter,
                  const uint8_t *saved) {
  for (int p = t->nparams - 1; p >= 0; p--) {
    if (!kv_is_input(t->params[p].role) || !bufs[p] || nelem[p] <= 0)
      continue;
    size_t sz = kv_dtype_size(t->params[p].dtype);
    size_t pos[KV_PERTURB_POINTS];
    uint8_t vals[KV_PERTURB_POINTS * 8];
    perturb_plan(t, p, nelem[p], seed, iter, pos, vals);
    uint8_t *b = bufs[p];
    /* Reverse order, so repeated positions get their first saved value back. */
    for (int j = KV_PERTURB_POINTS - 1; j >= 0; j--)
      memcpy(b + pos[j] * sz, saved + ((size_t)p * KV_PERTURB_POINTS + (size_t)j) * 8, sz);
  }
}

void kv_fill_scalars(const struct kv_task *t, const struct kv_sizeset *s, uint64_t seed,
                     uint64_t storage[KV_MAX_PARAMS]) {
  for (int p = 0; p < t->nparams; p++) {
    storage[p] = 0;
    const struct kv_param *pp = &t->params[p];
    if (pp->role == KV_ROLE_SIZE) {
      int v = (int)s->values[p];
      memcpy(&storage[p], &v, sizeof v);
    } else if (pp->role == KV_ROLE_SCALAR) {
      kv_gen_scalar(pp, mix64(seed + (uint64_t)p), &storage[p]);
    }
  }
}

void kv_flush_cpu(uint8_t *buf, size_t n, unsigned salt) {
  volatile uint8_t sink = 0;
  memset(buf, (int)(salt & 0xff), n);
  uint8_t acc = 0;
  for (size_t i = 0; i < n; i += 64)
    acc ^= buf[i];
  sink = acc;
  (void)sink;
}

size_t kv_guard_after(size_t bytes) {
  return (bytes + 63) / 64 * 64 - bytes + KV_GUARD_BYTES;
}

uint64_t kv_guard_key(uint64_t seed, int p) {
  return mix64(seed ^ mix64(0x6a7264u + (uint64_t)p));
}

/* Byte i of a zone's pattern (i counted from the buffer). */
static uint8_t guard_byte(uint64_t key, int before, size_t i) {
  return (uint8_t)(mix64(key + (before ? 0x8000000000000000ull : 0) + i / 8) >> (8 * (i % 8)));
}

void kv_guard_fill(uint8_t *g, size_t n, uint64_t key, int before) {
  for (size_t i = 0; i < n; i++)
    g[before ? n - 1 - i : i] = guard_byte(key, before, i);
}

long kv_guard_changed(const uint8_t *g, size_t n, uint64_t key, int before) {
  for (size_t i = 0; i < n; i++)
    if (g[before ? n - 1 - i : i] != guard_byte(key, before, i))
      return (long)i;
  return -1;
}

static int guarded(const struct kv_task *t, int p) {
  enum kv_role r = t->params[p].role;
  return r == KV_ROLE_IN || r == KV_ROLE_OUT || r == KV_ROLE_INOUT;
}

void kv_guard_fill_call(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                        void *const bufs[KV_MAX_PARAMS], uint64_t seed, int before_each) {
  for (int p = 0, first = 1; p < t->nparams; p++) {
    if (!guarded(t, p) || !bufs[p])
      continue;
    uint8_t *b = bufs[p];
    size_t n = kv_param_bytes(t, p, nelem);
    uint64_t key = kv_guard_key(seed, p);
    if (before_each || first)
      kv_guard_fill(b - KV_GUARD_BYTES, KV_GUARD_BYTES, key, 1);
    kv_guard_fill(b + n, kv_guard_after(n), key, 0);
    first = 0;
  }
}

int kv_guard_find(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                  void *const bufs[KV_MAX_PARAMS], uint64_t seed, int before_each, int *param,
                  int *before, long *byte) {
  for (int p = 0, first = 1; p < t->nparams; p++) {
    if (!guarded(t, p) || !bufs[p])
      continue;
    const uint8_t *b = bufs[p];
    size_t n = kv_param_bytes(t, p, nelem);
    uint64_t key = kv_guard_key(seed, p);
    long k = -1;
    *before = before_each || first;
    if (*before)
      k = kv_guard_changed(b - KV_GUARD_BYTES, KV_GUARD_BYTES, key, 1);
    if (k < 0) {
      *before = 0;
      k = kv_guard_changed(b + n, kv_guard_after(n), key, 0);
    }
    first = 0;
    if (k >= 0) {
      *param = p;
      *byte = k;
      return 1;
    }
  }
  return 0;
}

void kv_guard_detail(const struct kv_task *t, int p, int64_t n, int before, long byte, char *out,
                     size_t cap) {
  const char *name = t->params[p].name;
  if (before)
    snprintf(out, cap,
             "%s: the candidate wrote before its first element (byte %ld of the guard zone "
             "before %s[0] changed, counting back from it)",
             name, byte, name);
  else if (n > 0)
    snprintf(out, cap,
             "%s: the candidate wrote past the end of its last element (byte %ld of the guard "
             "zone after %s[%lld] changed)",
             name, byte, name, (long long)n - 1);
  else
    snprintf(out, cap,
             "%s: the candidate wrote into an empty buffer (byte %ld of the guard zone after it "
             "changed)",
             name, byte);
}

/* Buffers back to back, each followed by its guard zone; before_each: a
 * zone of its own before each buffer too, else one before the first only. */
static size_t layout(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                     size_t off[KV_MAX_PARAMS], size_t *per_call, int before_each) {
  size_t o = before_each ? 0 : KV_GUARD_BYTES;
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    off[p] = 0;
  for (int p = 0; p < t->nparams; p++) {
    enum kv_role r = t->params[p].role;
    if (r != KV_ROLE_IN && r != KV_ROLE_OUT && r != KV_ROLE_INOUT)
      continue;
    off[p] = o + (before_each ? KV_GUARD_BYTES : 0);
    o = off[p] + kv_param_bytes(t, p, nelem) + kv_guard_after(kv_param_bytes(t, p, nelem));
  }
  *per_call = o ? o : 64;
  return *per_call;
}

size_t kv_shm_layout(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                     size_t off[KV_MAX_PARAMS], size_t *per_call) {
  return layout(t, nelem, off, per_call, 0);
}

size_t kv_check_layout(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                       size_t off[KV_MAX_PARAMS], size_t *per_call) {
  return layout(t, nelem, off, per_call, 1);
}

int kv_fill_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 16 ? 16 : n < 1 ? 1 : (int)n;
}

void kv_shm_call_bufs(const struct kv_task *t, uint8_t *base, size_t per_call,
                      const size_t off[KV_MAX_PARAMS], int c, void *bufs[KV_MAX_PARAMS]) {
  for (int p = 0; p < KV_MAX_PARAMS; p++) {
    enum kv_role r = p < t->nparams ? t->params[p].role : KV_ROLE_SIZE;
    bufs[p] = r == KV_ROLE_IN || r == KV_ROLE_OUT || r == KV_ROLE_INOUT
                  ? base + (size_t)c * per_call + off[p]
                  : NULL;
  }
}

size_t kv_pack_call(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                    void *const bufs[KV_MAX_PARAMS], int inputs, uint8_t *dst) {
  size_t o = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < t->nparams; p++) {
      enum kv_role r = t->params[p].role;
      if (pass == 0 ? kv_is_output(r) : inputs && r == KV_ROLE_IN) {
        size_t b = kv_param_bytes(t, p, nelem);
        memcpy(dst + o, bufs[p], b);
        o += b;
      }
    }
  return o;
}

int64_t kv_sample_count(int64_t n) {
  return n > KV_SAMPLE_ELEMS ? KV_SAMPLE_ELEMS : n;
}

void kv_sample_indices(uint64_t seed, int p, int64_t n, int64_t *idx) {
  int64_t k = kv_sample_count(n);
  if (k == n) {
    for (int64_t s = 0; s < n; s++)
      idx[s] = s;
    return;
  }
  /* Stratum s starts at s*q + floor(s*r/k) (kvg_sample_index), walked here
   * with the quotient and remainder of s*r by k carried along. */
  uint64_t q = (uint64_t)n / (uint64_t)k, r = (uint64_t)n % (uint64_t)k, quot = 0, rem = 0, lo = 0;
  for (uint64_t s = 0; s < (uint64_t)k; s++) {
    rem += r;
    if (rem >= (uint64_t)k) {
      rem -= (uint64_t)k;
      quot++;
    }
    uint64_t hi = (s + 1) * q + quot;
    idx[s] = (int64_t)kvg_sample_pick(seed, p, s, lo, hi - lo);
    lo = hi;
  }
}

void kv_sample_layout(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                      int64_t snelem[KV_MAX_PARAMS]) {
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    snelem[p] = p < t->nparams ? kv_sample_count(nelem[p]) : 0;
}

int kv_pack_sample(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                   void *const bufs[KV_MAX_PARAMS], int inputs, uint64_t seed, uint8_t *dst) {
  int64_t *idx = malloc(KV_SAMPLE_ELEMS * sizeof *idx);
  if (!idx)
    return -1;
  size_t o = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < t->nparams; p++) {
      enum kv_role r = t->params[p].role;
      if (pass == 0 ? !kv_is_output(r) : !(inputs && r == KV_ROLE_IN))
        continue;
      size_t sz = kv_dtype_size(t->params[p].dtype);
      int64_t k = kv_sample_count(nelem[p]);
      kv_sample_indices(seed, p, nelem[p], idx);
      for (int64_t i = 0; i < k; i++)
        memcpy(dst + o + (size_t)i * sz, (const uint8_t *)bufs[p] + (size_t)idx[i] * sz, sz);
      o += (size_t)k * sz;
    }
  free(idx);
  return 0;
}
