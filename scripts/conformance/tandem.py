"""Starts `tandem serve` for the peer suites' shims (scripts/conformance).

Both shims (vLLM's RemoteOpenAIServer, llama.cpp's ServerProcess) call
start(); nothing here imports vLLM or llama.cpp. The binary, the model and
the threads come from the environment run.sh sets:
TANDEM_BIN, TANDEM_MODEL, TANDEM_CONFORMANCE_THREADS.
"""

import functools
import os
import re
import socket
import subprocess
import sys
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("TANDEM_BIN", os.path.join(ROOT, "bin", "tandem"))
MODEL = os.environ.get("TANDEM_MODEL", os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@functools.cache
def serve_flags() -> dict[str, bool]:
    """The flags `tandem serve --help` lists: name → whether it takes a value."""
    out = subprocess.run([BIN, "serve", "--help"], capture_output=True, text=True).stdout
    flags: dict[str, bool] = {}
    for line in out.splitlines():
        m = re.match(r" {1,4}(--[a-z0-9-]+(?:, --[a-z0-9-]+)*)( [A-Z_]+)?", line)  # a flag line, not a wrapped help line
        if m:  # the names after the first are aliases, or the --no- form
            for name in m.group(1).split(", "):
                flags[name] = bool(m.group(2)) and not name.startswith("--no-")
    return flags


@functools.cache
def context_length() -> int | None:
    """The served GGUF's training context (its <arch>.context_length)."""
    try:
        import gguf

        r = gguf.GGUFReader(MODEL)
        arch = r.fields["general.architecture"].contents()
        return int(r.fields[f"{arch}.context_length"].contents())
    except Exception:
        return None


def file_serve_args() -> list[str]:
    """The flags serve_args.txt adds for the test file run.sh runs now
    (TANDEM_CONFORMANCE_SUITE and TANDEM_CONFORMANCE_FILE)."""
    import fnmatch

    suite, rel = os.environ.get("TANDEM_CONFORMANCE_SUITE"), os.environ.get("TANDEM_CONFORMANCE_FILE")
    if not suite or not rel:
        return []
    out: list[str] = []
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve_args.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) >= 3 and line[0] == suite and fnmatch.fnmatchcase(rel, line[1].replace("[", "[[]")):
                out += line[2:]
    return out


def translate(args: list[str]) -> tuple[list[str], list[str]]:
    """Keeps the peer's serve flags that Tandem has (same name), drops the rest.

    Returns (kept, dropped); a dropped flag takes its values with it (the
    arguments up to the next flag). --max-model-len is capped at the served
    model's context length.
    """
    known = serve_flags()
    kept: list[str] = []
    dropped: list[str] = []
    i = 0
    while i < len(args):
        a = str(args[i])
        name = a.split("=", 1)[0]
        j = i + 1
        while j < len(args) and not str(args[j]).startswith("-"):
            j += 1
        group = [str(x) for x in args[i:j]]
        if name in known:
            if "=" in a or not known[name]:
                kept.append(a)
                if not known[name]:
                    dropped.extend(group[1:])
            else:
                kept.extend(group[:2])
                dropped.extend(group[2:])
                ctx = context_length()
                if name == "--max-model-len" and ctx and len(group) > 1 and group[1].isdigit() and int(group[1]) > ctx:
                    # a length meant for the peer's model: the served model's is the most it takes
                    print(f"[tandem] --max-model-len {group[1]} capped at the model's {ctx}")
                    kept[-1] = str(ctx)
        else:
            dropped.extend(group)
        i = j
    return kept, dropped


class Server:
    """One `tandem serve` process in its own process group."""

    def __init__(self, served_name: str, args: list[str], port: int | None = None,
                 host: str = "127.0.0.1", env: dict[str, str] | None = None):
        self.host = host
        self.port = port or free_port()
        kept, dropped = translate(args)
        if "--served-model-name" not in [k.split("=")[0] for k in kept] and served_name:
            kept += ["--served-model-name", served_name]
        threads = os.environ.get("TANDEM_CONFORMANCE_THREADS")
        if threads and "--threads" not in kept:
            kept += ["--threads", threads]
        extra = file_serve_args()
        if extra:
            print(f"[tandem] serve_args.txt adds for this file: {' '.join(extra)}")
        self.cmd = [BIN, "serve", MODEL, "--host", host, "--port", str(self.port), *kept, *extra]
        if dropped:
            print(f"[tandem] peer flags with no Tandem flag of that name, dropped: {' '.join(dropped)}")
        print(f"[tandem] starting: {' '.join(self.cmd)}")
        self.proc = subprocess.Popen(self.cmd, stdout=sys.stdout, stderr=sys.stderr,
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        # run.sh ends the process groups named here that outlive their pytest
        # (a file past its time limit is killed without teardown).
        pids = os.environ.get("TANDEM_CONFORMANCE_PIDS")
        if pids:
            os.makedirs(pids, exist_ok=True)
            open(os.path.join(pids, str(self.proc.pid)), "w").close()

    @property
    def url_root(self) -> str:
        return f"http://{self.host}:{self.port}"

    def wait_healthy(self, timeout: float = 120, headers: dict | None = None) -> None:
        start = time.time()
        while time.time() - start < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tandem serve exited with {self.proc.returncode}: {' '.join(self.cmd)}")
            try:
                if requests.get(self.url_root + "/health", headers=headers, timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"tandem serve not healthy in {timeout}s")

    def stop(self) -> None:
        pids = os.environ.get("TANDEM_CONFORMANCE_PIDS")
        if pids:
            try:
                os.remove(os.path.join(pids, str(self.proc.pid)))
            except FileNotFoundError:
                pass
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass
