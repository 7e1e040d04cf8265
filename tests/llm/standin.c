/* The loopback stand-in server (see standin.h). Written for tests: plain
 * blocking sockets with poll() deadlines, one thread per connection, every
 * connection closed after one reply. */
#include "standin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kevo/util.h"

enum { MAX_STEPS = 64, REQ_MAX_BYTES = 1 << 20, IO_DEADLINE_MS = 5000 };

enum action {
  A_OK,
  A_STATUS,
  A_MALFORMED,
  A_TRUNCATED,
  A_EMPTY,
  A_SLOW,
  A_HUGE,
  A_STREAM,
  A_CLOSE,
  A_NOUSAGE
};

struct step {
  enum action a;
  int status;
  char retry_after[32];
  double delay_s;
  size_t bytes;
  char until[256]; /* hold: the file whose creation ends the wait */
};

struct conn {
  struct standin *s;
  int fd;
  pthread_t th;
  int started;
};

struct standin {
  struct standin_opts o;
  char key[512];
  int has_key;
  struct step steps[MAX_STEPS];
  int n_steps;
  int listen_fd, port;
  int stop_pipe[2];
  pthread_t accept_th;
  pthread_mutex_t mu;
  struct conn *conns; /* max_requests of them */
  int n_conns;
  struct standin_request *reqs;
  int n_reqs;
  int active;
  int finished;
  double t_end;
  /* scripted reply texts */
  char *rtext;
  int nreply, nwhen, next_reply;
  const char *reply[MAX_STEPS];
  const char *when[MAX_STEPS], *when_reply[MAX_STEPS];
};

/* Splits o.replies into sections (see standin.h), in place in s->rtext. */
static void parse_replies(struct standin *s) {
  if (!s->o.replies)
    return;
  s->rtext = strdup(s->o.replies);
  if (!s->rtext)
    return;
  char *p = s->rtext;
  char **body = NULL;
  while (p && *p) {
    char *eol = strchr(p, '\n');
    if (!strncmp(p, "=== ", 4)) {
      if (eol)
        *eol = 0;
      if (body)
        p[-1] = p[-1] == '\n' ? 0 : p[-1];
      if (!strncmp(p + 4, "when ", 5) && s->nwhen < MAX_STEPS) {
        s->when[s->nwhen] = p + 9;
        body = (char **)&s->when_reply[s->nwhen++];
      } else if (s->nreply < MAX_STEPS) {
        body = (char **)&s->reply[s->nreply++];
      } else {
        body = NULL;
      }
      if (body)
        *body = eol ? eol + 1 : p + strlen(p);
      p = eol ? eol + 1 : NULL;
      continue;
    }
    p = eol ? eol + 1 : NULL;
  }
}

/* 1 when content holds every part of `when` (parts separated by " &&& ";
 * a part starting with "!" must be absent). Newlines are written "\n". */
static int when_matches(const char *content, const char *when) {
  for (const char *p = when; *p;) {
    const char *e = strstr(p, " &&& ");
    size_t n = e ? (size_t)(e - p) : strlen(p);
    int neg = n > 0 && *p == '!';
    char part[256];
    size_t k = 0;
    for (size_t i = neg; i < n && k + 1 < sizeof part; i++) {
      if (p[i] == '\\' && i + 1 < n && p[i + 1] == 'n') {
        part[k++] = '\n';
        i++;
      } else
        part[k++] = p[i];
    }
    part[k] = 0;
    if ((strstr(content, part) != NULL) == neg)
      return 0;
    p += n;
    if (e)
      p += 5;
  }
  return 1;
}

/* The scripted text for a request whose last message is `content`, or NULL. */
static const char *pick_reply(struct standin *s, const char *content) {
  for (int i = 0; i < s->nwhen; i++)
    if (content &&
        (strstr(s->when[i], " &&& ") || s->when[i][0] == '!' ? when_matches(content, s->when[i])
                                                             : strstr(content, s->when[i]) != NULL))
      return s->when_reply[i];
  if (!s->nreply)
    return NULL;
  pthread_mutex_lock(&s->mu);
  const char *r = s->reply[s->next_reply++ % s->nreply];
  pthread_mutex_unlock(&s->mu);
  return r;
}

/* ---- script ------------------------------------------------------------- */

