#!/bin/sh
# Starts an sshd on 127.0.0.1 (port $KEVO_SSHD_PORT, default a free one) that lets
# this user in with a key generated here, and writes an executor
# configuration for it (the ssh executor's test reads it from
# $KEVO_TEST_SSH_CONFIG). Needs openssh-server and openssh-client
# (apt-get install openssh-server). Idempotent: a second run reuses the
# running sshd. Prints the line to export.
#
#   eval "$(scripts/ci-sshd.sh DIR)"     # DIR: where keys, config and logs go
set -eu
dir=${1:?usage: ci-sshd.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
running=0
if [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; then
  running=1
  port=$(sed -n 's/^Port //p' "$dir/sshd_config")
else
  # a free port: a fixed one collides with another checkout's CI on the host
  port=${KEVO_SSHD_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
fi
sshd=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$sshd" ] || { echo "ci-sshd.sh: no sshd: apt-get install openssh-server" >&2; exit 1; }
command -v ssh >/dev/null || { echo "ci-sshd.sh: no ssh: apt-get install openssh-client" >&2; exit 1; }
[ -f "$dir/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/host_ed25519"
[ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/id_ed25519"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
chmod 600 "$dir/authorized_keys"
[ "$running" = 1 ] || cat >"$dir/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $dir/host_ed25519
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
LogLevel ERROR
EOF
# root's sshd wants its privilege-separation directory
[ "$(id -u)" != 0 ] || mkdir -p /run/sshd
if [ "$running" = 0 ]; then
  "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log"
fi
cat >"$dir/exec-ssh.json" <<EOF
{"ssh": {"hosts": [{"host": "127.0.0.1", "servers": 2,
                    "env": {"KEVO_CACHE_DIR": "$dir/remote-cache"}}],
         "options": ["-p", "$port", "-i", "$dir/id_ed25519", "-o", "StrictHostKeyChecking=no",
                     "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]},
 "start_timeout_s": 120}
EOF
# wait for it to answer
i=0
until ssh -p "$port" -i "$dir/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no \
  -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR 127.0.0.1 true 2>/dev/null; do
  i=$((i + 1))
  if [ $i -ge 20 ]; then
    echo "ci-sshd.sh: the sshd on 127.0.0.1:$port does not let us in; see $dir/sshd.log" >&2
    cat "$dir/sshd.log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
echo "export KEVO_TEST_SSH_CONFIG=$dir/exec-ssh.json"
