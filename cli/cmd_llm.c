/* kevo llm: talk to a model (ask) and list what was said (calls).
 * Exit status: 0 the reply is on stdout; 1 the call failed (network, API,
 * budget, nothing recorded to replay); 2 bad usage or configuration. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/llm.h"
#include "kevo/store.h"
#include "kevo/util.h"

enum { STDIN_PROMPT_MAX = 8 << 20 };

static void on_spend(void *arg, const struct kv_llm_spend *s, const struct kv_llm_result *r) {
  const struct kv_llm_budget *b = arg;
  (void)r;
  fprintf(stderr, "kevo: spent $%.6f", s->usd);
  if (b->max_usd > 0)
    fprintf(stderr, " of $%.2f", b->max_usd);
  fprintf(stderr, " (%" PRId64 " call%s, %" PRId64 " tokens in, %" PRId64 " out)\n", s->calls,
          s->calls == 1 ? "" : "s", s->input_tokens, s->output_tokens);
}

/* Reads the prompt from stdin (for PROMPT "-"). */
static char *read_stdin(void) {
  struct kv_buf b;
  kv_buf_init(&b, STDIN_PROMPT_MAX);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
    if (kv_buf_append(&b, chunk, n) < 0 || b.truncated) {
      kv_buf_release(&b);
      return NULL;
    }
  return kv_buf_detach(&b);
}

static int parse_int(const char *flag, const char *text, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = text ? strtol(text, &end, 10) : 0;
  if (!text || end == text || *end || errno || v < lo || v > hi)
    return cli_fail("%s: '%s' is not an integer from %ld to %ld", flag, text ? text : "", lo, hi);
  *out = v;
  return 0;
}