static int parse_script(struct standin *s, const char *script, char *err, size_t errlen) {
  s->n_steps = 0;
  if (!script || !*script)
    return 0;
  char *copy = strdup(script), *save = NULL;
  if (!copy)
    return kv_error(err, errlen, "standin: out of memory");
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (s->n_steps >= MAX_STEPS) {
      free(copy);
      return kv_error(err, errlen, "standin: more than %d script steps", MAX_STEPS);
    }
    struct step *st = &s->steps[s->n_steps++];
    memset(st, 0, sizeof *st);
    if (!strcmp(t, "ok"))
      st->a = A_OK;
    else if (!strcmp(t, "malformed"))
      st->a = A_MALFORMED;
    else if (!strcmp(t, "truncated"))
      st->a = A_TRUNCATED;
    else if (!strcmp(t, "empty"))
      st->a = A_EMPTY;
    else if (!strcmp(t, "close"))
      st->a = A_CLOSE;
    else if (!strcmp(t, "nousage"))
      st->a = A_NOUSAGE;
    else if (!strncmp(t, "slow=", 5)) {
      st->a = A_SLOW;
      st->delay_s = atof(t + 5);
    } else if (!strncmp(t, "hold=", 5) && strchr(t, '@')) {
      st->a = A_SLOW;
      st->delay_s = atof(t + 5);
      snprintf(st->until, sizeof st->until, "%s", strchr(t, '@') + 1);
    } else if (!strncmp(t, "huge=", 5) || !strncmp(t, "stream=", 7)) {
      st->a = t[0] == 'h' ? A_HUGE : A_STREAM;
      st->bytes = (size_t)strtoull(strchr(t, '=') + 1, NULL, 10);
    } else if (t[0] >= '1' && t[0] <= '5') {
      st->a = A_STATUS;
      st->status = atoi(t);
      const char *ra = strstr(t, ":ra=");
      if (ra)
        snprintf(st->retry_after, sizeof st->retry_after, "%s", ra + 4);
    } else {
      kv_error(err, errlen, "standin: script step '%s' is not understood", t);
      free(copy);
      return -1;
    }
  }
  free(copy);
  return 0;
}

/* ---- I/O with deadlines ------------------------------------------------- */

/* Waits until fd is ready for `events` or the stop pipe fires; 1 ready, 0
 * stopped or timed out. */
static int wait_fd(struct standin *s, int fd, short events, int ms) {
  struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = s->stop_pipe[0], .events = POLLIN}};
  for (;;) {
    int r = poll(p, 2, ms);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0 || (p[1].revents & POLLIN))
      return 0;
    return 1;
  }
}

static int send_all(struct standin *s, int fd, const char *p, size_t n) {
  while (n > 0) {
    if (!wait_fd(s, fd, POLLOUT, IO_DEADLINE_MS))
      return -1;
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Sleeps up to `secs`, waking early when the server stops. */
/* Waits secs, or (until non-empty) until that file exists, at most secs. */
static void nap(struct standin *s, double secs, const char *until) {
  struct pollfd p = {.fd = s->stop_pipe[0], .events = POLLIN};
  int ms = (int)(secs * 1000);
  for (int waited = 0; waited < ms; waited += 20) {
    if (until[0] && access(until, F_OK) == 0)
      return;
    if (poll(&p, 1, until[0] ? 20 : ms) != 0 || !until[0])
      return;
  }
}

/* ---- replies ------------------------------------------------------------ */

static void header_value(const char *head, const char *name, char *out, size_t cap) {
  out[0] = '\0';
  size_t n = strlen(name);
  for (const char *line = strstr(head, "\r\n"); line; line = strstr(line, "\r\n")) {
    line += 2;
    if (!strncasecmp(line, name, n) && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ')
        v++;
      const char *e = strstr(v, "\r\n");
      size_t len = e ? (size_t)(e - v) : strlen(v);
      if (len >= cap)
        len = cap - 1;
      memcpy(out, v, len);
      out[len] = '\0';
      return;
    }
  }
}

/* claimed_len SIZE_MAX: no Content-Length (the body ends when the
 * connection closes). */
static int send_reply(struct standin *s, int fd, int status, const char *extra_headers,
                      const char *body, size_t len, size_t claimed_len) {
  char head[512], cl[64] = "";
  if (claimed_len != SIZE_MAX)
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", claimed_len);
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d Standin\r\nContent-Type: application/json\r\n%sConnection: "
                   "close\r\n%s\r\n",
                   status, cl, extra_headers ? extra_headers : "");
  if (send_all(s, fd, head, (size_t)n) < 0)
    return -1;
  return len ? send_all(s, fd, body, len) : 0;
}

static char *error_body(int anthropic, const char *type, const char *msg) {
  json_t *o = anthropic ? json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "type", type,
                                    "message", msg)
                        : json_pack("{s:{s:s, s:s}}", "error", "message", msg, "type", type);
  char *b = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return b;
}

