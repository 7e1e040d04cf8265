#include "kevo/util.h"
#include "kevo/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void kv_wire_pack_header(const struct kv_frame_header *h, uint8_t out[KV_WIRE_HEADER]) {
  put32(out, h->magic);
  put32(out + 4, h->type);
  put64(out + 8, h->token);
  put32(out + 16, h->json_len);
  put64(out + 20, h->blob_len);
}

int kv_wire_unpack_header(const uint8_t in[KV_WIRE_HEADER], uint64_t blob_max,
                          struct kv_frame_header *h) {
  h->magic = get32(in);
  h->type = get32(in + 4);
  h->token = get64(in + 8);
  h->json_len = get32(in + 16);
  h->blob_len = get64(in + 20);
  if (h->magic != KV_WIRE_MAGIC || h->json_len > KV_WIRE_JSON_MAX || h->blob_len > blob_max)
    return -1;
  return 0;
}

void kv_frame_parser_init(struct kv_frame_parser *p, uint64_t blob_max) {
  memset(p, 0, sizeof(*p));
  p->blob_max = blob_max;
}

void kv_frame_parser_release(struct kv_frame_parser *p) {
  free(p->json);
  free(p->blob);
  uint64_t m = p->blob_max;
  memset(p, 0, sizeof(*p));
  p->blob_max = m;
}

size_t kv_frame_parser_feed(struct kv_frame_parser *p, const uint8_t *data, size_t n) {
  size_t used = 0;
  if (p->done || p->bad)
    return 0;
  if (p->hdr_have < KV_WIRE_HEADER) {
    size_t take = KV_WIRE_HEADER - p->hdr_have;
    if (take > n)
      take = n;
    memcpy(p->hdr + p->hdr_have, data, take);
    p->hdr_have += take;
    used += take;
    if (p->hdr_have < KV_WIRE_HEADER)
      return used;
    if (kv_wire_unpack_header(p->hdr, p->blob_max, &p->h) < 0) {
      p->bad = 1;
      return used;
    }
    p->json = malloc((size_t)p->h.json_len + 1);
    p->blob = p->h.blob_len ? malloc((size_t)p->h.blob_len) : NULL;
    if (!p->json || (p->h.blob_len && !p->blob)) {
      p->bad = 1;
      return used;
    }
    p->json[p->h.json_len] = 0;
  }
  uint64_t total = (uint64_t)p->h.json_len + p->h.blob_len;
  while (used < n && p->body_have < total) {
    uint64_t left = total - p->body_have;
    size_t take = n - used;
    if (take > left)
      take = (size_t)left;
    if (p->body_have < p->h.json_len) {
      size_t j = (size_t)(p->h.json_len - p->body_have);
      if (take > j)
        take = j;
      memcpy(p->json + p->body_have, data + used, take);
    } else {
      memcpy(p->blob + (p->body_have - p->h.json_len), data + used, take);
    }
    p->body_have += take;
    used += take;
  }
  if (p->body_have == total) {
    /* The JSON part must be text without NULs inside. */
    if (memchr(p->json, 0, p->h.json_len))
      p->bad = 1;
    else
      p->done = 1;
  }
  return used;
}

static int write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n) {
    ssize_t w = kv_write_nosigpipe(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0)
      return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int kv_wire_write(int fd, uint32_t type, uint64_t token, const char *json, const void *blob,
                  uint64_t blob_len) {
  size_t jl = json ? strlen(json) : 0;
  if (jl > KV_WIRE_JSON_MAX)
    return -1;
  struct kv_frame_header h = {KV_WIRE_MAGIC, type, token, (uint32_t)jl, blob_len};
  uint8_t hdr[KV_WIRE_HEADER];
  kv_wire_pack_header(&h, hdr);
  if (write_all(fd, hdr, sizeof hdr) < 0 || (jl && write_all(fd, json, jl) < 0) ||
      (blob_len && write_all(fd, blob, (size_t)blob_len) < 0))
    return -1;
  return 0;
}

int kv_wire_read(int fd, uint64_t blob_max, struct kv_frame_header *h, char **json,
                 uint8_t **blob) {
  uint8_t hdr[KV_WIRE_HEADER];
  *json = NULL;
  *blob = NULL;
  if (read_all(fd, hdr, sizeof hdr) < 0 || kv_wire_unpack_header(hdr, blob_max, h) < 0)
    return -1;
  char *j = malloc((size_t)h->json_len + 1);
  uint8_t *b = h->blob_len ? malloc((size_t)h->blob_len) : NULL;
  if (!j || (h->blob_len && !b) || read_all(fd, j, h->json_len) < 0 ||
      (h->blob_len && read_all(fd, b, (size_t)h->blob_len) < 0)) {
    free(j);
    free(b);
    return -1;
  }
  j[h->json_len] = 0;
  *json = j;
  *blob = b;
  return 0;
}
