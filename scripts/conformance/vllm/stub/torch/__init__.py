"""Placeholder `torch` for vLLM's test files (see ../vllm/__init__.py).

Some HTTP test files import torch at the top for unit tests or prompt
embeddings; importing works, using it raises VllmInternal. torch.iinfo of
torch.long is real (the seed range some HTTP tests check).
"""

import vllm as _stub  # installs the finder for torch.* too

# torch.iinfo(torch.long): the seed range the HTTP tests check against.
long = int64 = "int64"


class iinfo:  # noqa: N801
    def __init__(self, dtype):
        if dtype != "int64":
            raise _stub.VllmInternal(f"test needs torch: iinfo({dtype!r})")
        self.bits, self.min, self.max = 64, -(2**63), 2**63 - 1


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _stub._placeholder(f"torch.{name}")
