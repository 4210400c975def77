#!/usr/bin/env bash
# Install the Debian 12 packages gpu-extender needs to build, test and run.
# Idempotent: packages already present are skipped without touching apt.
set -euo pipefail

pkgs=(build-essential cmake pkg-config
      libmicrohttpd-dev libevent-dev libcurl4-openssl-dev libcjson-dev libyaml-dev libcriterion-dev
      curl ca-certificates openssl python3 python3-yaml prometheus)
if [ "${GX_DEPS_DEV:-0}" = 1 ]; then
    pkgs+=(git clang clang-format clang-tidy cppcheck libclang-rt-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian prometheus package starts a system service; tests run their own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    $sudo systemctl stop prometheus || true
fi
