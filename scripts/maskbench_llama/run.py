#!/usr/bin/env python3
"""MaskBench through llama.cpp's grammar engine, next to LLGuidance.

Reads the JSONL that enginecore/structured's TestMaskBenchExport writes
(each schema with its instances' token ids, as TestMaskBench tokenizes
them), converts each schema to GBNF with llama.cpp's own converter
(examples/json_schema_to_grammar.py: SchemaConverter, as its main() runs
it), and drives .cache/maskbench-grammar (grammar.c) over stdin/stdout:
compile the grammar, then force every instance's ids through it. The
figures are TestMaskBench's: a schema passes when it converts and compiles
and no valid instance is refused and no invalid one accepted.

Standard library only. Usage:
  run.py --cases cases.jsonl --llama-cpp .cache/llama.cpp --bin .cache/maskbench-grammar
         --model M.gguf [--llguidance llg.json] [--split TEXT] --out figures.json
"""
import argparse
import datetime
import json
import os
import select
import signal
import subprocess
import sys
import time


def pct(values, p):
    """TestMaskBench's percentile: the element at index int(p*n) of the sorted values."""
    if not values:
        return 0
    s = sorted(values)
    return s[min(len(s) - 1, int(p * len(s)))]


def aggregate(results):
    """Figures from per-schema results.

    Each result is {"compiled": bool, "compile_us": float or None,
    "tests": [(valid, accepted)], "mask_ns": [int]}.
    """
    fig = {"schemas": 0, "passed": 0, "compile_errors": 0, "validation_errors": 0, "invalidation_errors": 0}
    compile_us, mask_ns = [], []
    for r in results:
        fig["schemas"] += 1
        if r["compile_us"] is not None:
            compile_us.append(r["compile_us"])
        if not r["compiled"]:
            fig["compile_errors"] += 1
            continue
        mask_ns.extend(r["mask_ns"])
        ok = True
        for valid, accepted in r["tests"]:
            if valid and not accepted:
                fig["validation_errors"] += 1
                ok = False
            elif not valid and accepted:
                fig["invalidation_errors"] += 1
                ok = False
        if ok:
            fig["passed"] += 1
    fig["compile_us"] = {p: pct(compile_us, q) for p, q in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))}
    fig["mask_us"] = {p: pct(mask_ns, q) / 1e3 for p, q in (("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999))}
    fig["masks"] = len(mask_ns)
    return fig


class Timeout(Exception):
    pass


class Engine:
    """grammar.c as a subprocess; restarted after a crash or a timeout."""

    def __init__(self, binary, model):
        self.binary, self.model, self.proc = binary, model, None

    def start(self):
        self.proc = subprocess.Popen([self.binary, self.model], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ask(self, data, timeout):
        if self.proc is None:
            self.start()
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            raise Timeout()
        line = self.proc.stdout.readline()
        if not line:
            self.stop()  # crashed (an exception inside llama.cpp aborts it)
            return None
        return line.decode().split()


def convert(SchemaConverter, schema, timeout):
    def on_alarm(signum, frame):
        raise Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    try:
        conv = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        schema = conv.resolve_refs(schema, "input")
        conv.visit(schema, "")
        return conv.format_grammar()
    finally:
        signal.alarm(0)


def run_schema(SchemaConverter, engine, case, timeout):
    r = {"compiled": False, "compile_us": None, "tests": [], "mask_ns": [], "error": None}
    try:
        t0 = time.perf_counter()
        gbnf = convert(SchemaConverter, case["schema"], timeout)
        r["convert_us"] = (time.perf_counter() - t0) * 1e6
    except Timeout:
        r["error"] = "converter timeout"
        return r
    except Exception as e:  # the converter's own refusals: unsupported $ref, bad pattern, ...
        r["error"] = f"converter: {type(e).__name__}: {e}"[:200]
        return r
    data = gbnf.encode()
    try:
        ans = engine.ask(b"G %d\n" % len(data) + data, timeout)
    except Timeout:
        r["error"] = "grammar init timeout"
        return r
    if not ans or ans[0] != "ok":
        r["error"] = "grammar init failed"
        return r
    r["compiled"], r["compile_us"] = True, float(ans[1])
    for t in case["tests"]:
        line = "T %d %s\n" % (case["eos"], " ".join(map(str, t["ids"])))
        try:
            ans = engine.ask(line.encode(), timeout)
        except Timeout:
            ans = None
            r["error"] = "instance timeout"
        if ans is None:
            # A crash or a timeout counts as refusing the instance; the
            # grammar must be sent again to the restarted engine.
            r["tests"].append((t["valid"], False))
            try:
                engine.ask(b"G %d\n" % len(data) + data, timeout)
            except Timeout:
                pass
            continue
        r["tests"].append((t["valid"], ans[1] == "1"))
        r["mask_ns"].extend(int(x) for x in ans[2:])
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--llama-cpp", required=True, help="the llama.cpp source bundle (for examples/json_schema_to_grammar.py)")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--llguidance", help="TestMaskBench's figures on the same cases (TANDEM_MASKBENCH_JSON)")
    ap.add_argument("--split", default="", help="which cases (default: the --llguidance file's)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per conversion, grammar init or instance")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(args.llama_cpp, "examples"))
    sys.setrecursionlimit(10000)
    from json_schema_to_grammar import SchemaConverter

    engine = Engine(args.bin, args.model)
    results, failures = [], {}
    start = time.time()
    with open(args.cases) as f:
        cases = [json.loads(line) for line in f]
    for i, case in enumerate(cases):
        r = run_schema(SchemaConverter, engine, case, args.timeout)
        results.append(r)
        if r["error"]:
            kind = r["error"].split(":")[0]
            failures[kind] = failures.get(kind, 0) + 1
        if (i + 1) % 25 == 0:
            print(f"maskbench-llamacpp: {i + 1}/{len(cases)} schemas, {time.time() - start:.0f} s", file=sys.stderr)
    engine.stop()

    llg = None
    if args.llguidance:
        with open(args.llguidance) as f:
            llg = json.load(f)
    fig = aggregate(results)
    # Which schemas went wrong, to read the causes off the cases' meta.features.
    fig["invalidating_schemas"] = sorted(c["name"] for c, r in zip(cases, results)
                                         if r["compiled"] and any(a and not v for v, a in r["tests"]))
    fig["refusing_schemas"] = sorted(c["name"] for c, r in zip(cases, results)
                                     if r["compiled"] and any(v and not a for v, a in r["tests"]))
    convert_us = [r["convert_us"] for r in results if "convert_us" in r]
    fig.update({
        "date": datetime.date.today().isoformat(),
        "cases": args.split or (llg or {}).get("cases", ""),
        "model": os.path.basename(args.model),
        "matcher": "llama.cpp grammar sampler (llama_sampler_init_grammar; node-llama-cpp's prebuilt CPU libraries), "
                   "schemas converted by llama.cpp's examples/json_schema_to_grammar.py",
        "compile_note": "compile_us is llama_sampler_init_grammar (GBNF parse) only; the Python converter's time is converter_us",
        "converter_us": {p: round(pct(convert_us, q), 1) for p, q in (("p50", 0.5), ("p99", 0.99))},
        "failures": failures,
        "wall_s": round(time.time() - start),
    })
    out = {"llamacpp": fig}
    if llg:
        out["llguidance"] = llg
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(f"maskbench-llamacpp: {fig['schemas']} schemas, {fig['passed']} passed, {fig['compile_errors']} compile errors, "
          f"{fig['validation_errors']} validation errors, {fig['invalidation_errors']} invalidation errors; "
          f"compile p50 {fig['compile_us']['p50']:.0f} µs p99 {fig['compile_us']['p99']:.0f} µs; mask p50 "
          f"{fig['mask_us']['p50']:.0f} µs p99 {fig['mask_us']['p99']:.0f} µs p99.9 {fig['mask_us']['p99.9']:.0f} µs "
          f"over {fig['masks']} masks; {fig['wall_s']} s", file=sys.stderr)


if __name__ == "__main__":
    main()