static int ask(int argc, char **argv) {
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  const char *db = NULL, *config = NULL, *prompt = NULL, *system = NULL;
  long sample = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = 1;
    if (!strcmp(a, "--provider") && v)
      f.provider = v;
    else if (!strcmp(a, "--base-url") && v)
      f.base_url = v;
    else if (!strcmp(a, "--model") && v)
      f.model = v;
    else if (!strcmp(a, "--api-key-env") && v)
      f.api_key_env = v;
    else if (!strcmp(a, "--db") && v)
      db = v;
    else if (!strcmp(a, "--config") && v)
      config = v;
    else if (!strcmp(a, "--system") && v)
      system = v;
    else if (!strcmp(a, "--timeout") && v) {
      if (cli_number("--timeout", v, &f.timeout_s) != 0)
        return 2;
    } else if (!strcmp(a, "--max-usd") && v) {
      if (cli_number("--max-usd", v, &f.max_usd) != 0)
        return 2;
    } else if (!strcmp(a, "--max-tokens") && v) {
      long n = 0;
      if (parse_int("--max-tokens", v, 1, 10000000, &n) != 0)
        return 2;
      f.max_tokens = (int)n;
    } else if (!strcmp(a, "--temperature") && v) {
      char *end;
      f.temperature = strtod(v, &end);
      if (end == v || *end || !(f.temperature >= 0 && f.temperature <= 2))
        return cli_fail("--temperature: '%s' is not a number from 0 to 2", v);
    } else if (!strcmp(a, "--sample") && v) {
      if (parse_int("--sample", v, 0, INT_MAX, &sample) != 0)
        return 2;
    } else if (a[0] == '-' && a[1]) {
      cli_fail("llm ask: unknown or incomplete option '%s'", a);
      return cli_usage("llm");
    } else if (!prompt) {
      prompt = a;
      takes = 0;
    } else {
      cli_fail("llm ask: unexpected argument '%s' (quote the prompt as one argument)", a);
      return cli_usage("llm");
    }
    i += takes;
  }
  if (!prompt) {
    cli_fail("llm ask: needs a PROMPT (or - to read it from stdin)");
    return cli_usage("llm");
  }

  char err[2048];
  struct kv_llm_config *cfg = NULL;
  if (kv_llm_config_load(NULL, NULL, config, &cfg, err, sizeof err) != 0)
    return cli_fail("%s", err);
  struct kv_llm_model m;
  struct kv_llm_budget budget;
  int rc = kv_llm_config_resolve(cfg, &f, &m, &budget, err, sizeof err);
  kv_llm_config_free(cfg);
  if (rc != 0)
    return cli_fail("%s", err);
  /* A dollar cap needs the model's prices to count anything. */
  if (budget.max_usd > 0 && !(m.input_usd_per_mtok > 0) && !(m.output_usd_per_mtok > 0)) {
    if (f.max_usd > 0)
      return cli_fail("--max-usd %g: model %s has no price, so kevo cannot count what it spends; "
                      "set \"input_usd_per_mtok\" and \"output_usd_per_mtok\" in its entry in "
                      "kevo.json, or cap calls or tokens instead",
                      budget.max_usd, m.name[0] ? m.name : m.model);
    fprintf(stderr,
            "kevo: warning: the budget of $%g caps nothing: model %s has no price (set "
            "\"input_usd_per_mtok\" and \"output_usd_per_mtok\" in its entry)\n",
            budget.max_usd, m.name[0] ? m.name : m.model);
  }

  char *text = NULL;
  if (!strcmp(prompt, "-")) {
    if (!(text = read_stdin()))
      return cli_fail("llm ask: the prompt on stdin is larger than %d MiB or unreadable",
                      STDIN_PROMPT_MAX >> 20);
    prompt = text;
  }
  struct kv_store *store = NULL;
  if (cli_open_store(db, &store) != 0) {
    free(text);
    return 2;
  }
  struct kv_llm *c = NULL;
  struct kv_llm_opts o = {
      .model = &m, .store = store, .budget = budget, .on_spend = on_spend, .on_spend_arg = &budget};
  if (kv_llm_new(&o, &c, err, sizeof err) != 0) {
    kv_store_close(store);
    free(text);
    return cli_fail("%s", err);
  }

  struct kv_llm_message msg = {"user", prompt};
  struct kv_llm_request req;
  kv_llm_request_init(&req);
  req.system = system;
  req.messages = &msg;
  req.n_messages = 1;
  req.sample = (int)sample;
  struct kv_llm_result res;
  rc = kv_llm_ask(c, &req, &res);
  int status = 0;
  if (rc == KV_LLM_OK) {
    size_t n = strlen(res.text);
    fputs(res.text, stdout);
    if (n == 0 || res.text[n - 1] != '\n')
      fputc('\n', stdout);
    fflush(stdout);
    char in[32] = "?", out[32] = "?";
    if (res.input_tokens >= 0)
      snprintf(in, sizeof in, "%" PRId64, res.input_tokens);
    if (res.output_tokens >= 0)
      snprintf(out, sizeof out, "%" PRId64, res.output_tokens);
    fprintf(stderr,
            "kevo: %s %s%s: %s tokens in, %s out, $%.6f (%d attempt%s, %.2f s, call %" PRId64 ")\n",
            m.provider, m.model, res.replayed ? " (replayed)" : "", in, out, res.cost_usd,
            res.attempts, res.attempts == 1 ? "" : "s", res.latency_s, res.call_id);
  } else {
    fprintf(stderr, "kevo: %s\n", res.error);
    status = rc == KV_LLM_EUSAGE || rc == KV_LLM_ENOKEY ? 2 : 1; /* configuration: README */
  }
  if (res.record_error[0])
    fprintf(stderr, "kevo: warning: the call was not recorded: %s\n", res.record_error);
  kv_llm_result_release(&res);
  kv_llm_free(c);
  kv_store_close(store);
  free(text);
  return status;
}

struct list_state {
  int n;
  int64_t run;  /* --run: only this run's calls (0: all) */
  int64_t skip; /* --limit with --run: the run's first calls not shown */
  int64_t seen; /* the run's calls met so far */
  json_t *json; /* --json: the rows, as an array */
};

static int count_call(void *arg, const struct kv_llm_call_row *r) {
  struct list_state *st = arg;
  if (!st->run || r->run_id == st->run)
    st->seen++;
  return 0;
}

static json_t *call_json(const struct kv_llm_call_row *r) {
  json_t *o = json_pack("{s:I,s:I,s:I,s:I,s:s?,s:s?,s:s?,s:s?,s:s?,s:i,s:i,s:f,s:s?}", "id",
                        (json_int_t)r->id, "created_unix", (json_int_t)r->created_unix, "run_id",
                        (json_int_t)r->run_id, "node_id", (json_int_t)r->node_id, "role", r->role,
                        "provider", r->provider, "model", r->model, "status", r->status,
                        "cache_key", r->cache_key, "http_status", r->http_status, "attempts",
                        r->attempts, "latency_s", r->latency_s, "error", r->error);
  if (o) {
    json_object_set_new(o, "input_tokens",
                        r->input_tokens >= 0 ? json_integer(r->input_tokens) : json_null());
    json_object_set_new(o, "output_tokens",
                        r->output_tokens >= 0 ? json_integer(r->output_tokens) : json_null());
    json_object_set_new(o, "cost_usd", r->cost_usd >= 0 ? json_real(r->cost_usd) : json_null());
  }
  return o;
}

