"""msgspec oracle for package wire/vllm.

Reads a JSON list of cases from stdin, each {"type": <struct name in
structs.py>, "frames": [hex, ...]} (for request types, frames without the
type byte), decodes the frames with vLLM 0.33.0's structs and re-encodes
them with vLLM's encoding. Writes a JSON list of {"frames": [hex, ...],
"value": <decoded value as JSON>} or {"error": str}.

Besides structs.py's classes, a type is one of TYPES below (payloads vLLM
sends as plain Python values) or "EngineCoreDead" (the raw frame, compared
with vLLM's constant).
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


# core.py / utils.py send these as builtins: the ABORT list of request
# ids, the UTILITY tuple (client_index, call_id, method, args), the
# START_DP_WAVE tuple (wave, exclude_engine_index) and the handshake dict.
TYPES = {
    "Any": None,
    "Abort": list[str],
    "UtilityRequest": tuple[int, int, str, tuple],
    "StartDPWave": tuple[int, int | None],
    "HandshakeMessage": dict[str, str | bool | int],
}


def run(case):
    frames = [bytes.fromhex(f) for f in case["frames"]]
    if case["type"] == "EngineCoreDead":
        if frames != [structs.ENGINE_CORE_DEAD]:
            raise ValueError(f"not {structs.ENGINE_CORE_DEAD!r}")
        return {"frames": case["frames"], "value": structs.ENGINE_CORE_DEAD.decode()}
    if case["type"] in TYPES:
        t = TYPES[case["type"]]
    else:
        t = getattr(structs, case["type"])
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
