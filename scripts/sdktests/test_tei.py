#!/usr/bin/env python3
"""huggingface_hub's InferenceClient against a Tandem server, as against
Hugging Face's text-embeddings-inference (TEI).

Usage: test_tei.py BASE_URL

InferenceClient(base_url).feature_extraction posts TEI's embed request to
the server's root: one text or several give one vector each, L2-normalized
unless normalize=False (then the same direction), different texts
different vectors; truncate=True embeds a text longer than the context
(cut from the end, or the start with truncation_direction "left"), and
without it the server's 422 comes back as the client's HTTP error.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_rerank_test.go runs it.
"""

import sys

import numpy as np
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError
from harness import finish, run


def main():
    base = sys.argv[1]
    client = InferenceClient(base_url=base, timeout=120)

    def one():
        v = client.feature_extraction("bakers bake at dawn")
        assert v.ndim == 2 and v.shape[0] == 1 and v.shape[1] > 1, v.shape
        assert abs(np.linalg.norm(v[0]) - 1) < 1e-4, np.linalg.norm(v[0])

    def several():
        v = client.feature_extraction(["bakers bake at dawn", "a wide river"])
        assert v.shape[0] == 2 and not np.allclose(v[0], v[1]), v.shape
        alone = client.feature_extraction("a wide river")
        assert np.allclose(alone[0], v[1], atol=1e-5), "batched and alone differ"

    def raw():
        n = client.feature_extraction("bakers bake at dawn", normalize=False)[0]
        u = client.feature_extraction("bakers bake at dawn")[0]
        assert abs(np.linalg.norm(n) - 1) > 1e-3, "normalize=False normalized"
        assert np.allclose(n / np.linalg.norm(n), u, atol=1e-4), "not the same direction"

    long_text = "bakers light their ovens before sunrise " * 200

    def truncated():
        end = client.feature_extraction(long_text, truncate=True)[0]
        start = client.feature_extraction(long_text, truncate=True, truncation_direction="left")[0]
        assert end.shape == start.shape and not np.allclose(end, start), "left and right cut the same tokens"

    def too_long():
        try:
            client.feature_extraction(long_text)
        except HfHubHTTPError as e:
            assert e.response.status_code == 422, e.response.status_code
            assert e.response.json()["error_type"] == "Validation", e.response.text
        else:
            raise AssertionError("a text over the context was embedded without truncate")

    run("feature_extraction: one text", one)
    run("feature_extraction: several texts", several)
    run("feature_extraction: normalize=False", raw)
    run("feature_extraction: truncate, both directions", truncated)
    run("feature_extraction: too long is TEI's 422", too_long)
    finish()


if __name__ == "__main__":
    main()