static int print_call(void *arg, const struct kv_llm_call_row *r) {
  struct list_state *st = arg;
  if (st->run && r->run_id != st->run)
    return 0;
  if (st->skip > 0) {
    st->skip--;
    return 0;
  }
  if (st->json) {
    json_array_append_new(st->json, call_json(r));
    st->n++;
    return 0;
  }
  char when[32] = "?", in[24] = "-", out[24] = "-", cost[24] = "-", http[8] = "-", where[64] = "";
  time_t t = (time_t)r->created_unix;
  struct tm tm;
  if (gmtime_r(&t, &tm))
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (r->input_tokens >= 0)
    snprintf(in, sizeof in, "%" PRId64, r->input_tokens);
  if (r->output_tokens >= 0)
    snprintf(out, sizeof out, "%" PRId64, r->output_tokens);
  if (r->cost_usd >= 0)
    snprintf(cost, sizeof cost, "$%.6f", r->cost_usd);
  if (r->http_status > 0)
    snprintf(http, sizeof http, "%d", r->http_status);
  if (r->run_id > 0)
    snprintf(where, sizeof where, " run=%" PRId64 " node=%" PRId64, r->run_id, r->node_id);
  printf("%-5" PRId64 " %s %-8s %-9s %-24s %-12s %3s %2d %7.2fs %7s in %7s out %10s %.12s%s", r->id,
         when, r->role ? r->role : "-", r->provider ? r->provider : "-", r->model ? r->model : "-",
         r->status ? r->status : "-", http, r->attempts, r->latency_s >= 0 ? r->latency_s : 0, in,
         out, cost, r->cache_key ? r->cache_key : "-", where);
  if (r->error) {
    /* One line: the error's first 160 characters, control characters as spaces. */
    char e[161];
    size_t j = 0;
    for (size_t i = 0; r->error[i] && j < sizeof e - 1; i++)
      e[j++] = (unsigned char)r->error[i] < 0x20 ? ' ' : r->error[i];
    e[j] = '\0';
    printf("  %s", e);
  }
  putchar('\n');
  st->n++;
  return 0;
}

static int remember_id(void *arg, const struct kv_llm_call_row *r) {
  *(int64_t *)arg = r->id;
  return 0;
}

static int calls(int argc, char **argv) {
  const char *db = NULL;
  long limit = 0, run = 0;
  int as_json = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      if (parse_int("--limit", argv[++i], 1, INT_MAX, &limit) != 0)
        return 2;
    } else if (!strcmp(argv[i], "--run") && i + 1 < argc) {
      if (parse_int("--run", argv[++i], 1, INT_MAX, &run) != 0)
        return 2;
    } else if (!strcmp(argv[i], "--json"))
      as_json = 1;
    else {
      cli_fail("llm calls: unknown or incomplete option '%s'", argv[i]);
      return cli_usage("llm");
    }
  }
  struct kv_store *store = NULL;
  if (cli_open_store_readonly(db, &store) != 0)
    return 2;
  /* --limit N: the last N calls (of the run, with --run). */
  char err[2048];
  int64_t after = 0, total = kv_store_count_llm_calls(store);
  int rc = 0;
  struct list_state st = {0};
  st.run = run;
  if (limit > 0 && run) { /* the run's calls are counted first */
    rc = kv_store_list_llm_calls(store, 0, 0, count_call, &st, err, sizeof err);
    st.skip = st.seen > limit ? st.seen - limit : 0;
  } else if (limit > 0 && total > limit)
    rc = kv_store_list_llm_calls(store, 0, (int)(total - limit), remember_id, &after, err,
                                 sizeof err);
  if (as_json && !(st.json = json_array()))
    rc = kv_error(err, sizeof err, "out of memory");
  if (rc >= 0)
    rc = kv_store_list_llm_calls(store, after, run ? 0 : (int)limit, print_call, &st, err,
                                 sizeof err);
  kv_store_close(store);
  if (rc < 0) {
    json_decref(st.json);
    return cli_fail("%s", err);
  }
  if (st.json) {
    char *s = json_dumps(st.json, JSON_INDENT(1));
    printf("%s\n", s ? s : "[]");
    free(s);
    json_decref(st.json);
  } else if (st.n == 0)
    fprintf(stderr,
            run ? "kevo: no LLM calls recorded for run %ld\n"
                : "kevo: no LLM calls recorded in this store yet\n",
            run);
  return 0;
}

int cmd_llm(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "ask"))
    return ask(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "calls"))
    return calls(argc, argv);
  cli_fail("llm: the subcommands are 'ask' and 'calls'");
  return cli_usage("llm");
}
