#!/usr/bin/env bash
# Installs pyzmq and msgpack into a virtual environment under
# .cache/kvevents-venv for the external-consumer test
# (cmd/tandem/e2e_kvevents_test.go runs scripts/kvevents/consume.py with
# it: an engine's PUB socket decoded by Python, the way vLLM, Dynamo and
# llm-d consumers read KV events). Idempotent: does nothing when the
# pinned versions are installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
pyzmq=${PYZMQ_VERSION:-27.1.0}
msgpack=${MSGPACK_VERSION:-1.1.2}
venv=.cache/kvevents-venv
py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null 2>&1; then
  echo "kvevents: $py not found; the KV-event consumer test will be skipped" >&2
  exit 0
fi
check="import zmq, msgpack, sys; sys.exit(zmq.__version__ != '$pyzmq' or '.'.join(map(str, msgpack.version)) != '$msgpack')"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  echo "kvevents: pyzmq $pyzmq and msgpack $msgpack ready in $venv"
  exit 0
fi
echo "kvevents: installing pyzmq==$pyzmq msgpack==$msgpack into $venv…"
mkdir -p .cache
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyzmq==$pyzmq" "msgpack==$msgpack"
echo "kvevents: pyzmq $pyzmq and msgpack $msgpack ready in $venv"
