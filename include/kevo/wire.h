/* Frames between kevo and kevo-worker. Requests go over one pipe (the
 * worker's fd 3), replies over another (its fd 4), never over stdout.
 *
 * A frame: a 28-byte little-endian header
 *   magic "KVW1" (u32) | type (u32) | token (u64) | json_len (u32) | blob_len (u64)
 * then json_len bytes of a JSON object and blob_len bytes of binary data.
 * Everything a worker sends is untrusted: the reader checks the magic, the
 * caps and the token before it allocates anything. */
#ifndef KEVO_WIRE_H
#define KEVO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define KV_WIRE_MAGIC 0x3157564bu /* "KVW1" */
#define KV_WIRE_HEADER 28
#define KV_WIRE_JSON_MAX (1u << 20)
#define KV_WIRE_REQ_FD 3
#define KV_WIRE_RESP_FD 4
/* A memfd shared with the parent (cpu timing: every timed call's buffers,
 * written by the parent while the worker is stopped). */
#define KV_WIRE_SHM_FD 5
/* A second memfd shared with the parent (cpu checks: the one call's buffers
 * of a CHECK job, filled by the parent and read back by it while the worker
 * is stopped: the reply says only that the call returned). */
#define KV_WIRE_CHECK_FD 6

enum kv_wire_type {
  KV_MSG_HELLO = 1, /* worker -> parent on start: sandbox status */
  KV_MSG_INIT,      /* task json */
  KV_MSG_LOAD,      /* {slot, path} */
  KV_MSG_CHECK,     /* correctness calls; reply blob: outputs (and inputs) per call */
  KV_MSG_TIME,      /* one timing phase: calls on fresh inputs, their times; no blob */
  KV_MSG_PROBE,     /* try each sandbox escape and report */
  KV_MSG_QUIT,
  KV_MSG_CALIB, /* measure the device's ceilings (cuda): bandwidth, FMA rate */
  KV_MSG_FETCH, /* outputs and inputs of one call of the last TIME phase */
  /* To a clean worker (never one that loaded a candidate): buffers it owns
   * and lends to a candidate's worker by handle (cuda: CUDA IPC handles),
   * {"op": "lend" | "fill" | "read" | "return", "lease": id, ...}: lend
   * replies {"handles": [per call: [per param: handle text or null]],
   * "offset": bytes from an allocation to its buffer}; a CHECK or TIME job
   * of the candidate's worker then names them ("lent", "offset"); read
   * waits until the device runs nothing of another process, then replies
   * with the calls' outputs (and inputs) as its blob. */
  KV_MSG_LEND,
  KV_MSG_REPLY = 100,
  KV_MSG_ERROR = 101,
};

struct kv_frame_header {
  uint32_t magic, type;
  uint64_t token;
  uint32_t json_len;
  uint64_t blob_len;
};

void kv_wire_pack_header(const struct kv_frame_header *h, uint8_t out[KV_WIRE_HEADER]);
/* Returns 0 and fills h when the header is well-formed and within caps
 * (json_len <= KV_WIRE_JSON_MAX, blob_len <= blob_max); -1 otherwise. */
int kv_wire_unpack_header(const uint8_t in[KV_WIRE_HEADER], uint64_t blob_max,
                          struct kv_frame_header *h);

/* Incremental frame parser over a byte stream (the parent side). */
struct kv_frame_parser {
  uint64_t blob_max;
  uint8_t hdr[KV_WIRE_HEADER];
  size_t hdr_have;
  struct kv_frame_header h;
  char *json; /* json_len + 1 bytes, NUL-terminated */
  uint8_t *blob;
  uint64_t body_have;
  int done, bad;
};
void kv_frame_parser_init(struct kv_frame_parser *p, uint64_t blob_max);
/* Consumes up to n bytes; returns how many were used. Sets p->done once a
 * whole frame is in, p->bad on a malformed header (the stream is then dead). */
size_t kv_frame_parser_feed(struct kv_frame_parser *p, const uint8_t *data, size_t n);
void kv_frame_parser_release(struct kv_frame_parser *p);

/* Blocking helpers on a descriptor (the worker side, and the parent's
 * requests). write: 0 or -1. read: 0, -1 on EOF/error/malformed frame. */
int kv_wire_write(int fd, uint32_t type, uint64_t token, const char *json, const void *blob,
                  uint64_t blob_len);
int kv_wire_read(int fd, uint64_t blob_max, struct kv_frame_header *h, char **json, uint8_t **blob);

#endif
