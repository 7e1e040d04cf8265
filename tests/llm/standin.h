/* A loopback stand-in for the OpenAI chat completions and Anthropic messages
 * APIs, for tests: 127.0.0.1 only, an ephemeral port, a bounded number of
 * requests and a bounded lifetime, one thread per connection, and a script of
 * faults to inject, one step per request in arrival order.
 *
 * Script: steps separated by commas; after the last step every request gets
 * "ok". Steps:
 *   ok             a normal reply in the API's format (after the key check)
 *   NNN            HTTP status NNN with an API-style error body
 *   NNN:ra=V       the same with "Retry-After: V"
 *   malformed      200 with a body that is not JSON
 *   truncated      200 whose body stops halfway (Content-Length says more)
 *   empty          200 with an empty body
 *   slow=S         waits S seconds, then replies normally
 *   hold=S@PATH    waits until the file PATH exists (at most S seconds),
 *                  then replies normally: a test releases it on an event
 *   huge=N         200 with N bytes of body (Content-Length says so)
 *   stream=N       200 with N bytes of body and no Content-Length
 *   close          closes the connection without replying
 *   nousage        a normal reply without usage */
#ifndef KEVO_TEST_STANDIN_H
#define KEVO_TEST_STANDIN_H

#include <stddef.h>
#include <stdint.h>

struct standin_opts {
  const char *key;       /* the only key accepted; NULL: any (or none) */
  const char *script;    /* NULL: every request "ok" */
  int64_t input_tokens;  /* usage reported (0: 11) */
  int64_t output_tokens; /* (0: 7) */
  int max_requests;      /* stops accepting after this many (0: 64) */
  double lifetime_s;     /* stops after this long (0: 30) */
  /* Reply texts for "ok" steps (NULL: "echo N: <last message>"). Sections
   * start with a line "=== reply" (served in turn, cycling, to requests no
   * "when" section matches) or "=== when TEXT" (served to every request whose
   * last message contains TEXT; the first such section wins). Rules (kevo
   * analyze's closed-form tests): "=== when A &&& B &&& !C" matches when the
   * message holds A and B and not C ("\n" in a part is a newline). */
  const char *replies;
};

struct standin_request {
  double t; /* kv_now_s() when the request had been read */
  char path[128];
  char auth[512];    /* Authorization header */
  char api_key[512]; /* x-api-key header */
  char version[64];  /* anthropic-version header */
  char *body;        /* valid until standin_stop */
  double t_reply;    /* kv_now_s() when the reply started (0: none) */
  int status;        /* status sent (0: none) */
};

struct standin;
struct standin *standin_start(const struct standin_opts *o, char *err, size_t errlen);
int standin_port(const struct standin *s);
/* Requests read so far. */
int standin_count(struct standin *s);
/* Copies request i (0-based) into *out; 0, or -1 when there is no such request. */
int standin_get(struct standin *s, int i, struct standin_request *out);
/* Most requests in progress at one instant (read, reply not yet started). */
int standin_max_concurrent(struct standin *s);
/* 1 once the server stopped accepting (max_requests or lifetime reached)
 * and every connection has been served. */
int standin_finished(struct standin *s);
/* Stops, joins every thread, frees. */
void standin_stop(struct standin *s);

#endif
