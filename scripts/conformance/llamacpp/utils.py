"""Tandem's stand-in for llama.cpp's tools/server/tests/utils.py.

Everything of llama.cpp's utils.py (renamed llama_utils.py in the run tree:
request helpers, presets, match_regex) is kept; ServerProcess.start runs
`tandem serve` on the default model instead of llama-server, mapping the
preset's options onto Tandem's flags. Presets' models (stories260K,
bert-bge-small, …) are not downloaded: every preset serves Tandem's model
under the preset's alias. Tandem serves llama-server's routes
(/completion, /props, /slots, the OpenAI routes without /v1) itself.
"""

import functools
import hashlib
import http.server
import json
import os
import sys
import tempfile
import threading

sys.path.insert(0, os.environ["TANDEM_CONFORMANCE_DIR"])

import llama_utils  # noqa: E402
from llama_utils import *  # noqa: E402,F401,F403
import tandem  # noqa: E402
from tandem import Server  # noqa: E402

# llama.cpp's load_all() makes the directory tests write files into (presets).
os.makedirs(llama_utils.TMP_DIR, exist_ok=True)

# The models the router tests name, as llama.cpp's cache would hold them
# after load_all(): Hugging Face hub cache entries (repo, file), each a
# link to Tandem's one local model, so nothing is downloaded from the
# internet (POST /models fetches from the local fake hub below).
ROUTER_CACHE = [
    ("ggml-org/tinygemma3-GGUF", "tinygemma3-Q8_0.gguf"),
    ("ggml-org/test-model-stories260K", "stories260K-F32.gguf"),
    ("ggml-org/test-model-stories260K-infill", "stories260K-infill-F32.gguf"),
]


@functools.cache
def _router_cache() -> str:
    """A hub cache directory (models--OWNER--REPO/snapshots/REV/FILE) for --models-cache."""
    root = tempfile.mkdtemp(prefix="tandem-router-cache-")
    for repo, file in ROUTER_CACHE:
        snap = os.path.join(root, "models--" + repo.replace("/", "--"), "snapshots", "tandem")
        os.makedirs(snap, exist_ok=True)
        os.symlink(os.path.abspath(tandem.MODEL), os.path.join(snap, file))
    return root


# The repositories the router's download tests fetch (POST /models, and a
# preset model's load when the cache lacks it), as a local fake of the
# Hugging Face hub serves them: (repo, file), each file Tandem's local
# model under that name.
HUB_REPOS = [
    ("ggml-org/test-model-router-download", "test-model-router-download-F16.gguf"),
    ("ggml-org/tinygemma3-GGUF", "tinygemma3-Q8_0.gguf"),
    ("ggml-org/test-model-stories260K", "stories260K-F32.gguf"),
]
# The preset repositories (a preset.ini at the root) the router tests
# start from with -hf. The real ggml-org/test-preset-ci is on the hub,
# which this machine cannot reach: this preset.ini is Tandem's, written to
# what test_router_remote_preset asserts (the two section names), each
# model a repository the router tests name (cached as ROUTER_CACHE, and
# served by the fake hub).
HUB_PRESETS = {
    "ggml-org/test-preset-ci": (
        "; Tandem's stand-in for ggml-org/test-preset-ci's preset.ini (the hub is not reachable here)\n"
        "[tinygemma3-preset]\n"
        "hf = ggml-org/tinygemma3-GGUF:Q8_0\n"
        "\n"
        "[stories260K-test]\n"
        "hf-repo = ggml-org/test-model-stories260K\n"
    ),
}
HUB_COMMIT = "7a" * 20


