"""Tandem against real vLLM over vLLM's engine-core protocol (issue 21).

Both directions, each with real processes and real ZeroMQ:

- Tandem's frontend (`tandem frontend --engine-protocol vllm`) in front of a
  real `vllm serve --headless` engine core;
- vLLM's own API server (`vllm serve --data-parallel-size-local 0`) in front
  of a Tandem engine core (`tandem engine --protocol vllm`).

vLLM is PyPI's CPU build (scripts/conformance/vllmengines/setup.sh). No
model from the Hugging Face hub can be fetched here, so vLLM's side runs a
tiny Llama with SmolLM2's vocabulary and tokenizer (converted from the
served GGUF by transformers) and random weights (`--load-format dummy`):
its text is noise, but token counts, finish reasons, stop tokens, cached
prefixes and sessions are exact. Tandem's engine runs the real GGUF, so
vLLM's frontend must return exactly the text `tandem serve` gives.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[3]
TANDEM = os.environ.get("TANDEM_BIN", str(ROOT / "bin" / "tandem"))
MODEL = os.environ.get("TANDEM_MODEL", str(ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
WHY = ROOT / ".cache" / "vllm-venv.unavailable"

try:
    import vllm  # noqa: F401
    from vllm.v1.engine import EngineCoreRequest
except Exception as e:  # the suite runs on a machine where vLLM cannot install
    reason = WHY.read_text().strip() if WHY.exists() else f"vLLM does not import: {e}"
    pytest.skip(f"real vLLM not available: {reason}", allow_module_level=True)

VLLM = str(Path(sys.executable).with_name("vllm"))
LOGS = Path(os.environ.get("VLLM_ENGINES_LOGS", ROOT / ".cache" / "conformance" / "vllm-engines-logs"))  # not under results/: report.py reads every .log there as a test file


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A process in its own group, its output in a log file, ended with SIGTERM."""

    def __init__(self, name: str, argv: list[str], env: dict | None = None):
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log = LOGS / f"{name}.log"
        self.name = name
        self.p = subprocess.Popen(argv, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                  env={**os.environ, **(env or {})}, start_new_session=True)

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])

    def alive(self) -> bool:
        return self.p.poll() is None

    def stop(self):
        if self.alive():
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()


def wait_http(url: str, procs: list[Proc], timeout: float = 600):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in procs:
            if not p.alive():
                pytest.fail(f"{p.name} exited with {p.p.returncode}:\n{p.tail()}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(1)
    pytest.fail(f"{url} not ready in {timeout:.0f} s:\n" + "\n".join(p.tail() for p in procs))


VLLM_ENV = {
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_LOGGING_LEVEL": "INFO",
}


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A Hugging Face model directory: a 2-layer Llama config with SmolLM2's
    vocabulary, and SmolLM2's tokenizer and chat template from the GGUF."""
    from transformers import AutoTokenizer

    d = tmp_path_factory.mktemp("tiny-llama")
    tok = AutoTokenizer.from_pretrained(str(Path(MODEL).parent), gguf_file=Path(MODEL).name)
    tok.save_pretrained(d)
    vocab = 49152
    assert len(tok) <= vocab, len(tok)
    (d / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": vocab, "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 64,  # vLLM's CPU attention kernels take 32, 64, 80, 96, 112, 128, … "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
        "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
    }))
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": tok.eos_token_id}))
    return d


def test_installed_vllm_has_the_pinned_request_layout():
    """wire/vllm is pinned to vLLM 0.33.0's EngineCoreRequest: session_id at
    index 20, kv_hints at 21. The installed vLLM must agree, or the rest of
    this file tests nothing meaningful."""
    fields = EngineCoreRequest.__struct_fields__
    assert fields[20] == "session_id", fields
    assert fields[21] == "kv_hints", fields
    assert fields[:9] == ("request_id", "prompt_token_ids", "mm_features", "sampling_params", "pooling_params",
                          "arrival_time", "lora_request", "cache_salt", "data_parallel_rank"), fields


