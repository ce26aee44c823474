"""Tandem's stand-in for vLLM's tests/utils.py (scripts/conformance).

RemoteOpenAIServer starts `tandem serve` on the default model instead of
`vllm serve`, serving it under the model name the test asks for, so that
requests naming e.g. "Qwen/Qwen3-0.6B" reach it. vLLM serve flags that
Tandem has under the same name are passed on; the others are dropped (and
printed); VLLM_API_KEY in the test's environment becomes TANDEM_API_KEY.
Imports nothing from vLLM.
"""

import os
import sys
from pathlib import Path

import openai
import pytest

sys.path.insert(0, os.environ["TANDEM_CONFORMANCE_DIR"])
from tandem import Server  # noqa: E402

VLLM_PATH = Path(__file__).parent.parent
ROCM_EXTRA_ARGS: list[str] = []
multi_gpu_only = pytest.mark.skip(reason="needs several GPUs (vLLM multi_gpu_only)")
requires_fp8 = pytest.mark.skip(reason="needs an FP8 GPU (vLLM requires_fp8)")


def _flag(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return str(args[i + 1])
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class RemoteOpenAIServer:
    DUMMY_API_KEY = "token-abc123"

    def __init__(self, model: str, vllm_serve_args: list[str], *, env_dict=None,
                 seed: int | None = 0, auto_port: bool = True, max_wait_seconds=None,
                 override_hf_configs=None, **_):
        args = [str(a) for a in vllm_serve_args]
        port = _flag(args, "--port") or _flag(args, "-p")
        host = _flag(args, "--host") or "127.0.0.1"
        self.root_path = _flag(args, "--root-path") or ""
        self.show_hidden_metrics = _flag(args, "--show-hidden-metrics-for-version") is not None
        self.uds = None
        env = dict(env_dict or {})
        if "VLLM_API_KEY" in env:  # vLLM's environment name for --api-key; Tandem's is TANDEM_API_KEY
            env["TANDEM_API_KEY"] = env["VLLM_API_KEY"]
        self._server = Server(model, args, port=int(port) if port else None, host=host, env=env)
        self.host, self.port = self._server.host, self._server.port
        self.proc = self._server.proc
        key = _flag(args, "--api-key")
        self._server.wait_healthy(timeout=max_wait_seconds or 180,
                                  headers={"Authorization": f"Bearer {key}"} if key else None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._server.stop()

    @property
    def url_root(self) -> str:
        return self._server.url_root

    def url_for(self, *parts: str) -> str:
        path = "/".join(part.strip("/") for part in parts if part)
        return f"{self.url_root}/{path}"

    def get_client(self, **kwargs):
        kwargs.setdefault("timeout", 600)
        return openai.OpenAI(base_url=self.url_for("v1"), api_key=self.DUMMY_API_KEY, max_retries=0, **kwargs)

    def get_async_client(self, **kwargs):
        kwargs.setdefault("timeout", 600)
        return openai.AsyncOpenAI(base_url=self.url_for("v1"), api_key=self.DUMMY_API_KEY, max_retries=0, **kwargs)


RemoteOpenAIServerCustom = RemoteOpenAIServer
