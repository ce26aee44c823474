"""The checks' harness the SDK test scripts share: each check prints a
PASS or FAIL line (a failure with its traceback), and finish prints
"N passed, M failed" and exits non-zero on any failure."""

import sys
import traceback

RESULTS = []


def run(name, fn):
    try:
        fn()
        RESULTS.append(True)
        print("PASS", name, flush=True)
    except Exception:
        RESULTS.append(False)
        print("FAIL", name, flush=True)
        traceback.print_exc()


def finish():
    failed = RESULTS.count(False)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
