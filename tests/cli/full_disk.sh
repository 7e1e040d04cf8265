#!/bin/sh
# A run stopped by a full disk (edges_e2e.sh runs this in a user and mount
# namespace of its own: unshare -rm sh full_disk.sh KEVO T RS): the store on a
# 4 MiB tmpfs, filled after the first step. Exit 77: no tmpfs could be mounted.
K=$1 T=$2 RS=$3
mount -t tmpfs -o size=4m none "$T/full" || exit 77
export KEVO_DB="$T/full/k.db"
"$K" run --strategy tune --steps 5 --budget 0.3 --seed 1 "$RS" >"$T/full.out" 2>&1 &
P=$!
i=0
while [ "$(sqlite3 "$KEVO_DB" "select count(*) from nodes" 2>/dev/null)" != 1 ] && [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
dd if=/dev/zero of="$T/full/fill" bs=4096 >/dev/null 2>&1
wait $P
echo "rc=$?" >>"$T/full.out"
rm -f "$T/full/fill"
"$K" runs >"$T/full.runs" 2>&1
"$K" runs show 1 >"$T/full.show" 2>&1
