"""pytest plugin for the peer suites (scripts/conformance/run.sh).

- Skips the tests out_of_scope.txt lists, with the reason written there
  (the skip reason starts with "out of scope:").
- With TANDEM_CONFORMANCE_HTTP_ONLY=1 (vLLM), deselects the tests that never
  talk to a server: those whose fixtures include no server or client and
  whose body starts none. They test vLLM's Python classes, not HTTP.
"""

import fnmatch
import inspect
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def load_out_of_scope(suite: str) -> list[tuple[str, str]]:
    """(pattern, reason) of out_of_scope.txt lines for this suite."""
    entries = []
    with open(os.path.join(HERE, "out_of_scope.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            s, pattern, reason = line.split(None, 2)
            if s == suite:
                entries.append((pattern, reason))
    return entries


def match(entries, nodeid: str) -> str | None:
    for pattern, reason in entries:
        pattern = pattern.replace("[", "[[]")  # brackets are the test's parameters, not a character class
        if fnmatch.fnmatchcase(nodeid, pattern) or fnmatch.fnmatchcase(nodeid.split("[")[0], pattern):
            return reason
        if "::" not in pattern and fnmatch.fnmatchcase(nodeid.split("::")[0], pattern):
            return reason
    return None


def _talks_http(item) -> bool:
    for name in item.fixturenames:
        if "server" in name or "client" in name:
            return True
    fn = getattr(item, "function", None)
    try:
        src = inspect.getsource(fn) if fn else ""
    except (OSError, TypeError):
        src = ""
    return any(s in src for s in ("RemoteOpenAIServer", "requests.", "httpx.", "openai.OpenAI(", "openai.AsyncOpenAI("))


def pytest_collection_modifyitems(config, items):
    suite = os.environ.get("TANDEM_CONFORMANCE_SUITE", "")
    root = os.environ.get("TANDEM_CONFORMANCE_ROOT", str(config.rootpath))
    entries = load_out_of_scope(suite)
    keep, deselected = [], []
    for item in items:
        rel = os.path.relpath(os.path.realpath(item.path), os.path.realpath(root))
        nodeid = rel + "::" + "::".join(item.nodeid.split("::")[1:])
        if os.environ.get("TANDEM_CONFORMANCE_HTTP_ONLY") == "1" and not _talks_http(item):
            deselected.append(item)
            continue
        reason = match(entries, nodeid)
        if reason:
            item.add_marker(pytest.mark.skip(reason="out of scope: " + reason))
        keep.append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = keep


def pytest_collection_finish(session):
    """From here on the vllm stub's placeholders raise when called."""
    stub = sys.modules.get("vllm")
    if stub is not None and hasattr(stub, "STRICT"):
        stub.STRICT = True


if __name__ == "__main__":
    # plugin.py SUITE FILE: prints the reason when out_of_scope.txt takes the whole file.
    entries = [(p, r) for p, r in load_out_of_scope(sys.argv[1]) if "::" not in p]
    reason = match(entries, sys.argv[2])
    if reason:
        print(reason)
