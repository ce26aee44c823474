#!/usr/bin/env bash
# Builds LLGuidance (crates.io, MIT) as the static library cgo links for
# enginecore/structured: cargo builds enginecore/structured/llg (our
# three-line crate depending on llguidance, versions pinned by its
# Cargo.lock) into .cache/llguidance, and the crate's own C header is copied
# next to the library. Nothing is vendored or committed. Up to date when the
# library is newer than the crate's manifest and lock file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/llguidance
crate=enginecore/structured/llg
lib=$out/lib/libtandem_llg.a
hdr=$out/include/llguidance.h
if [ -f "$lib" ] && [ -f "$hdr" ] && [ "$lib" -nt "$crate/Cargo.toml" ] && [ "$lib" -nt "$crate/Cargo.lock" ]; then
  exit 0
fi
if ! command -v cargo >/dev/null; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "llguidance: cargo not found (install Rust: https://rustup.rs); structured outputs need it" >&2
    exit 1
  fi
fi
mkdir -p "$out/lib" "$out/include"
echo "llguidance: building the LLGuidance static library with cargo (a few minutes the first time)"
CARGO_TARGET_DIR="$PWD/$out/target" cargo build --release --locked --quiet --manifest-path "$crate/Cargo.toml"
cp "$out/target/release/libtandem_llg.a" "$lib.tmp" && mv "$lib.tmp" "$lib"
# The header ships in the crate's source, which cargo has just unpacked.
src=$(CARGO_TARGET_DIR="$PWD/$out/target" cargo metadata --locked --format-version 1 --manifest-path "$crate/Cargo.toml" |
  python3 -c 'import json,sys; m=json.load(sys.stdin); print(next(p["manifest_path"] for p in m["packages"] if p["name"]=="llguidance"))')
cp "$(dirname "$src")/llguidance.h" "$hdr"
echo "llguidance: $lib ($(du -h "$lib" | cut -f1))"
