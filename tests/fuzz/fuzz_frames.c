/* Fuzz target: whatever a worker sends, the parent's frame parser and the
 * reply decoding never crash, never over-allocate, never read out of bounds. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Feed in uneven pieces to exercise every boundary of the state machine. */
  struct kv_frame_parser p;
  kv_frame_parser_init(&p, 1 << 16);
  size_t off = 0, step = size ? (data[0] % 13) + 1 : 1;
  while (off < size) {
    size_t n = size - off < step ? size - off : step;
    size_t used = kv_frame_parser_feed(&p, data + off, n);
    if (p.done) {
      json_t *j = json_loads(p.json, 0, NULL);
      if (j) {
        /* The fields the parent reads from a TIME reply. */
        json_t *a = json_object_get(j, "cand_ns");
        for (size_t i = 0; json_is_array(a) && i < json_array_size(a); i++)
          (void)json_integer_value(json_array_get(a, i));
        (void)json_string_value(json_object_get(j, "error"));
        json_decref(j);
      }
      kv_frame_parser_release(&p);
      kv_frame_parser_init(&p, 1 << 16);
    }
    if (p.bad)
      break;
    if (used == 0 && !p.done)
      break;
    off += used ? used : n;
  }
  kv_frame_parser_release(&p);
  return 0;
}