static char *ok_body(struct standin *s, int anthropic, json_t *req, int usage, int n) {
  const char *model = json_string_value(json_object_get(req, "model"));
  json_t *msgs = json_object_get(req, "messages");
  json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
  const char *content = json_string_value(json_object_get(last, "content"));
  char *text = NULL;
  const char *scripted = pick_reply(s, content);
  if (scripted)
    text = strdup(scripted);
  else if (asprintf(&text, "echo %d: %s", n, content ? content : "") < 0)
    return NULL;
  if (!text)
    return NULL;
  json_int_t in = s->o.input_tokens ? s->o.input_tokens : 11;
  json_int_t out = s->o.output_tokens ? s->o.output_tokens : 7;
  json_t *o;
  if (anthropic) {
    o = json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:s}], s:s}", "id", "msg_standin", "type",
                  "message", "role", "assistant", "model", model ? model : "?", "content", "type",
                  "text", "text", text, "stop_reason", "end_turn");
    if (usage)
      json_object_set_new(o, "usage",
                          json_pack("{s:I, s:I}", "input_tokens", in, "output_tokens", out));
  } else {
    o = json_pack("{s:s, s:s, s:s, s:[{s:i, s:{s:s, s:s}, s:s}]}", "id", "chatcmpl-standin",
                  "object", "chat.completion", "model", model ? model : "?", "choices", "index", 0,
                  "message", "role", "assistant", "content", text, "finish_reason", "stop");
    if (usage)
      json_object_set_new(o, "usage",
                          json_pack("{s:I, s:I, s:I}", "prompt_tokens", in, "completion_tokens",
                                    out, "total_tokens", in + out));
  }
  free(text);
  char *b = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return b;
}

