#!/usr/bin/env python3
"""Writes enginecore/model/testdata/quant_golden.json: golden ggml blocks.

For every type it records input floats, the ggml-layout bytes and their
dequantization as computed by gguf-py (llama.cpp's Python package, whose
gguf.quants mirrors ggml-quants.c bit for bit). Types gguf-py can quantize
(F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) get bytes quantized from the
input; K-quants and IQ4_NL/IQ4_XS, which gguf-py only dequantizes, get
random blocks with sane f16 scales. MXFP4 gets both.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install -r requirements-test.txt
    /tmp/venv/bin/python gen-quant-golden.py   # from this directory
"""
import json
import os

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = os.path.join(os.path.dirname(__file__), "..", "testdata", "quant_golden.json")


def floats(a):
    return [float(v) for v in np.asarray(a, dtype=np.float32).reshape(-1)]


def f16_bytes(rng, lo, hi, n):
    return rng.uniform(lo, hi, n).astype(np.float16).view(np.uint8)


# Where each type keeps its f16 scales: (block bytes, offsets of d/dmin).
SCALES = {
    T.Q4_K: (144, [0, 2]), T.Q5_K: (176, [0, 2]), T.Q6_K: (210, [208]),
    T.Q2_K: (84, [80, 82]), T.Q3_K: (110, [108]),
    T.IQ4_NL: (18, [0]), T.IQ4_XS: (136, [0]),
}


def kquant_blocks(rng, qtype, n_blocks):
    size, offsets = SCALES[qtype]
    out = []
    for _ in range(n_blocks):
        b = rng.integers(0, 256, size, dtype=np.uint8)
        for o in offsets:
            b[o:o + 2] = f16_bytes(rng, 0.001, 0.05, 1)
        out.append(b)
    return np.concatenate(out)


def quantized_case(rng, qtype, n):
    x = rng.standard_normal(n).astype(np.float32)
    x[32:64] = 0
    x[n - 58] = 9.5
    x[n - 28] = -7.25
    q = quants.quantize(x, qtype)
    return {
        "type": qtype.name,
        "input": floats(x),
        "bytes": q.view(np.uint8).tobytes().hex(),
        "dequantized": floats(quants.dequantize(q, qtype)),
    }


def main():
    rng = np.random.default_rng(20240611)
    cases = []
    # Inputs include an all-zero block and blocks with outliers, so that
    # the d = 0 and sign-of-max paths are covered.
    for qtype, n in [(T.F16, 64), (T.BF16, 64), (T.Q4_0, 128), (T.Q4_1, 128), (T.Q8_0, 128)]:
        cases.append(quantized_case(rng, qtype, n))
    for qtype in (T.Q4_K, T.Q5_K, T.Q6_K):
        b = kquant_blocks(rng, qtype, 2)
        cases.append({
            "type": qtype.name,
            "input": None,
            "bytes": b.tobytes().hex(),
            "dequantized": floats(quants.dequantize(b, qtype)),
        })
    # Added later, after the K-quants so that the cases above keep their
    # random draws (and bytes).
    for qtype, n in [(T.Q5_0, 128), (T.Q5_1, 128)]:
        cases.append(quantized_case(rng, qtype, n))
    # Added later still: the 2- and 3-bit K-quants and the non-linear
    # 4-bit types (IQ4_NL in blocks of 32, so 8 of them).
    for qtype, n_blocks in [(T.Q2_K, 2), (T.Q3_K, 2), (T.IQ4_NL, 8), (T.IQ4_XS, 2)]:
        b = kquant_blocks(rng, qtype, n_blocks)
        cases.append({
            "type": qtype.name,
            "input": None,
            "bytes": b.tobytes().hex(),
            "dequantized": floats(quants.dequantize(b, qtype)),
        })
    # Added later still: MXFP4, quantized from the input (gguf-py's
    # quantizer is ggml's quantize_row_mxfp4_ref) and as random blocks
    # with e in 110..135, and 0, 1 and 2 (float32 subnormal scales, then
    # the first normal one) in the last three. (e near 255 overflows to
    # Inf, which JSON cannot hold: TestHandBlocks covers it.)
    cases.append(quantized_case(rng, T.MXFP4, 128))
    b = rng.integers(0, 256, (8, 17), dtype=np.uint8)
    b[:, 0] = rng.integers(110, 136, 8)
    b[5:, 0] = [0, 1, 2]
    b = b.reshape(-1)
    cases.append({
        "type": T.MXFP4.name,
        "input": None,
        "bytes": b.tobytes().hex(),
        "dequantized": floats(quants.dequantize(b, T.MXFP4)),
    })
    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/gen-quant-golden.py", "gguf": "0.19.0", "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