class _HubHandler(http.server.BaseHTTPRequestHandler):
    """The hub endpoints Tandem's downloads call (frontend/hfhub), in the hub's JSON shapes:
    GET /api/models/REPO/refs, GET /api/models/REPO/tree/COMMIT?recursive=true and
    GET /REPO/resolve/COMMIT/PATH (a Range from an offset honoured)."""

    # repo -> {path in the repo: a local file (a GGUF, listed as an LFS file) or the bytes of a git file}
    files: dict[str, dict[str, str | bytes]] = {}
    sha256: dict[str, str] = {}  # local file -> its sha256, the LFS oid

    def log_message(self, *args) -> None:
        pass

    def _json(self, status: int, v) -> None:
        body = json.dumps(v).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _entry(self, name: str, src: str | bytes) -> dict:
        if isinstance(src, bytes):
            oid = hashlib.sha1(b"blob %d\x00" % len(src) + src).hexdigest()  # git's blob id
            return {"type": "file", "oid": oid, "size": len(src), "path": name}
        size = os.path.getsize(src)
        oid = self.sha256.setdefault(src, _sha256(src))
        return {"type": "file", "oid": hashlib.sha1(oid.encode()).hexdigest(), "size": size,
                "path": name, "lfs": {"oid": oid, "size": size, "pointerSize": 134}}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        for repo, files in self.files.items():
            if path == f"/api/models/{repo}/refs":
                return self._json(200, {"branches": [{"name": "main", "ref": "refs/heads/main",
                                                      "targetCommit": HUB_COMMIT}], "converts": [], "tags": []})
            if path == f"/api/models/{repo}/tree/{HUB_COMMIT}":
                return self._json(200, [self._entry(name, src) for name, src in files.items()])
            for name, src in files.items():
                if path == f"/{repo}/resolve/{HUB_COMMIT}/{name}":
                    return self._file(src)
        self._json(404, {"error": "Repository not found"})

    def _file(self, src: str | bytes) -> None:
        size = len(src) if isinstance(src, bytes) else os.path.getsize(src)
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
        if start >= size > 0:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        self.send_header("Content-Length", str(size - start))
        self.end_headers()
        if isinstance(src, bytes):
            self.wfile.write(src[start:])
            return
        with open(src, "rb") as f:
            f.seek(start)
            while chunk := f.read(1 << 20):
                self.wfile.write(chunk)


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@functools.cache
def _fake_hub() -> str:
    """Starts the fake hub (once per pytest) and returns its URL, for MODEL_ENDPOINT."""
    model = os.path.abspath(tandem.MODEL)
    files: dict[str, dict[str, str | bytes]] = {repo: {name: model} for repo, name in HUB_REPOS}
    for repo, ini in HUB_PRESETS.items():
        files[repo] = {"preset.ini": ini.encode(), "README.md": b"# a preset repository\n"}
    _HubHandler.files = files
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HubHandler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{srv.server_address[1]}/"


def _router_args(self) -> list[str] | None:
    """llama-server's router mode (no model given, or -hf of a preset repository): serve's
    router flags, else None. Another model_hf_repo is a single model (Tandem serves its own)."""
    preset_repo = self.model_hf_repo in HUB_PRESETS
    if self.model_file or self.model_url or (self.model_hf_repo and not preset_repo):
        return None
    args = ["--models-cache", _router_cache(), "--models-debug-delay", "2s"]  # LLAMA_SERVER_DEBUG_FAKE_TIMING
    if preset_repo:
        args += ["--hf-repo", self.model_hf_repo]  # its preset.ini comes from the fake hub
    if self.models_dir:
        args += ["--models-dir", self.models_dir]
    if self.models_preset:
        args += ["--models-preset", self.models_preset]
    if self.models_max is not None:
        args += ["--models-max", str(self.models_max)]
    if self.no_models_autoload:
        args += ["--no-models-autoload"]
    return args


def _template_file(name: str | None) -> str | None:
    """llama.cpp's --chat-template NAME as a file of its models/templates/."""
    if not name:
        return None
    src = os.environ.get("TANDEM_LLAMA_CPP_SRC", "")
    for cand in (name, os.path.join(src, "models", "templates", name + ".jinja")):
        if os.path.isfile(cand):
            return cand
    return None


