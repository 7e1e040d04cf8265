#!/bin/sh
# Starts a one-node Slurm on this machine (munged, slurmctld and slurmd from
# the distribution's packages: apt-get install slurm-wlm munge), configured
# in DIR (never in /etc/slurm), with one partition, `debug`, and writes an
# executor configuration for it (the slurm executor's test reads it from
# $KEVO_TEST_SLURM_CONFIG). Needs root (the daemons run as root, munged as
# munge). Idempotent: daemons already running are reused. Prints the lines
# to export (SLURM_CONF points srun and sinfo at DIR's configuration).
#
#   eval "$(scripts/ci-slurm.sh DIR)"
set -eu
dir=${1:?usage: ci-slurm.sh DIR}
[ "$(id -u)" = 0 ] || { echo "ci-slurm.sh: run as root (the Slurm daemons run as root)" >&2; exit 1; }
for b in munged slurmctld slurmd srun sinfo; do
  command -v $b >/dev/null || [ -x /usr/sbin/$b ] ||
    { echo "ci-slurm.sh: no $b: apt-get install slurm-wlm munge" >&2; exit 1; }
done
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"

# munge: the key the package made, its own user, its run directory
if [ ! -s /etc/munge/munge.key ]; then
  /usr/sbin/mungekey --create --force 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 2>/dev/null
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 755 /run/munge
if ! munge -n </dev/null >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  i=0
  until munge -n </dev/null >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 20 ] || { echo "ci-slurm.sh: munged did not start" >&2; exit 1; }
    sleep 0.5
  done
fi

cat >"$dir/slurm.conf" <<EOF
ClusterName=kevo-ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=30
KillWait=5
MinJobAge=10
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$dir/slurm.conf"
running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
running "$dir/slurmctld.pid" || /usr/sbin/slurmctld -f "$SLURM_CONF"
running "$dir/slurmd.pid" || /usr/sbin/slurmd -f "$SLURM_CONF"
i=0
until sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; do
  i=$((i + 1))
  if [ $i -ge 60 ]; then
    echo "ci-slurm.sh: the node did not come up; sinfo says: $(sinfo -h -o '%T %E' 2>&1)" >&2
    tail -20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 || true
    exit 1
  fi
  # a node left down by an earlier run comes back
  [ $i != 10 ] || scontrol update nodename="$host" state=resume 2>/dev/null || true
  sleep 0.5
done
cat >"$dir/exec-slurm.json" <<EOF
{"slurm": {"partition": "debug", "time": "00:30:00", "servers": 2,
           "env": {"KEVO_CACHE_DIR": "$dir/node-cache"}},
 "start_timeout_s": 120}
EOF
echo "export SLURM_CONF=$dir/slurm.conf"
echo "export KEVO_TEST_SLURM_CONFIG=$dir/exec-slurm.json"
