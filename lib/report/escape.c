/* Escaping for the page: HTML text, JSON inside a script block, and any bytes
 * made into valid UTF-8. Runs of bytes that need nothing are appended at once. */
#include "kevo/report.h"

#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. Refuses
 * overlong forms, surrogates and code points past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0)
      lo = 0xA0;
    else if (c == 0xED)
      hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0)
      lo = 0x90;
    else if (c == 0xF4)
      hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return len;
}

int kv_utf8_clean(struct kv_buf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t run = 0, i = 0;
  while (i < n) {
    size_t k = u[i] ? utf8_seq(u + i, n - i) : 0;
    if (k) {
      i += k;
      continue;
    }
    if (kv_buf_append(b, s + run, i - run) < 0 || kv_buf_append(b, REPLACEMENT, 3) < 0)
      return -1;
    i++;
    run = i;
  }
  return kv_buf_append(b, s + run, n - run);
}

int kv_html_escape(struct kv_buf *b, const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t run = 0, i = 0;
  while (i < n) {
    const char *rep = NULL;
    size_t skip = 1;
    unsigned c = u[i];
    switch (c) {
    case '&':
      rep = "&amp;";
      break;
    case '<':
      rep = "&lt;";
      break;
    case '>':
      rep = "&gt;";
      break;
    case '"':
      rep = "&quot;";
      break;
    case '\'':
      rep = "&#39;";
      break;
    case '\t':
    case '\n':
    case '\r':
      break;
    default:
      if (c < 0x20 || c == 0x7F) {
        rep = REPLACEMENT;
      } else if (c >= 0x80) {
        skip = utf8_seq(u + i, n - i);
        if (!skip) {
          rep = REPLACEMENT;
          skip = 1;
        }
      }
    }
    if (!rep) {
      i += skip;
      continue;
    }
    if (kv_buf_append(b, s + run, i - run) < 0 || kv_buf_append(b, rep, strlen(rep)) < 0)
      return -1;
    i += skip;
    run = i;
  }
  return kv_buf_append(b, s + run, n - run);
}

int kv_json_for_script(struct kv_buf *b, const char *json, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    const char *rep;
    switch (json[i]) {
    case '<':
      rep = "\\u003c";
      break;
    case '>':
      rep = "\\u003e";
      break;
    case '&':
      rep = "\\u0026";
      break;
    default:
      continue;
    }
    if (kv_buf_append(b, json + run, i - run) < 0 || kv_buf_append(b, rep, 6) < 0)
      return -1;
    run = i + 1;
  }
  return kv_buf_append(b, json + run, n - run);
}
