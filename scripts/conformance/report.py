"""Reads the JUnit XML files run.sh leaves and prints the per-file table.

Usage: report.py RESULTS_DIR. A test counts as out of scope when its skip
reason starts with "out of scope:" (plugin.py, from out_of_scope.txt),
as skipped when it skipped itself (a GPU-only or ROCm-only condition, …),
and every failure or error counts as failed. Exits 1 if anything failed.
"""

import glob
import json
import os
import sys
import xml.etree.ElementTree as ET


def main(results: str) -> int:
    rows, failures = [], []
    logs = glob.glob(os.path.join(results, "*", "**", "*.log"), recursive=True)
    logs += glob.glob(os.path.join(results, "*", "**", "*.oos"), recursive=True)
    for log in sorted(logs):
        base = log.rsplit(".", 1)[0]
        xml = base + ".xml"
        rel = os.path.relpath(base, results)
        suite, name = rel.split(os.sep, 1)
        for prefix in ("tests/entrypoints/openai/", "unit/"):  # the suites' test directories
            name = name.removeprefix(prefix)
        meta = {}
        if os.path.exists(xml[:-4] + ".json"):
            with open(xml[:-4] + ".json") as f:
                meta = json.load(f)
        counts = {"passed": 0, "failed": 0, "out_of_scope": 0, "skipped": 0}
        if log.endswith(".oos"):  # the whole file is out of scope; run.sh did not run it
            rows.append((suite, name, counts | {"out_of_scope": "file"}))
            continue
        try:
            cases = list(ET.parse(xml).getroot().iter("testcase"))
        except (ET.ParseError, FileNotFoundError):
            cases = []
            if not meta.get("timed_out"):
                counts["failed"] += 1
                failures.append((suite, name, f"no JUnit XML: pytest did not finish, see {log}"))
        for case in cases:
            bad = case.find("failure")
            if bad is None:
                bad = case.find("error")
            skip = case.find("skipped")
            nodeid = f"{name}::{case.get('name')}"
            if bad is not None:
                counts["failed"] += 1
                msg = (bad.get("message") or bad.text or "").strip().splitlines()
                failures.append((suite, nodeid, msg[0][:300] if msg else ""))
            elif skip is not None:
                reason = skip.get("message") or ""
                counts["out_of_scope" if "out of scope:" in reason else "skipped"] += 1
            else:
                counts["passed"] += 1
        if meta.get("timed_out"):
            counts["failed"] += 1
            failures.append((suite, name, f"file timed out after {meta.get('timeout')}s"))
        rows.append((suite, name, counts))
    print()
    print(f"{'suite':9} {'file':56} {'pass':>5} {'fail':>5} {'oos':>5} {'skip':>5}")
    total = {"passed": 0, "failed": 0, "out_of_scope": 0, "skipped": 0}
    for suite, name, c in rows:
        print(f"{suite:9} {name:56} {c['passed']:5} {c['failed']:5} {c['out_of_scope']:5} {c['skipped']:5}")
        for k in total:
            total[k] += c[k] if isinstance(c[k], int) else 0
    files_oos = sum(1 for _, _, c in rows if c["out_of_scope"] == "file")
    print(f"{'total':9} {f'{len(rows)} files':56} {total['passed']:5} {total['failed']:5} {total['out_of_scope']:5} {total['skipped']:5}")
    print(f"(oos: out of scope, scripts/conformance/out_of_scope.txt, plus {files_oos} whole files marked 'file';"
          " skip: skipped by the test itself)")
    with open(os.path.join(results, "failures.txt"), "w") as f:
        for suite, nodeid, msg in failures:
            f.write(f"{suite} {nodeid}\n    {msg}\n")
    if failures:
        print(f"\n{len(failures)} failed (not out of scope); each with its first line: {os.path.join(results, 'failures.txt')}")
        for suite, nodeid, msg in failures:
            print(f"  FAIL {suite} {nodeid}\n       {msg[:160]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
