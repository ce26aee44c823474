#!/usr/bin/env bash
# Installs the web console's pinned front-end tooling (esbuild, TypeScript,
# playwright-core) into frontend/webui/node_modules for the tests: the
# bundle check rebuilds dist/ and the browser test drives Debian's
# chromium. `make build` needs none of it (dist/ is committed).
# With "build" it also rebuilds frontend/webui/dist from src/.
set -euo pipefail
cd "$(dirname "$0")/../frontend/webui"
if ! command -v npm >/dev/null 2>&1; then
  echo "webui: npm is required (scripts/setup.sh installs it)" >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "webui: installing npm packages (esbuild, typescript, playwright-core)…"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi
if [ "${1:-}" = build ]; then
  node_modules/.bin/tsc -p .
  node build.mjs dist
  echo "webui: built frontend/webui/dist"
else
  echo "webui: ready (frontend/webui/node_modules)"
fi
