#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/runtime.h"
#include "kevo/wire.h"

static void test_roundtrip_pipe(void **state) {
  (void)state;
  int fd[2];
  assert_int_equal(pipe(fd), 0);
  uint8_t blob[100];
  for (int i = 0; i < 100; i++)
    blob[i] = (uint8_t)i;
  assert_int_equal(
      kv_wire_write(fd[1], KV_MSG_REPLY, 0x1122334455667788ull, "{\"a\":1}", blob, 100), 0);
  struct kv_frame_header h;
  char *js;
  uint8_t *b;
  assert_int_equal(kv_wire_read(fd[0], 1000, &h, &js, &b), 0);
  assert_int_equal(h.type, KV_MSG_REPLY);
  assert_true(h.token == 0x1122334455667788ull);
  assert_string_equal(js, "{\"a\":1}");
  assert_memory_equal(b, blob, 100);
  free(js);
  free(b);
  /* A blob over the reader's cap is refused before allocation. */
  assert_int_equal(kv_wire_write(fd[1], KV_MSG_REPLY, 1, "{}", blob, 100), 0);
  assert_int_equal(kv_wire_read(fd[0], 99, &h, &js, &b), -1);
  close(fd[0]);
  close(fd[1]);
}

static void test_parser_bytewise_and_bad(void **state) {
  (void)state;
  uint8_t buf[256];
  struct kv_frame_header h = {KV_WIRE_MAGIC, KV_MSG_REPLY, 42, 2, 3};
  kv_wire_pack_header(&h, buf);
  memcpy(buf + KV_WIRE_HEADER, "{}abc", 5);
  struct kv_frame_parser p;
  kv_frame_parser_init(&p, 3);
  for (size_t i = 0; i < KV_WIRE_HEADER + 5; i++)
    assert_int_equal(kv_frame_parser_feed(&p, buf + i, 1), 1);
  assert_true(p.done);
  assert_string_equal(p.json, "{}");
  assert_memory_equal(p.blob, "abc", 3);
  kv_frame_parser_release(&p);
  /* Over the cap: bad, nothing allocated. */
  kv_frame_parser_init(&p, 2);
  kv_frame_parser_feed(&p, buf, KV_WIRE_HEADER);
  assert_true(p.bad);
  assert_null(p.blob);
  kv_frame_parser_release(&p);
  /* Forged magic. */
  buf[0] ^= 1;
  kv_frame_parser_init(&p, 100);
  kv_frame_parser_feed(&p, buf, KV_WIRE_HEADER);
  assert_true(p.bad);
  kv_frame_parser_release(&p);
}

static void test_poison_patterns(void **state) {
  (void)state;
  for (int d = 0; d < KV_DTYPE_COUNT; d++) {
    uint8_t b[64];
    kv_poison_fill((enum kv_dtype)d, b, 4, 0);
    assert_true(kv_is_poison((enum kv_dtype)d, b, 3, 0));
    assert_false(kv_is_poison((enum kv_dtype)d, b, 3, 1));
    memset(b, 0, sizeof b);
    assert_false(kv_is_poison((enum kv_dtype)d, b, 0, 0));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip_pipe),
      cmocka_unit_test(test_parser_bytewise_and_bad),
      cmocka_unit_test(test_poison_patterns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
