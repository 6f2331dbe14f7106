#!/bin/sh
# Fetch onnxruntime's C and C++ headers (Debian 13 "trixie" package libonnxruntime-dev,
# 1.21.0, MIT) into DEST/include/onnxruntime, without changing the system's apt sources:
# apt reads a private state folder that lists the trixie suite, downloads the one .deb,
# and dpkg-deb unpacks it (the headers only: the library comes from the onnxruntime wheel
# or your own build). Needs apt-get, dpkg-deb and Debian's archive keyring.
# Usage: sh get_headers.sh DEST        then: make ORT_INCLUDE=DEST/include/onnxruntime
set -eu
dest="${1:?usage: sh get_headers.sh DEST}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
state="$dest/apt"
echo "get_headers.sh: apt-get downloads Debian 13's libonnxruntime-dev .deb (from" \
  "deb.debian.org) into $state, a private apt state, and unpacks its headers into" \
  "$dest/include/onnxruntime; the system's apt sources and packages are not touched," \
  "nothing is installed" >&2
mkdir -p "$state/lists/partial" "$state/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  > "$state/sources.list"
# as root, apt would hand the download to its _apt user, who cannot write into $dest
sandbox=""
[ "$(id -u)" = 0 ] && sandbox="-o APT::Sandbox::User=root"
apt_private() {
  # shellcheck disable=SC2086
  apt-get -q -o Dir::State="$state" -o Dir::State::status=/dev/null -o Dir::Cache="$state" \
    -o Dir::Etc::SourceList="$state/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    $sandbox "$@"
}
apt_private update >/dev/null
(cd "$state" && apt_private download libonnxruntime-dev >/dev/null)
dpkg-deb -x "$state"/libonnxruntime-dev_*.deb "$state/root"
mkdir -p "$dest/include"
rm -rf "$dest/include/onnxruntime"
cp -r "$state/root/usr/include/onnxruntime" "$dest/include/onnxruntime"
grep -m1 '#define ORT_API_VERSION' "$dest/include/onnxruntime/onnxruntime_c_api.h"
