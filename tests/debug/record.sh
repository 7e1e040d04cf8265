#!/bin/bash
# On a GPU host: records the tools' own output as parser fixtures
# (tests/sanitize/, tests/ncu/) and finds, layer by layer, which sandbox
# layers kevo's worker must leave off under each tool (docs/cuda.md, "Both
# tools run the candidate"). Usage: tests/debug/record.sh BUILD_DIR OUT_DIR
set -u
B=${1:-build}; O=${2:-/tmp/devtools-record}
mkdir -p "$O"
K="$B/kevo"; T=examples/tasks/rowsum
export PATH=/usr/local/cuda/bin:$PATH
for d in /opt/nvidia/nsight-compute/*/; do [ -x "$d/ncu" ] && export PATH=$PATH:$d; done
command -v ncu compute-sanitizer | tee "$O/tools.txt"
ncu --version >>"$O/tools.txt" 2>&1; compute-sanitizer --version >>"$O/tools.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$O/tools.txt"

# 1. Fixtures from a standalone program (the tools' text as they print it).
nvcc -O3 -arch=sm_90 -lineinfo -o /tmp/sa tests/debug/standalone.cu
for t in memcheck:oob racecheck:race synccheck:sync initcheck:uninit; do
  tool=${t%%:*}; arg=${t##*:}
  s=$(date +%s.%N)
  compute-sanitizer --tool $tool --print-limit 20 --show-backtrace device /tmp/sa $arg >"$O/sa-$tool.txt" 2>&1
  echo "standalone $tool $(awk "BEGIN{print $(date +%s.%N) - $s}") s" >>"$O/times.txt"
done
S="--clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats"
s=$(date +%s.%N)
ncu $S --metrics 'regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$' --export /tmp/sa-prof --force-overwrite /tmp/sa scale >"$O/sa-ncu-run.txt" 2>&1
echo "standalone ncu run $(awk "BEGIN{print $(date +%s.%N) - $s}") s" >>"$O/times.txt"
s=$(date +%s.%N)
ncu --import /tmp/sa-prof.ncu-rep --page details --print-units base --csv >"$O/sa-ncu.csv" 2>&1
echo "ncu import csv $(awk "BEGIN{print $(date +%s.%N) - $s}") s" >>"$O/times.txt"
ncu --import /tmp/sa-prof.ncu-rep --page details --print-units base >"$O/sa-ncu.txt" 2>&1

# 2. The layers: under each tool, kevo's worker with every layer on; if that
# fails, with all off, then each turned back on alone.
export KEVO_CACHE_DIR=/tmp/kc KEVO_SANITIZER_TOOLS=memcheck
ok_san() { # $1: layers off
  KEVO_SANITIZER_LOG=$O KEVO_SANITIZER_WITHOUT=$1 timeout 100 $K sanitize --json --deadline 60 $T tests/debug/oob.cu >"$O/san-${1//,/+}.json" 2>"$O/san-${1//,/+}.err"
  grep -q '"line": *1[0-9]' "$O/san-${1//,/+}.json"
}
ok_ncu() {
  KEVO_NCU_WITHOUT=$1 timeout 100 $K profile --json --deadline 60 $T $T/good.cu >"$O/ncu-${1//,/+}.json" 2>"$O/ncu-${1//,/+}.err"
  grep -q '"sm_pct": *[1-9]' "$O/ncu-${1//,/+}.json"
}
ALL=netns,landlock,seccomp,lock,scratch
for tool in san ncu; do
  if ok_$tool none; then echo "$tool: every layer on works" >>"$O/layers.txt"; continue; fi
  if ! ok_$tool $ALL; then echo "$tool: fails even with all off" >>"$O/layers.txt"; continue; fi
  need=""
  for L in netns landlock seccomp lock scratch; do
    rest=$(echo $ALL | tr , '\n' | grep -vx $L | paste -sd,)
    if ok_$tool $rest; then echo "$tool: tolerates $L" >>"$O/layers.txt"; else need="$need,$L"; echo "$tool: needs $L off" >>"$O/layers.txt"; fi
  done
  need=${need#,}
  if ok_$tool ${need:-none}; then echo "$tool: works with only [$need] off" >>"$O/layers.txt"; else echo "$tool: [$need] alone is not enough" >>"$O/layers.txt"; fi
done
cat "$O/layers.txt" "$O/times.txt"
