#!/bin/sh
# The worker's binary hardening, read from the ELF file: a position-
# independent executable with full RELRO and immediate binding (BIND_NOW, or
# FLAGS BIND_NOW, and FLAGS_1 NOW; a GNU_RELRO segment that covers the GOT),
# so that once it starts no function pointer of its GOT is writable; no text
# relocations; a non-executable stack.
# Usage: worker_hardening.sh path/to/kevo-worker
set -u
w=${1:?usage: worker_hardening.sh WORKER}
if ! command -v readelf >/dev/null 2>&1; then
  echo "readelf not found: install binutils" >&2
  exit 1
fi
[ -f "$w" ] || { echo "$w: no such file" >&2; exit 1; }
dyn=$(readelf -dW "$w") || exit 1
seg=$(readelf -lW "$w") || exit 1
hdr=$(readelf -hW "$w") || exit 1
fail=0
bad() {
  echo "FAIL: $w: $*" >&2
  fail=1
}

echo "$hdr" | grep -Eq 'Type:[[:space:]]+DYN' || bad "not a position-independent executable (ELF type is not DYN)"
echo "$dyn" | grep -Eq '\(FLAGS_1\).*[[:space:]]PIE([[:space:]]|$)' || bad "FLAGS_1 lacks PIE"
if ! echo "$dyn" | grep -Eq '\(BIND_NOW\)' &&
  ! echo "$dyn" | grep -Eq '\(FLAGS\).*[[:space:]]BIND_NOW([[:space:]]|$)'; then
  bad "no BIND_NOW: symbols are bound lazily (link with -Wl,-z,now)"
fi
echo "$dyn" | grep -Eq '\(FLAGS_1\).*[[:space:]]NOW([[:space:]]|$)' || bad "FLAGS_1 lacks NOW (link with -Wl,-z,now)"
echo "$dyn" | grep -Eq '\(TEXTREL\)|[[:space:]]TEXTREL([[:space:]]|$)' && bad "text relocations: code is written at load"
echo "$seg" | grep -Eq '^[[:space:]]*GNU_RELRO[[:space:]]' || bad "no GNU_RELRO segment (link with -Wl,-z,relro)"
stack=$(echo "$seg" | awk '$1 == "GNU_STACK" { print $(NF-1) }')
case "$stack" in
  RW) ;;
  *) bad "stack flags are '$stack', not RW" ;;
esac

# The GOT lies inside GNU_RELRO: the segment's index in the program headers,
# then its line in the section-to-segment mapping.
idx=$(echo "$seg" | awk '/^Program Headers:/ { on = 1; n = -1; next }
  on && /^[[:space:]]*[A-Z_]+[[:space:]]+0x/ { n++; if ($1 == "GNU_RELRO") { print n; exit } }')
if [ -n "$idx" ]; then
  line=$(echo "$seg" | awk -v i="$idx" '/Section to Segment mapping/ { on = 1; next }
    on && $1 == sprintf("%02d", i) { $1 = ""; print; exit }')
  echo " $line " | grep -q ' \.got ' || bad "GNU_RELRO ($line) does not cover .got"
  # With immediate binding the PLT's GOT is folded in or read-only too.
  if readelf -SW "$w" | grep -q ' \.got\.plt '; then
    echo " $line " | grep -q ' \.got\.plt ' || bad ".got.plt is outside GNU_RELRO (writable)"
  fi
fi

if [ "$fail" = 0 ]; then
  echo "ok: $w: PIE, BIND_NOW, FLAGS_1 NOW, GNU_RELRO over .got, no TEXTREL, stack RW"
fi
exit $fail
