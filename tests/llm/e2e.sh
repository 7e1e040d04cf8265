#!/bin/sh
# End-to-end: the real `kevo llm ask` / `kevo llm calls` against the loopback
# stand-in server (llm_standin), for both APIs and every injected fault.
# usage: e2e.sh KEVO_BINARY LLM_STANDIN_BINARY
set -u
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
K=$(abs "$1")
S=$(abs "$2")
[ -x "$K" ] && [ -x "$S" ] || { echo "e2e.sh: $K or $S is not an executable"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-llm-e2e-XXXXXX")
SPID=""
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
# Nothing from the user's environment: config, store, keys.
export HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" KEVO_DB="$T/kevo.db"
unset OPENAI_API_KEY ANTHROPIC_API_KEY E2E_KEY
mkdir -p "$HOME" "$T/work"
cd "$T/work" || exit 1
KEY="sk-e2e-0123456789-TOPSECRET-zyxw"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# start SCRIPT: a fresh stand-in server; sets PORT and SPID.
start() {
  rm -f "$T/port" "$T/log"
  "$S" --port-file "$T/port" --key "$KEY" --script "$1" --log "$T/log" --lifetime 30 \
    --max-requests 16 &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  [ -s "$T/port" ] || { echo "FAIL the stand-in server did not start"; exit 1; }
  PORT=$(cat "$T/port")
}
# stop: ends the server; its log (one line per request) is in $T/log.
stop() {
  kill "$SPID" 2>/dev/null
  wait "$SPID" 2>/dev/null
  SPID=""
}
requests() { if [ -f "$T/log" ]; then wc -l <"$T/log" | tr -d ' '; else echo 0; fi; }

# expect NAME CODE STDOUT-PATTERN STDERR-PATTERN -- command...
expect() {
  name=$1 code=$2 opat=$3 epat=$4
  shift 5
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  if [ "$got" != "$code" ]; then
    bad "$name: exit $got, expected $code"
    sed 's/^/    /' "$T/out" "$T/err" | tail -10
  elif [ -n "$opat" ] && ! grep -qE -- "$opat" "$T/out"; then
    bad "$name: stdout lacks /$opat/"
    sed 's/^/    /' "$T/out" | tail -10
  elif [ -n "$epat" ] && ! grep -qE -- "$epat" "$T/err"; then
    bad "$name: stderr lacks /$epat/"
    sed 's/^/    /' "$T/err" | tail -10
  else
    ok "$name"
  fi
}
check() { if eval "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }

# The models, in the project's kevo.json: prices, the key's variable, quick
# backoff so that retried faults stay fast.
cat >kevo.json <<'JSON'
{"models": {
  "oa": {"provider": "openai", "model": "gpt-e2e", "api_key_env": "E2E_KEY", "backoff": 0.05,
         "input_usd_per_mtok": 2, "output_usd_per_mtok": 8},
  "an": {"provider": "anthropic", "model": "claude-e2e", "api_key_env": "E2E_KEY",
         "backoff": 0.05, "input_usd_per_mtok": 2, "output_usd_per_mtok": 8}},
 "default": "oa"}
JSON
export E2E_KEY="$KEY"

for p in oa an; do
  if [ $p = oa ]; then base=/v1; else base=; fi
  # 11 in * $2/M + 7 out * $8/M = $0.000078
  start ok
  expect "$p: reply on stdout, usage and cost on stderr" 0 '^echo 0: hello there$' \
    '11 tokens in, 7 out, \$0\.000078 \(1 attempt' -- "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" "hello there"
  stop
  check "$p: the key reached the server" 'grep -q " 200 key-ok" "$T/log"'

  start "429:ra=1,ok"
  t0=$(date +%s.%N)
  expect "$p: 429 with Retry-After, then the reply" 0 '^echo 1: x$' '2 attempts' -- \
    "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  t1=$(date +%s.%N)
  stop
  check "$p: waited for Retry-After (>= 1 s)" "python3 -c 'import sys; sys.exit(0 if $t1 - $t0 >= 1.0 else 1)'"

  start "500,ok"
  expect "$p: 500 then success" 0 '^echo 1: x$' '2 attempts' -- \
    "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop

  start ok
  expect "$p: rejected key names the variable" 1 '' 'HTTP 401.*set E2E_KEY to a valid key' -- \
    env E2E_KEY=sk-not-the-key "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop
  check "$p: 401 not retried" '[ "$(requests)" = 1 ]'

  start ok
  expect "$p: missing key names the variable (exit 2: configuration)" 2 '' 'E2E_KEY is not set; export E2E_KEY=' -- \
    env -u E2E_KEY "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop
  check "$p: nothing sent without a key" '[ "$(requests)" = 0 ]'

  start malformed
  expect "$p: malformed JSON" 1 '' 'not JSON.*not retried' -- \
    "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop

  start "truncated,truncated,truncated,truncated"
  expect "$p: truncated body, retried, then given up" 1 '' 'cut short.*gave up after 4 attempts' -- \
    "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop

  start "slow=20"
  t0=$(date +%s)
  expect "$p: slower than the deadline" 1 '' 'within the call.s deadline of 1 s' -- \
    "$K" llm ask --model $p --timeout 1 --base-url "http://127.0.0.1:$PORT$base" x
  t1=$(date +%s)
  stop
  check "$p: the deadline held" '[ $((t1 - t0)) -le 3 ]'

  start "huge=6000000"
  expect "$p: oversized reply" 1 '' 'exceeds the cap of 4194304 bytes' -- \
    "$K" llm ask --model $p --base-url "http://127.0.0.1:$PORT$base" x
  stop

  start ok
  expect "$p: a budget too small is not spent" 1 '' 'budget: .*not sent' -- \
    "$K" llm ask --model $p --max-usd 0.00001 --base-url "http://127.0.0.1:$PORT$base" x
  stop
  check "$p: nothing sent over budget" '[ "$(requests)" = 0 ]'
done

# Flags alone, no config entry: --provider, --model ID, --api-key-env.
start ok
expect "anthropic by flags alone" 0 '^echo 0: flags$' '' -- env ANTHROPIC_API_KEY="$KEY" \
  "$K" llm ask --provider anthropic --model claude-flag --base-url "http://127.0.0.1:$PORT" --max-tokens 50 flags
stop
start ok
expect "prompt from stdin" 0 '^echo 0: from stdin$' '' -- sh -c \
  "echo 'from stdin' | '$K' llm ask --model oa --base-url http://127.0.0.1:$PORT/v1 -"
stop

# Replay with the network off: the server is gone, the base URL is dead.
expect "replay a recorded call, network off" 0 '^echo 0: hello there$' '\(replayed\)' -- \
  "$K" llm ask --provider replay --model oa --base-url http://127.0.0.1:9/v1 "hello there"
expect "replay the other provider's recording" 0 '^echo 0: hello there$' '' -- \
  "$K" llm ask --provider replay --model an "hello there"
expect "replay of an unrecorded prompt" 1 '' 'never recorded' -- \
  "$K" llm ask --provider replay --model oa "never said"

# The store: every call recorded, the key nowhere.
expect "llm calls lists the calls" 0 'openai +gpt-e2e +ok' '' -- "$K" llm calls
check "llm calls: one line per call" '[ "$(wc -l <"$T/out")" -ge 20 ]'
check "llm calls shows faults" 'grep -q " truncated " "$T/out" && grep -q " oversized " "$T/out" && grep -q " malformed " "$T/out" && grep -q " timeout " "$T/out" && grep -q " auth " "$T/out"'
expect "llm calls --limit" 0 'not_recorded' '' -- "$K" llm calls --limit 1
check "llm calls --limit 1 prints one line" '[ "$(wc -l <"$T/out")" = 1 ]'
check "the store holds the prompts" 'cat "$KEVO_DB"* | grep -aq "hello there"'
check "the key is nowhere in the store" '[ -s "$KEVO_DB" ] && ! cat "$KEVO_DB"* | grep -aq "TOPSECRET"'

# Usage and configuration errors: exit 2, naming the problem.
expect "no prompt" 2 '' 'needs a PROMPT' -- "$K" llm ask --model oa
expect "unknown flag" 2 '' "unknown or incomplete option '--frob'" -- "$K" llm ask --frob x
expect "no subcommand" 2 '' "subcommands are 'ask' and 'calls'" -- "$K" llm
expect "bad --timeout" 2 '' "--timeout: 'soon' is not a positive number" -- "$K" llm ask --timeout soon x
expect "unknown provider" 2 '' '--provider gemini: not a provider' -- "$K" llm ask --provider gemini x
printf '{"models": {"x": {"model": "m", "api_key": "sk-123"}}}' >"$T/bad.json"
expect "a key in a config file is refused" 2 '' 'bad.json: models.x.api_key: kevo never reads keys from files' -- \
  "$K" llm ask --config "$T/bad.json" x
expect "a missing --config" 2 '' 'nope.json' -- "$K" llm ask --config "$T/nope.json" x
mkdir -p "$XDG_CONFIG_HOME/kevo"
printf '{"models": {"u": {"timeout": "long"}}}' >"$XDG_CONFIG_HOME/kevo/config.json"
expect "the user config is read (and checked)" 2 '' 'config.json: models.u.timeout: must be a number' -- \
  "$K" llm ask x

echo "llm e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