/* Reads one request: headers, then Content-Length bytes of body. */
static int read_request(struct standin *s, int fd, char **head_out, char **body_out) {
  struct kv_buf b;
  kv_buf_init(&b, REQ_MAX_BYTES);
  char chunk[16384];
  size_t head_len = 0, want = 0;
  int have_head = 0;
  for (;;) {
    if (have_head && b.len >= head_len + want)
      break;
    if (!wait_fd(s, fd, POLLIN, IO_DEADLINE_MS))
      goto fail;
    ssize_t r = recv(fd, chunk, sizeof chunk, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      goto fail;
    if (kv_buf_append(&b, chunk, (size_t)r) < 0 || b.truncated)
      goto fail;
    if (!have_head) {
      char *e = strstr(b.data, "\r\n\r\n");
      if (e) {
        have_head = 1;
        head_len = (size_t)(e - b.data) + 4;
        char cl[32];
        b.data[head_len - 2] = '\0'; /* so header_value stops here */
        header_value(b.data, "Content-Length", cl, sizeof cl);
        b.data[head_len - 2] = '\r';
        want = (size_t)strtoull(cl, NULL, 10);
      }
    }
  }
  *head_out = strndup(b.data, head_len);
  *body_out = strndup(b.data + head_len, want);
  kv_buf_release(&b);
  return *head_out && *body_out ? 0 : -1;
fail:
  kv_buf_release(&b);
  return -1;
}

static void serve(struct standin *s, int fd) {
  char *head = NULL, *body = NULL;
  if (read_request(s, fd, &head, &body) < 0) {
    free(head);
    free(body);
    return;
  }
  struct standin_request rq;
  memset(&rq, 0, sizeof rq);
  rq.t = kv_now_s();
  sscanf(head, "%*s %127s", rq.path);
  header_value(head, "Authorization", rq.auth, sizeof rq.auth);
  header_value(head, "x-api-key", rq.api_key, sizeof rq.api_key);
  header_value(head, "anthropic-version", rq.version, sizeof rq.version);
  rq.body = body;
  free(head);

  pthread_mutex_lock(&s->mu);
  int n = s->n_reqs++;
  s->reqs[n] = rq;
  struct step st = n < s->n_steps ? s->steps[n] : (struct step){.a = A_OK};
  pthread_mutex_unlock(&s->mu);

  int anthropic = !strcmp(rq.path, "/v1/messages");
  int openai = !strcmp(rq.path, "/v1/chat/completions");
  int status = 200;
  char *out = NULL;
  char extra[96] = "";
  size_t claimed = 0;

  if (!anthropic && !openai) {
    status = 404;
    out = error_body(0, "not_found", "standin: no such path");
  } else if (st.a == A_CLOSE) {
    status = 0;
  } else if (st.a == A_STATUS) {
    status = st.status;
    char msg[64];
    snprintf(msg, sizeof msg, "standin: injected %d", status);
    out = error_body(anthropic, status == 429 ? "rate_limit_error" : "api_error", msg);
    if (st.retry_after[0])
      snprintf(extra, sizeof extra, "Retry-After: %s\r\n", st.retry_after);
  } else {
    /* The key check, as the real APIs do it. */
    int key_ok = 1;
    char shown[600];
    if (anthropic) {
      key_ok = (!s->has_key || !strcmp(rq.api_key, s->key)) && rq.version[0];
      snprintf(shown, sizeof shown, "invalid x-api-key %s", rq.api_key);
    } else {
      char want[600];
      snprintf(want, sizeof want, "Bearer %s", s->key);
      key_ok = !s->has_key || !strcmp(rq.auth, want);
      /* Echoes what it got, as OpenAI does (partly): kevo must scrub it. */
      snprintf(shown, sizeof shown, "Incorrect API key provided: %s", rq.auth);
    }
    if (!key_ok) {
      status = 401;
      out = error_body(anthropic, "authentication_error", shown);
    } else if (st.a == A_MALFORMED) {
      out = strdup("{\"choices\": [{\"message\": {\"content\": \"half a reply");
    } else if (st.a == A_EMPTY) {
      out = strdup("");
    } else if (st.a == A_HUGE || st.a == A_STREAM) {
      out = malloc(st.bytes + 1);
      if (out) {
        memset(out, 'x', st.bytes);
        out[0] = '{';
        out[st.bytes] = '\0';
      }
    } else {
      if (st.a == A_SLOW)
        nap(s, st.delay_s, st.until);
      json_t *req = json_loads(body, 0, NULL);
      out = ok_body(s, anthropic, req, st.a != A_NOUSAGE, n);
      json_decref(req);
    }
  }
  if (status && out) {
    size_t len = strlen(out);
    claimed = len;
    if (st.a == A_TRUNCATED && status == 200)
      len /= 2;
    if (st.a == A_HUGE || st.a == A_STREAM)
      len = claimed = st.bytes;
    if (st.a == A_STREAM)
      claimed = SIZE_MAX;
    /* Stamped before the first byte goes out, so that a client that waits
     * for this reply cannot have its next request stamped earlier. */
    double t_reply = kv_now_s();
    pthread_mutex_lock(&s->mu);
    s->reqs[n].t_reply = t_reply;
    pthread_mutex_unlock(&s->mu);
    send_reply(s, fd, status, extra, out, len, claimed);
  }
  free(out);
  pthread_mutex_lock(&s->mu);
  s->reqs[n].status = status;
  pthread_mutex_unlock(&s->mu);
}

static void *conn_main(void *arg) {
  struct conn *c = arg;
  struct standin *s = c->s;
  serve(s, c->fd);
  shutdown(c->fd, SHUT_WR);
  close(c->fd);
  pthread_mutex_lock(&s->mu);
  s->active--;
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static void *accept_main(void *arg) {
  struct standin *s = arg;
  for (;;) {
    double left = s->t_end - kv_now_s();
    if (left <= 0 || s->n_conns >= s->o.max_requests)
      break;
    if (!wait_fd(s, s->listen_fd, POLLIN, (int)(left * 1000) + 1))
      break;
    int fd = accept(s->listen_fd, NULL, NULL);
    if (fd < 0)
      continue;
    struct conn *c = &s->conns[s->n_conns];
    c->s = s;
    c->fd = fd;
    pthread_mutex_lock(&s->mu);
    s->active++;
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&c->th, NULL, conn_main, c) != 0) {
      close(fd);
      pthread_mutex_lock(&s->mu);
      s->active--;
      pthread_mutex_unlock(&s->mu);
      continue;
    }
    c->started = 1;
    s->n_conns++;
  }
  close(s->listen_fd);
  s->listen_fd = -1;
  pthread_mutex_lock(&s->mu);
  s->finished = 1;
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- public ------------------------------------------------------------- */

struct standin *standin_start(const struct standin_opts *o, char *err, size_t errlen) {
  struct standin *s = calloc(1, sizeof *s);
  if (!s) {
    kv_error(err, errlen, "standin: out of memory");
    return NULL;
  }
  s->o = *o;
  if (s->o.max_requests <= 0)
    s->o.max_requests = 64;
  if (s->o.lifetime_s <= 0)
    s->o.lifetime_s = 30;
  if (o->key) {
    s->has_key = 1;
    snprintf(s->key, sizeof s->key, "%s", o->key);
  }
  s->listen_fd = -1;
  s->stop_pipe[0] = s->stop_pipe[1] = -1;
  pthread_mutex_init(&s->mu, NULL);
  if (parse_script(s, o->script, err, errlen) < 0)
    goto fail;
  parse_replies(s);
  s->conns = calloc((size_t)s->o.max_requests, sizeof *s->conns);
  s->reqs = calloc((size_t)s->o.max_requests, sizeof *s->reqs);
  if (!s->conns || !s->reqs || pipe(s->stop_pipe) != 0) {
    kv_error(err, errlen, "standin: out of memory or descriptors");
    goto fail;
  }
  s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(s->listen_fd, 64) != 0 || getsockname(s->listen_fd, (struct sockaddr *)&a, &al) != 0) {
    kv_error(err, errlen, "standin: cannot listen on 127.0.0.1: %s", strerror(errno));
    goto fail;
  }
  s->port = ntohs(a.sin_port);
  s->t_end = kv_now_s() + s->o.lifetime_s;
  if (pthread_create(&s->accept_th, NULL, accept_main, s) != 0) {
    kv_error(err, errlen, "standin: cannot start a thread");
    goto fail;
  }
  return s;
fail:
  if (s->listen_fd >= 0)
    close(s->listen_fd);
  if (s->stop_pipe[0] >= 0) {
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
  }
  free(s->conns);
  free(s->reqs);
  free(s->rtext);
  pthread_mutex_destroy(&s->mu);
  free(s);
  return NULL;
}