def _start(self, timeout_seconds: int = llama_utils.DEFAULT_HTTP_TIMEOUT) -> None:
    args: list[str] = []
    if self.n_ctx:
        per_slot = self.n_ctx // self.n_slots if self.n_slots and not self.kv_unified else self.n_ctx
        args += ["--max-model-len", str(per_slot)]
    if self.n_slots:
        args += ["--max-num-seqs", str(self.n_slots)]
    if self.n_batch:
        args += ["--max-num-batched-tokens", str(max(self.n_batch, 32))]
    if self.api_key:
        args += ["--api-key", self.api_key]
    router = _router_args(self)
    if router is None:
        # llama-server answers whatever model a request names, under its
        # aliases (the first in sorted order is the id); --reasoning sets the
        # template's enable_thinking.
        args += ["--accept-any-model", "--alias", self.model_alias or "tinyllama-2"]
    else:
        args += router[2:]  # the children get the rest of the flags
    args += ["--prefill-assistant"]
    if self.model_tags:
        args += ["--tags", self.model_tags]
    if self.debug:
        args += ["--verbose"]
    if getattr(self, "cors_origins", None):
        args += ["--cors-origins", self.cors_origins]
    if self.reasoning is not None:
        args += ["--reasoning", self.reasoning]
    if self.seed is not None and self.seed >= 0:
        args += ["--seed", str(self.seed)]
    if not self.server_slots:
        args += ["--no-slots"]
    if getattr(self, "no_ui", False):
        args += ["--disable-web-ui"]
    if getattr(self, "ui_mcp_proxy", False):
        args += ["--webui-mcp-proxy"]
    if getattr(self, "server_tools", None):
        args += ["--tools", self.server_tools]
    if getattr(self, "server_tools_runtime", None):
        args += ["--tools-runtime", self.server_tools_runtime]
    if getattr(self, "mcp_servers_config", None):
        args += ["--mcp-servers-config", self.mcp_servers_config]
    if getattr(self, "mcp_servers_json", None):
        args += ["--mcp-servers-json", self.mcp_servers_json]
    if self.enable_ctx_shift:
        args += ["--context-shift"]
    if getattr(self, "slot_save_path", None):
        args += ["--slot-save-path", self.slot_save_path]
    # Speculative decoding: a draft model (test_speculative's stories15M,
    # "downloaded" by download_file below) is Tandem's model drafting for itself.
    if self.model_draft:
        args += ["--model-draft", self.model_draft]
    if self.spec_type:
        args += ["--spec-type", self.spec_type]
    if self.spec_draft_n_max:
        args += ["--spec-draft-n-max", str(self.spec_draft_n_max)]
    if self.spec_draft_n_min:
        args += ["--spec-draft-n-min", str(self.spec_draft_n_min)]
    if self.spec_synth_rates is not None:
        args += ["--spec-synth-rates", ",".join(str(r) for r in self.spec_synth_rates)]
    if getattr(self, "sleep_idle_seconds", None) is not None and self.sleep_idle_seconds > 0:
        args += ["--sleep-idle-seconds", str(self.sleep_idle_seconds)]
    template = _template_file(self.chat_template_file) or _template_file(self.chat_template)
    if template:
        args += ["--chat-template", template]
    elif self.chat_template:
        args += ["--chat-template", self.chat_template]  # a built-in name
    elif self.chat_template_file:
        print(f"[tandem] llama.cpp chat template {self.chat_template_file!r} not found; model's own used")
    if getattr(self, "server_embeddings", False):
        args += ["--embeddings"]  # accepted and changes nothing: Tandem always embeds
    if getattr(self, "pooling", None):
        args += ["--pooling", self.pooling]  # none and rank are refused at start, with the reason
    ignored = {k: getattr(self, k) for k in ("server_reranking", "lora_files", "spec_synth_len",
                                             "n_predict", "temperature", "reasoning_format",
                                             "mmproj_url")
               if getattr(self, k, None)}
    if ignored:
        print(f"[tandem] llama-server options with no Tandem flag, ignored: {ignored}")
    env = None
    if getattr(self, "gcp_compat", False):  # Vertex AI's custom-container variables, as llama.cpp's utils sets them
        env = {"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(self.server_port)}
    model = tandem.MODEL
    if router is not None:  # no model: the router's first source flag stands in its place
        # POST /models downloads from the local fake hub (run.sh's HF_HUB_OFFLINE is for the
        # tests' own downloads: nothing here leaves the machine)
        env = {**(env or {}), "MODEL_ENDPOINT": _fake_hub(), "HF_HUB_OFFLINE": "", "LLAMA_ARG_OFFLINE": ""}
        tandem.MODEL = "--models-cache=" + router[1]
    try:
        self._tandem = Server("", args, port=self.server_port, host=self.server_host, env=env)
    finally:
        tandem.MODEL = model
    self.process = self._tandem.proc
    llama_utils.server_instances.add(self)
    self._tandem.wait_healthy(timeout=max(timeout_seconds, 120),
                              headers={"Authorization": f"Bearer {self.api_key}"} if self.api_key else None)
    self.ready = True


def _stop(self) -> None:
    llama_utils.server_instances.discard(self)
    if getattr(self, "_tandem", None):
        self._tandem.stop()
        self._tandem = None
    self.process = None


def download_file(url: str, output_file_path: str | None = None) -> str:
    """llama.cpp's download_file, without the internet: a GGUF URL (a draft
    model) stands for Tandem's own model."""
    if url.endswith(".gguf"):
        print(f"[tandem] {url} not downloaded: Tandem's model stands in")
        return os.path.abspath(tandem.MODEL)
    return llama_utils.download_file(url, output_file_path)


llama_utils.ServerProcess.start = _start
llama_utils.ServerProcess.stop = _stop
llama_utils.ServerPreset.load_all = staticmethod(lambda: None)
