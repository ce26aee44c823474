"""msgspec oracle for package wire/vllm.

Reads a JSON list of cases from stdin, each {"type": <struct name in
structs.py>, "frames": [hex, ...]} (for request types, frames without the
type byte), decodes the frames with vLLM 0.33.0's structs and re-encodes
them with vLLM's encoding. Writes a JSON list of {"frames": [hex, ...],
"value": <decoded value as JSON>} or {"error": str}.
"""

import json
import sys

import msgspec

import structs


def to_json(obj):
    if isinstance(obj, structs.NDArray):
        return {"dtype": obj.dtype, "shape": list(obj.shape), "data": obj.data.hex()}
    if isinstance(obj, (bytes, memoryview)):
        return bytes(obj).hex()
    if isinstance(obj, set):
        return sorted(obj)
    raise TypeError(type(obj))


def run(case):
    t = getattr(structs, case["type"]) if case["type"] != "Any" else None
    frames = [bytes.fromhex(f) for f in case["frames"]]
    value = structs.MsgpackDecoder(t).decode(frames)
    out = structs.MsgpackEncoder().encode(value)
    return {"frames": [bytes(f).hex() for f in out],
            "value": json.loads(msgspec.json.encode(value, enc_hook=to_json))}


def main():
    results = []
    for case in json.load(sys.stdin):
        try:
            results.append(run(case))
        except Exception as e:  # reported to the Go test
            results.append({"error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
