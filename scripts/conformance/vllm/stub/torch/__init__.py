"""Placeholder `torch` for vLLM's test files (see ../vllm/__init__.py).

Some HTTP test files import torch at the top for unit tests or prompt
embeddings; importing works, using it raises VllmInternal.
"""

import vllm as _stub  # installs the finder for torch.* too


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _stub._placeholder(f"torch.{name}")
