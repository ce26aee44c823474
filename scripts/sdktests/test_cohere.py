#!/usr/bin/env python3
"""Cohere's Python SDK against a Tandem server: rerank and embed.

Usage: test_cohere.py BASE_URL MODEL

cohere.Client (v1) and cohere.ClientV2 rerank documents (top_n, the
documents echoed or not, best first, each index once) and agree with
each other and with the server's own /score; Client.embed answers v1's
plain floats; ClientV2.embed, with the input_type the SDK requires,
answers every embedding type it decodes (float, base64, binary,
ubinary), each consistent with the floats, plus output_dimension and
truncation by max_tokens; what the server refuses comes back as the
SDK's BadRequestError.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_rerank_test.go runs it.
"""

import base64
import json
import math
import struct
import sys
import urllib.request

import cohere
from harness import finish, run

QUERY = "what do bakers do at dawn?"
DOCS = ["Bakers light their ovens before sunrise.", "The river is wide.", "zzz", "Dawn: bread, ovens, flour."]


def main():
    base, model = sys.argv[1], sys.argv[2]
    v1 = cohere.Client(base_url=base, api_key="unused", timeout=120)
    v2 = cohere.ClientV2(base_url=base, api_key="unused", timeout=120)

    def ranked(results):
        scores = [r.relevance_score for r in results]
        assert scores == sorted(scores, reverse=True), scores
        assert all(0 < s < 1 for s in scores), scores
        idx = [r.index for r in results]
        assert len(set(idx)) == len(idx) and all(0 <= i < len(DOCS) for i in idx), idx
        return {r.index: r.relevance_score for r in results}

    def rerank_v1():
        out = v1.rerank(model=model, query=QUERY, documents=DOCS, return_documents=True)
        got = ranked(out.results)
        assert len(got) == len(DOCS), got
        for r in out.results:
            assert r.document.text == DOCS[r.index], r
        top = v1.rerank(model=model, query=QUERY, documents=DOCS, top_n=2)
        assert [r.index for r in top.results] == [r.index for r in out.results][:2], (top.results, out.results)

    def rerank_v2():
        a = ranked(v2.rerank(model=model, query=QUERY, documents=DOCS).results)
        b = ranked(v1.rerank(model=model, query=QUERY, documents=DOCS).results)
        assert a.keys() == b.keys() and all(abs(a[i] - b[i]) < 1e-6 for i in a), (a, b)
        # The same pairs scored by /score give the same numbers.
        body = json.dumps({"model": model, "text_1": QUERY, "text_2": DOCS}).encode()
        req = urllib.request.Request(base + "/score", body, {"Content-Type": "application/json"})
        data = json.load(urllib.request.urlopen(req, timeout=120))["data"]
        for d in data:
            assert abs(d["score"] - a[d["index"]]) < 1e-6, (d, a)
        top = v2.rerank(model=model, query=QUERY, documents=DOCS, top_n=1)
        assert len(top.results) == 1 and top.results[0].index == max(a, key=a.get), top.results

    def embed_v1():
        out = v1.embed(model=model, texts=["bread at dawn", "a wide river"], input_type="search_document")
        assert out.response_type == "embeddings_floats", out.response_type
        assert len(out.embeddings) == 2 and out.texts == ["bread at dawn", "a wide river"], out.texts
        for v in out.embeddings:
            assert abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4, "not normalized"
        typed = v1.embed(model=model, texts=["bread at dawn"], input_type="search_query", embedding_types=["float"])
        assert typed.response_type == "embeddings_by_type", typed.response_type
        assert max(abs(x - y) for x, y in zip(typed.embeddings.float_[0], out.embeddings[0])) < 1e-6

    def embed_v2():
        out = v2.embed(model=model, texts=["bread at dawn", "a wide river"], input_type="search_query",
                       embedding_types=["float", "base64", "binary", "ubinary"])
        floats = out.embeddings.float_
        assert len(floats) == 2 and len(floats[0]) % 8 == 0, len(floats)
        assert out.meta.billed_units.input_tokens > 0, out.meta
        for i, v in enumerate(floats):
            raw = base64.b64decode(out.embeddings.base64[i])
            assert struct.unpack(f"<{len(v)}f", raw) == tuple(struct.unpack(f"<{len(v)}f", struct.pack(f"<{len(v)}f", *v))), "base64 differs"
            bits = [1 if x >= 0 else 0 for x in v]
            packed = [int("".join(map(str, bits[j:j + 8])), 2) for j in range(0, len(bits), 8)]
            assert out.embeddings.ubinary[i] == packed, (out.embeddings.ubinary[i][:4], packed[:4])
            assert out.embeddings.binary[i] == [b - 128 for b in packed], "binary is not ubinary - 128"
        assert floats[0] != floats[1], "two texts, one embedding"

    def output_dimension():
        full = v2.embed(model=model, texts=["bread"], input_type="clustering", embedding_types=["float"]).embeddings.float_[0]
        cut = v2.embed(model=model, texts=["bread"], input_type="clustering", embedding_types=["float"],
                       output_dimension=16).embeddings.float_[0]
        assert len(cut) == 16, len(cut)
        norm = math.sqrt(sum(x * x for x in full[:16]))
        assert max(abs(x / norm - y) for x, y in zip(full[:16], cut)) < 1e-4, "not the first 16 values, normalized"

    def truncation():
        text = "bakers light their ovens before sunrise every day"
        end = v2.embed(model=model, texts=[text], input_type="search_document", max_tokens=4, truncate="END")
        start = v2.embed(model=model, texts=[text], input_type="search_document", max_tokens=4, truncate="START")
        assert end.meta.billed_units.input_tokens == 4 == start.meta.billed_units.input_tokens, (end.meta, start.meta)
        assert end.embeddings.float_[0] != start.embeddings.float_[0], "START and END cut the same tokens"
        try:
            v2.embed(model=model, texts=[text], input_type="search_document", max_tokens=4, truncate="NONE")
        except cohere.BadRequestError as e:
            assert "max_tokens" in str(e.body), e.body
        else:
            raise AssertionError("truncate NONE over max_tokens answered")

    def refused():
        for kwargs in ({"embedding_types": ["int8"]}, {"input_type": "query"}):
            args = {"model": model, "texts": ["x"], "input_type": "search_query", **kwargs}
            try:
                v2.embed(**args)
            except cohere.BadRequestError:
                continue
            raise AssertionError(f"{kwargs} answered")

    run("Client.rerank (v1)", rerank_v1)
    run("ClientV2.rerank, /score agrees", rerank_v2)
    run("Client.embed (v1 floats, by type)", embed_v1)
    run("ClientV2.embed: float, base64, binary, ubinary", embed_v2)
    run("ClientV2.embed: output_dimension", output_dimension)
    run("ClientV2.embed: truncate and max_tokens", truncation)
    run("ClientV2.embed: refusals", refused)
    finish()


if __name__ == "__main__":
    main()