def chat(base: str, messages, **kw) -> dict:
    r = requests.post(f"{base}/v1/chat/completions", json={"model": kw.pop("model", "tiny"), "messages": messages, **kw}, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()


def stream_chat(base: str, messages, max_tokens: int) -> list[dict]:
    """A streamed chat with usage, ignore_eos: its chunks."""
    with requests.post(f"{base}/v1/chat/completions", stream=True, timeout=300, json={
            "model": "tiny", "messages": messages, "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}) as s:
        assert s.status_code == 200, s.text
        return [json.loads(l[6:]) for l in s.iter_lines(decode_unicode=True) if l.startswith("data: {")]


def check_top_logprobs(base: str, messages, k: int):
    """3 tokens with k top logprobs each, through the vLLM side's ndarrays."""
    r = chat(base, messages, max_tokens=3, ignore_eos=True, logprobs=True, top_logprobs=k, temperature=0)
    content = r["choices"][0]["logprobs"]["content"]
    assert len(content) == 3 and all(len(c["top_logprobs"]) == k for c in content), r


def test_tandem_frontend_drives_vllm_headless_engine(tiny_model):
    rpc, http = free_port(), free_port()
    engine = Proc("vllm-headless-engine", [
        VLLM, "serve", str(tiny_model), "--headless", "--data-parallel-size", "1",
        "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc),
        "--load-format", "dummy", "--skip-tokenizer-init", "--max-model-len", "1024",
        "--block-size", "32", "--dtype", "float32", "--max-num-seqs", "8"], VLLM_ENV)
    front = Proc("tandem-frontend", [
        TANDEM, "frontend", "--engine-protocol", "vllm", "--model", MODEL, "--served-model-name", "tiny",
        "--data-parallel-size", "1", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--host", "127.0.0.1", "--port", str(http)])
    base = f"http://127.0.0.1:{http}"
    try:
        wait_http(f"{base}/health", [engine, front])
        user = [{"role": "user", "content": "Tell me about the sea."}]

        # Length: exactly max_tokens tokens, counted by vLLM's engine.
        r = chat(base, user, max_tokens=7, ignore_eos=True, temperature=0)
        assert r["choices"][0]["finish_reason"] == "length", r
        assert r["usage"]["completion_tokens"] == 7, r

        # Stop token: a logit bias makes the engine pick token 1000, a stop
        # token id, so it stops after one token with finish_reason stop.
        r = chat(base, user, max_tokens=20, logit_bias={"1000": 100}, stop_token_ids=[1000], temperature=0)
        assert r["choices"][0]["finish_reason"] == "stop", r
        assert r["usage"]["completion_tokens"] == 1, r

        # Logprobs come back as vLLM's ndarrays, through Tandem's translation.
        check_top_logprobs(base, user, 2)

        # Streaming with usage.
        events = stream_chat(base, user, 5)
        assert [e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1] == "length"
        assert events[-1]["usage"]["completion_tokens"] == 5

        # A session's second turn finds its prefix in vLLM's prefix cache,
        # and Tandem knows which engine holds it.
        long_user = [{"role": "user", "content": "Describe the sea in many words. " * 12}]
        sid = f"vllm-real-{time.time_ns()}"
        chat(base, long_user, max_tokens=4, ignore_eos=True, session_id=sid)
        r = chat(base, long_user, max_tokens=4, ignore_eos=True, session_id=sid)
        cached = r["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert cached >= 64 and cached % 32 == 0, r["usage"]  # vLLM's CPU attention: blocks of 32
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=10)
        assert s.status_code == 200 and s.json()["num_requests"] == 2, s.text
    finally:
        front.stop()
        engine.stop()


def test_vllm_frontend_drives_tandem_engine(tiny_model):
    rpc, http, ref_http = free_port(), free_port(), free_port()
    engine = Proc("tandem-engine", [
        TANDEM, "engine", MODEL, "--protocol", "vllm", "--data-parallel-size", "1",
        "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc), "--max-model-len", "1024"])
    front = Proc("vllm-api-server", [
        VLLM, "serve", str(tiny_model), "--served-model-name", "tiny", "--data-parallel-size", "1",
        "--data-parallel-size-local", "0", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--host", "127.0.0.1", "--port", str(http),
        "--max-model-len", "1024", "--dtype", "float32"],
        {**VLLM_ENV, "VLLM_SERVER_DEV_MODE": "1"})  # serves /reset_prefix_cache
    ref = Proc("tandem-serve", [TANDEM, "serve", MODEL, "--served-model-name", "tiny", "--host", "127.0.0.1",
                                "--port", str(ref_http), "--max-model-len", "1024"])
    base, ref_base = f"http://127.0.0.1:{http}", f"http://127.0.0.1:{ref_http}"
    try:
        wait_http(f"{base}/health", [engine, front])
        wait_http(f"{ref_base}/health", [ref])
        user = [{"role": "user", "content": "What is the capital of France?"}]
        # vLLM's frontend tokenizes with SmolLM2's tokenizer and template, the
        # Tandem engine computes: greedy text equals tandem serve's own.
        got = chat(base, user, max_tokens=16, temperature=0)
        want = chat(ref_base, user, max_tokens=16, temperature=0)
        assert got["choices"][0]["message"]["content"] == want["choices"][0]["message"]["content"], (got, want)
        assert got["usage"]["completion_tokens"] == want["usage"]["completion_tokens"]
        assert got["usage"]["prompt_tokens"] == want["usage"]["prompt_tokens"]

        r = chat(base, user, max_tokens=6, ignore_eos=True, temperature=0)
        assert r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 6, r

        # Logprobs and streaming through vLLM's own output processor.
        check_top_logprobs(base, user, 3)
        assert stream_chat(base, user, 5)[-1]["usage"]["completion_tokens"] == 5

        # Several requests at once.
        import concurrent.futures as cf
        with cf.ThreadPoolExecutor(8) as ex:
            outs = list(ex.map(lambda i: chat(base, [{"role": "user", "content": f"Count to {i}."}],
                                              max_tokens=4, ignore_eos=True), range(8)))
        assert all(o["usage"]["completion_tokens"] == 4 for o in outs)

        # A utility call vLLM's frontend makes to the engine: the Tandem
        # engine clears its prefix cache (nothing is running now).
        r = requests.post(f"{base}/reset_prefix_cache", timeout=30)
        assert r.status_code == 200, r.text
        # vLLM's own Prometheus metrics count what the Tandem engine did.
        m = requests.get(f"{base}/metrics", timeout=10).text
        gen = [l for l in m.splitlines() if l.startswith("vllm:generation_tokens_total{")]
        assert gen and float(gen[0].rsplit(" ", 1)[1]) == got["usage"]["completion_tokens"] + 6 + 3 + 5 + 8 * 4, gen
        # The engine's cumulative prefix cache counters reach vLLM's as
        # per-step counts: the same question asked four times hits.
        def counter(name):
            lines = [l for l in m.splitlines() if l.startswith(name + "{")]
            assert lines, f"no {name} in vLLM's /metrics"
            return float(lines[0].rsplit(" ", 1)[1])
        queries, hits = counter("vllm:prefix_cache_queries_total"), counter("vllm:prefix_cache_hits_total")
        assert queries >= got["usage"]["prompt_tokens"] * 4 and 0 < hits < queries, (queries, hits)
    finally:
        for p in (front, engine, ref):
            p.stop()


def test_tandem_frontend_routes_sessions_over_two_vllm_ranks(tiny_model):
    """Data parallelism: one `vllm serve --headless` process with two DP
    ranks (dense model: no DP coordinator), each a Tandem engine to the
    router. Every session's turns stay on one rank, whose prefix cache
    serves the second turn, and the sessions spread over both ranks."""
    rpc, http = free_port(), free_port()
    engines = Proc("vllm-headless-dp2", [
        VLLM, "serve", str(tiny_model), "--headless", "--data-parallel-size", "2",
        "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--load-format", "dummy", "--skip-tokenizer-init",
        "--max-model-len", "1024", "--block-size", "32", "--dtype", "float32", "--max-num-seqs", "8"], VLLM_ENV)
    front = Proc("tandem-frontend-dp2", [
        TANDEM, "frontend", "--engine-protocol", "vllm", "--model", MODEL, "--served-model-name", "tiny",
        "--data-parallel-size", "2", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--host", "127.0.0.1", "--port", str(http)])
    base = f"http://127.0.0.1:{http}"
    try:
        wait_http(f"{base}/health", [engines, front])
        # /health answers once one rank is ready; sessions spread only over
        # ranks whose session lists the frontend has loaded.
        deadline = time.time() + 120
        while time.time() < deadline:
            states = [e["state"] for e in requests.get(f"{base}/v1/engines", timeout=10).json()["data"]]
            if states == ["ready", "ready"]:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"both ranks not ready: {states}")
        ranks = {}
        for i in range(8):
            sid = f"dp2-{i}-{time.time_ns()}"
            msgs = [{"role": "user", "content": f"Conversation {i}: tell me about the sea. " * 10}]
            chat(base, msgs, max_tokens=3, ignore_eos=True, session_id=sid)
            r = chat(base, msgs, max_tokens=3, ignore_eos=True, session_id=sid)
            assert r["usage"]["prompt_tokens_details"]["cached_tokens"] >= 64, (i, r["usage"])
            s = requests.get(f"{base}/v1/sessions/{sid}", timeout=10).json()
            assert len(s["engines"]) == 1 and s["num_requests"] == 2, s
            ranks[sid] = s["engine_index"]
        assert set(ranks.values()) == {0, 1}, ranks
    finally:
        front.stop()
        engines.stop()


def write_peft(d: Path, hidden: int, q_out: int, kv_out: int, layers: int, std: float, seed: int) -> Path:
    """A PEFT LoRA directory (adapter_config.json, adapter_model.safetensors):
    q_proj and v_proj of every layer, rank 8, alpha 16, random weights (no
    Hugging Face adapter can be fetched here). Both vLLM and Tandem load it."""
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    tensors = {}
    for layer in range(layers):
        for mod, out in (("q_proj", q_out), ("v_proj", kv_out)):
            name = f"base_model.model.model.layers.{layer}.self_attn.{mod}"
            tensors[f"{name}.lora_A.weight"] = (rng.standard_normal((8, hidden)) / np.sqrt(hidden)).astype(np.float32)
            tensors[f"{name}.lora_B.weight"] = (rng.standard_normal((out, 8)) * std).astype(np.float32)
    d.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(d / "adapter_model.safetensors"))
    (d / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
        "bias": "none", "task_type": "CAUSAL_LM", "base_model_name_or_path": "tiny"}))
    return d


def test_vllm_frontend_applies_lora_on_tandem_engine(tiny_model, tmp_path):
    """vLLM's API server with --enable-lora --lora-modules in front of a
    Tandem engine: vLLM's frontend loads the adapter with the engine's
    add_lora utility and names it in each request's lora_request; the Tandem
    engine applies it, so the answer equals `tandem serve`'s with the same
    module, and differs from the base model's."""
    import gguf

    r = gguf.GGUFReader(MODEL)
    kv = lambda k: int(r.fields[f"llama.{k}"].contents())  # noqa: E731
    hidden, heads, kv_heads = kv("embedding_length"), kv("attention.head_count"), kv("attention.head_count_kv")
    adapter = write_peft(tmp_path / "sql-lora", hidden, hidden, kv_heads * hidden // heads, kv("block_count"), 0.02, 1)
    rpc, http, ref_http = free_port(), free_port(), free_port()
    engine = Proc("tandem-engine-lora", [
        TANDEM, "engine", MODEL, "--protocol", "vllm", "--data-parallel-size", "1",
        "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc), "--max-model-len", "1024"])
    front = Proc("vllm-api-server-lora", [
        VLLM, "serve", str(tiny_model), "--served-model-name", "tiny", "--data-parallel-size", "1",
        "--data-parallel-size-local", "0", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--host", "127.0.0.1", "--port", str(http),
        "--max-model-len", "1024", "--dtype", "float32",
        "--enable-lora", "--lora-modules", f"sql={adapter}", "--max-lora-rank", "8"], VLLM_ENV)
    ref = Proc("tandem-serve-lora", [TANDEM, "serve", MODEL, "--served-model-name", "tiny", "--host", "127.0.0.1",
                                     "--port", str(ref_http), "--max-model-len", "1024", "--lora-modules", f"sql={adapter}"])
    base, ref_base = f"http://127.0.0.1:{http}", f"http://127.0.0.1:{ref_http}"
    try:
        wait_http(f"{base}/health", [engine, front])
        wait_http(f"{ref_base}/health", [ref])
        models = requests.get(f"{base}/v1/models", timeout=10).json()["data"]
        assert [m["id"] for m in models] == ["tiny", "sql"], models
        user = [{"role": "user", "content": "What is the capital of France?"}]
        got = chat(base, user, model="sql", max_tokens=16, temperature=0)
        want = chat(ref_base, user, model="sql", max_tokens=16, temperature=0)
        plain = chat(base, user, max_tokens=16, temperature=0)
        text = lambda r: r["choices"][0]["message"]["content"]  # noqa: E731
        assert text(got) == text(want), (got, want)
        assert text(got) != text(plain), (got, plain)
    finally:
        for p in (front, engine, ref):
            p.stop()


def test_tandem_frontend_applies_lora_on_vllm_engine(tiny_model, tmp_path):
    """Tandem's frontend with --lora-modules in front of a vLLM headless
    engine started with --enable-lora: the request naming the module reaches
    vLLM's engine as its LoRARequest, which loads the PEFT directory and
    applies it (other logprobs than the base model's, the same on a second
    request). vLLM's dummy weights (uniform ±1e-3) give every token the same
    logit whatever an adapter does, so this model has normal random weights
    in a checkpoint of its own."""
    import shutil

    import numpy as np
    from safetensors.numpy import save_file

    model = tmp_path / "tiny-weights"
    shutil.copytree(tiny_model, model)
    cfg = json.loads((model / "config.json").read_text())
    h, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    q, kv = cfg["num_attention_heads"] * cfg["head_dim"], cfg["num_key_value_heads"] * cfg["head_dim"]
    rng = np.random.default_rng(3)
    w = {"model.embed_tokens.weight": rng.standard_normal((v, h)), "model.norm.weight": np.ones(h)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for name, shape in (("self_attn.q_proj", (q, h)), ("self_attn.k_proj", (kv, h)), ("self_attn.v_proj", (kv, h)),
                            ("self_attn.o_proj", (h, q)), ("mlp.gate_proj", (f, h)), ("mlp.up_proj", (f, h)),
                            ("mlp.down_proj", (h, f))):
            w[p + name + ".weight"] = rng.standard_normal(shape) / np.sqrt(shape[1])
        w[p + "input_layernorm.weight"], w[p + "post_attention_layernorm.weight"] = np.ones(h), np.ones(h)
    save_file({k: a.astype(np.float32) for k, a in w.items()}, str(model / "model.safetensors"))
    adapter = write_peft(tmp_path / "tiny-lora", h, q, kv, cfg["num_hidden_layers"], 0.5, 2)
    rpc, http = free_port(), free_port()
    engine = Proc("vllm-headless-engine-lora", [
        VLLM, "serve", str(model), "--headless", "--data-parallel-size", "1",
        "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc),
        "--skip-tokenizer-init", "--max-model-len", "1024",
        "--block-size", "32", "--dtype", "float32", "--max-num-seqs", "8",
        "--enable-lora", "--max-lora-rank", "8"], VLLM_ENV)
    front = Proc("tandem-frontend-lora", [
        TANDEM, "frontend", "--engine-protocol", "vllm", "--model", MODEL, "--served-model-name", "tiny",
        "--data-parallel-size", "1", "--data-parallel-address", "127.0.0.1",
        "--data-parallel-rpc-port", str(rpc), "--host", "127.0.0.1", "--port", str(http),
        "--lora-modules", f"tiny-lora={adapter}"])
    base = f"http://127.0.0.1:{http}"
    try:
        wait_http(f"{base}/health", [engine, front])
        user = [{"role": "user", "content": "Tell me about the sea."}]
        toks = lambda r: r["choices"][0]["message"]["content"]  # noqa: E731
        lp = dict(max_tokens=12, ignore_eos=True, temperature=0, logprobs=True, top_logprobs=3)
        a = chat(base, user, model="tiny-lora", **lp)
        b = chat(base, user, model="tiny-lora", **lp)
        plain = chat(base, user, **lp)
        first = lambda r: [t["logprob"] for t in r["choices"][0]["logprobs"]["content"][0]["top_logprobs"]]  # noqa: E731
        assert a["usage"]["completion_tokens"] == 12, a
        assert toks(a) == toks(b) and first(a) == first(b), (a, b)
        assert first(a) != first(plain), (first(a), first(plain))
    finally:
        front.stop()
        engine.stop()