int standin_port(const struct standin *s) {
  return s->port;
}

int standin_count(struct standin *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->n_reqs;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int standin_get(struct standin *s, int i, struct standin_request *out) {
  pthread_mutex_lock(&s->mu);
  int ok = i >= 0 && i < s->n_reqs;
  if (ok)
    *out = s->reqs[i];
  pthread_mutex_unlock(&s->mu);
  return ok ? 0 : -1;
}

int standin_max_concurrent(struct standin *s) {
  /* The most requests between "read" and "reply started" at one instant. */
  pthread_mutex_lock(&s->mu);
  int best = 0;
  for (int i = 0; i < s->n_reqs; i++) {
    int n = 0;
    for (int j = 0; j < s->n_reqs; j++) {
      double end = s->reqs[j].t_reply > 0 ? s->reqs[j].t_reply : 1e300;
      if (s->reqs[j].t <= s->reqs[i].t && s->reqs[i].t < end)
        n++;
    }
    if (n > best)
      best = n;
  }
  pthread_mutex_unlock(&s->mu);
  return best;
}

int standin_finished(struct standin *s) {
  pthread_mutex_lock(&s->mu);
  int f = s->finished && s->active == 0;
  pthread_mutex_unlock(&s->mu);
  return f;
}

void standin_stop(struct standin *s) {
  if (!s)
    return;
  if (write(s->stop_pipe[1], "x", 1) < 0) {
    /* the accept thread still ends at its lifetime */
  }
  pthread_join(s->accept_th, NULL);
  for (int i = 0; i < s->n_conns; i++)
    if (s->conns[i].started)
      pthread_join(s->conns[i].th, NULL);
  for (int i = 0; i < s->n_reqs; i++)
    free(s->reqs[i].body);
  close(s->stop_pipe[0]);
  close(s->stop_pipe[1]);
  free(s->conns);
  free(s->reqs);
  free(s->rtext);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
