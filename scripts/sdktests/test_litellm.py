#!/usr/bin/env python3
"""LiteLLM's SDK against a Tandem server, as its hosted_vllm provider.

Usage: test_litellm.py BASE_URL MODEL

Through litellm with model "hosted_vllm/MODEL" (LiteLLM's provider for
a vLLM server; "openai/MODEL" too for chat): completion and its stream;
tools with tool_choice "required", whole and streamed (the streamed
fragments join to arguments of the tool's types), and the tool loop
(call, result, answer); response_format json_schema; text_completion;
embedding; the Responses API bridge; rerank.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_structured_test.go runs it.
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the cost map from GitHub
import litellm  # noqa: E402
from harness import finish, run  # noqa: E402

litellm.telemetry = False
TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}]


def main():
    base, model = sys.argv[1], sys.argv[2]
    # Greedy, so that the runs repeat; a repetition penalty, as for a 135M model.
    kw = dict(api_base=base + "/v1", api_key="unused", temperature=0, max_tokens=120, timeout=300,
              extra_body={"repetition_penalty": 1.1})
    m = "hosted_vllm/" + model

    def check_args(calls):
        assert calls, "no tool calls"
        for c in calls:
            assert c.function.name == "add", c
            args = json.loads(c.function.arguments)
            assert set(args) == {"a", "b"} and all(isinstance(v, int) for v in args.values()), args

    def completion():
        for provider in ("hosted_vllm/", "openai/"):
            r = litellm.completion(model=provider + model, messages=[{"role": "user", "content": "Say hi."}], **kw)
            assert r.choices[0].message.content.strip(), r
            assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0, r.usage

    def stream():
        chunks = list(litellm.completion(model=m, messages=[{"role": "user", "content": "Say hi."}], stream=True, **kw))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text.strip(), chunks[:3]
        assert chunks[-1].choices[0].finish_reason in ("stop", "length"), chunks[-1]

    def tools_required():
        r = litellm.completion(model=m, messages=[{"role": "user", "content": "Add 2 and 3."}], tools=TOOLS,
                               tool_choice="required", **kw)
        check_args(r.choices[0].message.tool_calls)

    def tools_streamed():
        calls = {}
        for c in litellm.completion(model=m, messages=[{"role": "user", "content": "Add 2 and 3."}], tools=TOOLS,
                                    tool_choice="required", stream=True, **kw):
            for d in (c.choices[0].delta.tool_calls or []) if c.choices else []:
                e = calls.setdefault(d.index, {"name": "", "arguments": ""})
                e["name"] += d.function.name or ""
                e["arguments"] += d.function.arguments or ""
        assert calls, "no tool call deltas"
        for e in calls.values():
            assert e["name"] == "add", e
            args = json.loads(e["arguments"])
            assert all(isinstance(args[k], int) for k in ("a", "b")), args

    def tool_loop():
        msgs = [{"role": "user", "content": "Use the add tool to compute 20 plus 22."}]
        r = litellm.completion(model=m, messages=msgs, tools=TOOLS, tool_choice="required", **kw)
        calls = r.choices[0].message.tool_calls
        check_args(calls)
        msgs.append(r.choices[0].message.model_dump())
        for c in calls:
            a = json.loads(c.function.arguments)
            msgs.append({"role": "tool", "tool_call_id": c.id, "content": str(a["a"] + a["b"])})
        final = litellm.completion(model=m, messages=msgs, tools=TOOLS, **kw)
        msg = final.choices[0].message
        assert (msg.content or "").strip() or msg.tool_calls, final

    def json_schema():
        schema = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
                  "required": ["city", "population"]}
        r = litellm.completion(model=m, messages=[{"role": "user", "content": "The largest city in Japan, as JSON."}],
                               response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": schema}},
                               **{**kw, "max_tokens": 200})
        out = json.loads(r.choices[0].message.content)
        assert isinstance(out["city"], str) and isinstance(out["population"], int), out

    def text_completion():
        r = litellm.text_completion(model=m, prompt="Once upon a time", **kw)
        assert r.choices[0].text, r

    def embedding():
        r = litellm.embedding(model=m, input=["bread at dawn", "a wide river"], api_base=base + "/v1", api_key="unused")
        assert len(r.data) == 2 and len(r.data[0]["embedding"]) > 1, r
        assert r.data[0]["embedding"] != r.data[1]["embedding"], "two inputs, one embedding"

    def responses():
        r = litellm.responses(model=m, input="Say hi.", api_base=base + "/v1", api_key="unused", max_output_tokens=40,
                              temperature=0)
        text = "".join(c.text for o in r.output if o.type == "message" for c in o.content if c.type == "output_text")
        assert text.strip(), r.output

    def rerank():
        docs = ["Paris is the capital of France.", "Bananas are yellow.", "The Eiffel Tower is in Paris."]
        r = litellm.rerank(model=m, query="the capital of France", documents=docs, api_base=base, api_key="unused")
        assert sorted(x["index"] for x in r.results) == [0, 1, 2], r.results
        scores = [x["relevance_score"] for x in r.results]
        assert scores == sorted(scores, reverse=True), scores

    run("completion (hosted_vllm/, openai/)", completion)
    run("completion streamed", stream)
    run("tool_choice required", tools_required)
    run("tool_choice required, streamed", tools_streamed)
    run("tool loop: call, result, answer", tool_loop)
    run("response_format json_schema", json_schema)
    run("text_completion", text_completion)
    run("embedding", embedding)
    run("responses", responses)
    run("rerank", rerank)
    finish()


if __name__ == "__main__":
    main()
