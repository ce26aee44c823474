#!/usr/bin/env bash
# Installs pyzmq and msgspec into a virtual environment under
# .cache/kvevents-venv for the external-consumer tests
# (cmd/tandem/e2e_kvevents_test.go runs scripts/kvevents/consume.py with
# it: an engine's KV-events socket decoded by msgspec with vLLM's own
# struct definitions, the way vLLM's consumers read KV events).
# Idempotent: does nothing when the pinned versions are installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
pyzmq=${PYZMQ_VERSION:-27.1.0}
msgspec=${MSGSPEC_VERSION:-0.22.0}
venv=.cache/kvevents-venv
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "kvevents: $py not found; the KV-event consumer tests will be skipped" >&2
  exit 0
fi
check="import zmq, msgspec, sys; sys.exit(zmq.__version__ != '$pyzmq' or msgspec.__version__ != '$msgspec')"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "kvevents: pyzmq $pyzmq and msgspec $msgspec ready in $venv"
  exit 0
fi
echo "kvevents: installing pyzmq==$pyzmq msgspec==$msgspec into $venv…"
mkdir -p .cache
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyzmq==$pyzmq" "msgspec==$msgspec"
echo "kvevents: pyzmq $pyzmq and msgspec $msgspec ready in $venv"
