#!/bin/sh
# Installs what kevo needs on Debian/Ubuntu (as root), or says what to run.
set -e
PKGS="build-essential cmake ninja-build pkg-config libjansson-dev libsqlite3-dev libssl-dev libseccomp-dev libcmocka-dev libcurl4-openssl-dev sqlite3 binutils python3"
missing=""
for tool in cc cmake ninja pkg-config nm sqlite3 python3; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if command -v pkg-config >/dev/null 2>&1; then
  for mod in jansson sqlite3 libseccomp cmocka libcrypto libcurl; do
    pkg-config --exists "$mod" || missing="$missing $mod"
  done
fi
[ -z "$missing" ] && exit 0
echo "kevo: missing:$missing"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "kevo: installing with apt-get: $PKGS"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq $PKGS >/dev/null
  exit 0
fi
echo "kevo: run this, then try again:"
echo "  sudo apt-get update && sudo apt-get install -y $PKGS"
exit 1
