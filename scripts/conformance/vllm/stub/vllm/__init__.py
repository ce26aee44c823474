"""A stand-in `vllm` package for running vLLM's HTTP tests against Tandem.

vLLM's test files import vLLM's Python internals at the top (protocol
classes, ModelConfig, get_tokenizer, current_platform), mostly for the unit
tests that share a file with the HTTP ones. This package lets such a file
import; it holds none of vLLM's code. What the HTTP tests use is given a
real meaning against the model Tandem serves:

- vllm.tokenizers.get_tokenizer(...) → the HF tokenizer built from the
  served GGUF (transformers' own GGUF converter), whatever name is asked;
- vllm.config.ModelConfig(...).get_vocab_size() → that tokenizer's size;
- vllm.platforms.current_platform → no GPU, no ROCm;
- vllm.transformers_utils.repo_utils.hf_api() → a LoRA download is a PEFT
  adapter directory made here for the served model (random weights: no
  Hugging Face adapter can be fetched), which Tandem serves as vLLM would;
- download_weights_from_hf(name) → name (served as the model name).

`torch` (imported at the top of some of those files) is a placeholder
package too (stub/torch). Any other name is a placeholder: importing it
works, using it in a test raises VllmInternal (the test then fails, naming
the vLLM internal it needed; out_of_scope.txt says which such tests are
out of scope).
"""

import importlib.abc
import importlib.machinery
import os
import sys
import types


class VllmInternal(RuntimeError):
    pass


# While pytest imports the test files (collection), calling a placeholder
# gives another placeholder, so module-level constants built from vLLM's
# classes import; once tests run (plugin.py sets STRICT), it raises.
STRICT = False


class _Meta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{cls.__qualname__}.{name}")

    def __call__(cls, *a, **k):
        if not STRICT:
            return _placeholder(f"{cls.__qualname__}()")
        raise VllmInternal(f"test needs vLLM's Python internals: {cls.__qualname__}")

    def __iter__(cls):
        raise VllmInternal(f"test needs vLLM's Python internals: {cls.__qualname__}")

    def __getitem__(cls, k):
        return cls

    def __or__(cls, other):
        return cls

    __ror__ = __or__


def _placeholder(name: str):
    return _Meta(name.rsplit(".", 1)[-1], (), {"__qualname__": name, "__module__": "vllm"})


_GGUF_TOKENIZER = None


def _tokenizer():
    global _GGUF_TOKENIZER
    if _GGUF_TOKENIZER is None:
        import gguf
        from transformers import PreTrainedTokenizerFast
        from transformers.integrations.gguf.gguf_tokenizer_mapping import (
            _SPECIAL_TOKENS, GGUF_TOKENIZER_MAPPING, convert_gguf_tokenizer)

        reader = gguf.GGUFReader(os.environ["TANDEM_MODEL"])
        md = {}
        for key, field in reader.fields.items():
            if key.startswith(("tokenizer.", "general.architecture")):
                md[key] = field.contents()
        tok = {n: md[f"tokenizer.{k}"] for k, n in GGUF_TOKENIZER_MAPPING["tokenizer"].items() if f"tokenizer.{k}" in md}
        cfg = {n: md[f"tokenizer.{k}"] for k, n in GGUF_TOKENIZER_MAPPING["tokenizer_config"].items() if f"tokenizer.{k}" in md}
        for name, key in _SPECIAL_TOKENS.items():
            i = md.get(f"tokenizer.ggml.{key}")
            if i is not None:
                cfg[name] = tok["tokens"][i]
        backend, _ = convert_gguf_tokenizer(md["general.architecture"], tok)
        _GGUF_TOKENIZER = PreTrainedTokenizerFast(tokenizer_object=backend, **cfg)
    return _GGUF_TOKENIZER


def get_tokenizer(*args, **kwargs):
    return _tokenizer()


class ModelConfig:
    def __init__(self, *args, **kwargs):
        pass

    def get_vocab_size(self) -> int:
        return len(_tokenizer())


class _HubApi:
    """hf_api(): the test files' LoRA downloads. No Hugging Face adapter can
    be fetched here, so each repository is a PEFT LoRA directory written for
    the served model (adapter_config.json and adapter_model.safetensors:
    q_proj and v_proj of every layer, rank 8, alpha 16, random weights small
    enough to leave the model's text readable), the same for the same
    repo_id; a server fixture naming it serves it with --lora-modules."""

    def snapshot_download(self, repo_id: str = "", **kwargs) -> str:
        root = os.environ.get("TANDEM_CONFORMANCE_LORA_DIR") or os.path.join(
            os.environ.get("TMPDIR", "/tmp"), "tandem-conformance-lora")
        path = os.path.join(root, repo_id.replace("/", "--"))
        if not os.path.exists(os.path.join(path, "adapter_model.safetensors")):
            _write_peft(path, repo_id)
        return path


def _write_peft(path: str, repo_id: str) -> None:
    import json
    import zlib

    import gguf
    import numpy as np
    from safetensors.numpy import save_file

    reader = gguf.GGUFReader(os.environ["TANDEM_MODEL"])
    arch = reader.fields["general.architecture"].contents()

    def kv(key):
        return int(reader.fields[f"{arch}.{key}"].contents())

    dim, layers, heads = kv("embedding_length"), kv("block_count"), kv("attention.head_count")
    kv_heads = kv("attention.head_count_kv") if f"{arch}.attention.head_count_kv" in reader.fields else heads
    head_dim = dim // heads
    rank = 8
    rng = np.random.default_rng(zlib.crc32(repo_id.encode()))
    tensors = {}
    for layer in range(layers):
        for mod, out in (("q_proj", heads * head_dim), ("v_proj", kv_heads * head_dim)):
            name = f"base_model.model.model.layers.{layer}.self_attn.{mod}"
            tensors[f"{name}.lora_A.weight"] = (rng.standard_normal((rank, dim)) / np.sqrt(dim)).astype(np.float32)
            tensors[f"{name}.lora_B.weight"] = (rng.standard_normal((out, rank)) * 0.005).astype(np.float32)
    os.makedirs(path, exist_ok=True)
    save_file(tensors, os.path.join(path, "adapter_model.safetensors"))
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
              "bias": "none", "base_model_name_or_path": repo_id, "task_type": "CAUSAL_LM"}
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(config, f)


def download_weights_from_hf(model_name_or_path: str, *args, **kwargs) -> str:
    """A model "directory" that is only a name: the shim serves it as the
    served model name of Tandem's model."""
    return model_name_or_path


class _Platform:
    device_type = "cpu"
    device_name = "cpu"

    def __getattr__(self, name):
        if name.startswith("is_"):
            return lambda *a, **k: False
        raise VllmInternal(f"test needs vLLM's Python internals: current_platform.{name}")

    def device_count(self) -> int:
        return 0


_REAL = {
    "vllm.tokenizers": {"get_tokenizer": get_tokenizer},
    "vllm.transformers_utils.tokenizer": {"get_tokenizer": get_tokenizer},
    "vllm.config": {"ModelConfig": ModelConfig},
    "vllm.transformers_utils.repo_utils": {"hf_api": _HubApi},
    "vllm.model_executor.model_loader.weight_utils": {"download_weights_from_hf": download_weights_from_hf},
    "vllm.platforms": {"current_platform": _Platform()},
}


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.startswith(("vllm.", "torch.")):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _Module(spec.name)
        m.__path__ = []
        m.__dict__.update(_REAL.get(spec.name, {}))
        return m

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _placeholder(f"vllm.{name}")
