#!/usr/bin/env python3
"""Drives a Tandem server with the official OpenAI Python SDK (PyPI `openai`).

Usage: test_openai.py BASE_URL [--api-key KEY] [--max-waiting N]
                              [--max-body BYTES] [--expect-unavailable]
                              [--only CHECK]...

BASE_URL is the server root (http://127.0.0.1:8000). The server must serve
`--model dummy` (the checks steer its byte-level vocabulary). Options say
how the server was started, enabling the checks that depend on it:
--api-key (401 for a wrong key), --max-waiting (429 from
--max-waiting-requests 1, with the engine at --max-num-seqs 1 and a
--max-model-len over 4000: one 4000-token request runs, one waits),
--max-body (413 from --max-request-body), --expect-unavailable (the engine
is gone: only the 503 check runs).

Prints one PASS/FAIL line per check and a summary line "N passed, M failed";
exits non-zero on any failure. cmd/tandem/e2e_sdk_test.go runs it.
"""

import argparse
import json
import sys
import threading
import time
import traceback
import urllib.request
import uuid

import openai

ARGS = None
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def client(**kw):
    return openai.OpenAI(base_url=ARGS.base_url + "/v1", api_key=ARGS.api_key or "unused", max_retries=0, timeout=60, **kw)


def ascii_only():
    """logit_bias that keeps the dummy model to printable ASCII (ids 32..126)."""
    return {str(i): -100 for i in list(range(0, 32)) + list(range(127, 320))}


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def get_json(path):
    req = urllib.request.Request(ARGS.base_url + path)
    if ARGS.api_key:
        req.add_header("Authorization", "Bearer " + ARGS.api_key)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def chat(c, content="Hello", **kw):
    kw.setdefault("max_tokens", 8)
    return c.chat.completions.create(model="dummy", messages=[{"role": "user", "content": content}], **kw)


@check
def models():
    ids = [m.id for m in client().models.list()]
    expect(ids == ["dummy"], f"models {ids}")


@check
def models_retrieve():
    c = client()
    m = c.models.retrieve("dummy")
    card = m.model_dump()
    expect(m.id == "dummy" and m.object == "model", card)
    expect(card.get("root") == "dummy" and "parent" in card and card["parent"] is None, card)
    expect([p["object"] for p in card.get("permission") or []] == ["model_permission"], card)
    try:
        c.models.retrieve("no-such-model")
        raise AssertionError("no error")
    except openai.NotFoundError as e:
        expect(e.status_code == 404 and e.code == "model_not_found", f"{e.status_code} {e.code}")


@check
def prompt_logprobs_null():
    c = client()
    r = c.completions.create(model="dummy", prompt="Hi", max_tokens=2)
    ch = r.choices[0]
    expect("prompt_logprobs" in (ch.model_extra or {}) and ch.prompt_logprobs is None, ch.model_extra)
    r = chat(c, max_tokens=2)
    expect("prompt_logprobs" in (r.model_extra or {}) and r.prompt_logprobs is None, r.model_extra)


@check
def chat_completion():
    r = chat(client(), temperature=0, extra_body={"ignore_eos": True})
    expect(r.id.startswith("chatcmpl-"), f"id {r.id}")
    expect(r.object == "chat.completion", r.object)
    expect(r.system_fingerprint and r.system_fingerprint.startswith("fp_"), f"fingerprint {r.system_fingerprint}")
    expect(isinstance(r.choices[0].message.content, str) and r.choices[0].message.role == "assistant", r.choices[0])
    expect(r.choices[0].finish_reason == "length", r.choices[0].finish_reason)
    u = r.usage
    expect(u.completion_tokens == 8 and u.prompt_tokens > 0 and u.total_tokens == u.prompt_tokens + u.completion_tokens, f"usage {u}")


@check
def chat_stream_with_usage():
    stream = chat(client(), stream=True, stream_options={"include_usage": True}, max_tokens=6, extra_body={"ignore_eos": True, "logit_bias": ascii_only()})
    text, usage, finish, roles = "", None, None, 0
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
            expect(chunk.choices == [], "usage chunk has choices")
            continue
        d = chunk.choices[0].delta
        roles += d.role == "assistant"
        text += d.content or ""
        finish = chunk.choices[0].finish_reason or finish
    expect(roles == 1, f"{roles} role deltas")
    expect(usage is not None and usage.completion_tokens == 6 and usage.total_tokens == usage.prompt_tokens + 6, f"usage {usage}")
    expect(len(text) == 6 and finish == "length", f"text {text!r} finish {finish}")


@check
def chat_stream_helper():
    # The helper refuses finish_reason "length": force EOS (257) right
    # after min_tokens ASCII tokens.
    c = client()
    with c.chat.completions.stream(model="dummy", messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
                                   extra_body={"min_tokens": 3, "logit_bias": {**ascii_only(), "257": 100}}) as s:
        deltas = "".join(e.delta for e in s if e.type == "content.delta")
        final = s.get_final_completion()
    msg = final.choices[0].message.content
    expect(len(msg) == 3 and msg == deltas and final.choices[0].finish_reason == "stop", final)


@check
def chat_n2():
    r = chat(client(), n=2, max_tokens=4, seed=3)
    expect([c.index for c in r.choices] == [0, 1], r.choices)
    expect(r.usage.completion_tokens == sum(1 for _ in range(2)) * 4 or r.usage.completion_tokens <= 8, r.usage)


@check
def chat_logprobs():
    r = chat(client(), logprobs=True, top_logprobs=3, max_tokens=5, extra_body={"ignore_eos": True})
    content = r.choices[0].logprobs.content
    expect(len(content) == 5, f"{len(content)} logprob entries")
    for e in content:
        expect(len(e.top_logprobs) == 3 and e.logprob <= 0, e)
        expect(e.top_logprobs[0].logprob >= e.top_logprobs[-1].logprob, "top_logprobs not sorted")


@check
def reasoning_parser():
    # The server runs --reasoning-parser qwen3. A prefill that opens the think
    # block ("<think>\n", as DeepSeek-R1's template writes it) makes the answer
    # reasoning: message.reasoning / reasoning_content (streamed: the deltas'),
    # with include_reasoning false dropped; an answer without a think block is
    # all content.
    c = client()
    msgs = [{"role": "user", "content": "Think."}, {"role": "assistant", "content": "<think>\n"}]
    kw = dict(model="dummy", messages=msgs, max_tokens=6, extra_body={"continue_final_message": True, "add_generation_prompt": False,
                                                                       "ignore_eos": True, "logit_bias": ascii_only()})
    m = c.chat.completions.create(seed=3, **kw).choices[0].message
    extra = m.model_extra or {}
    expect(m.content == "" and extra.get("reasoning") and extra.get("reasoning") == extra.get("reasoning_content"), m)
    streamed = ""
    for chunk in c.chat.completions.create(seed=3, stream=True, **kw):
        for ch in chunk.choices:
            expect(not ch.delta.content, ch.delta)
            streamed += (ch.delta.model_extra or {}).get("reasoning_content") or ""
    expect(streamed == extra["reasoning"], (streamed, extra["reasoning"]))
    kw["extra_body"]["include_reasoning"] = False
    m = c.chat.completions.create(seed=3, **kw).choices[0].message
    expect(m.content == "" and "reasoning" not in (m.model_extra or {}), m)
    plain = chat(c, max_tokens=5, extra_body={"ignore_eos": True, "logit_bias": ascii_only()}).choices[0].message
    expect(len(plain.content) == 5 and "reasoning" not in (plain.model_extra or {}), plain)


@check
def thinking_budget():
    # thinking_token_budget (vLLM's) on the dummy model (byte tokens), served
    # with --reasoning-parser qwen3: after 3 tokens in the think block the
    # engine forces "</think>", byte by byte; what follows is the content. With
    # a schema, the constraint applies after the block: the content is the JSON.
    c = client()
    msgs = [{"role": "user", "content": "Think."}, {"role": "assistant", "content": "<think>\n"}]
    body = {"continue_final_message": True, "add_generation_prompt": False, "ignore_eos": True, "logit_bias": ascii_only(),
            "thinking_token_budget": 3, "return_token_ids": True}
    ch = c.chat.completions.create(model="dummy", messages=msgs, max_tokens=16, seed=3, extra_body=body).choices[0]
    ids = (ch.model_extra or {}).get("token_ids")
    expect(ids and ids[3:11] == list(b"</think>"), ids)
    extra = ch.message.model_extra or {}
    expect((extra.get("reasoning") or "") == bytes(ids[:3]).decode().strip(), (extra, ids))
    expect(ch.message.content == bytes(ids[11:]).decode().lstrip(), (ch.message.content, ids))
    schema = {"type": "object", "properties": {"a": {"enum": [1, 2]}}, "required": ["a"]}
    r = c.chat.completions.create(model="dummy", messages=msgs, max_tokens=48, seed=3, extra_body=dict(body, thinking_token_budget=2, ignore_eos=False),
                                  response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema}})
    ch = r.choices[0]
    ids = ch.model_extra["token_ids"]
    expect(ids[2:10] == list(b"</think>") and ch.finish_reason == "stop", (ids, ch.finish_reason))
    expect(json.loads(ch.message.content)["a"] in (1, 2), ch.message)


LEGACY_FUNCTIONS = [{"name": "get_weather", "parameters": {"type": "object", "properties": {
    "city": {"type": "string", "pattern": "^[a-z]{1,8}$"}}, "required": ["city"]}}]


@check
def legacy_functions():
    # OpenAI's deprecated functions: the call comes back as message.function_call
    # (streamed: delta.function_call), and the result goes back as a "function" message.
    c = client()
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    kw = dict(model="dummy", functions=LEGACY_FUNCTIONS, function_call={"name": "get_weather"}, max_tokens=64, seed=1)
    r = c.chat.completions.create(messages=msgs, **kw)
    m = r.choices[0].message
    expect(m.tool_calls is None and m.function_call is not None and m.function_call.name == "get_weather", m)
    args = json.loads(m.function_call.arguments)
    expect(list(args) == ["city"] and args["city"].isalpha(), args)
    expect(r.choices[0].finish_reason == "stop", r.choices[0].finish_reason)
    name, streamed = None, ""
    for chunk in c.chat.completions.create(messages=msgs, stream=True, **kw):
        for ch in chunk.choices:
            expect(not ch.delta.tool_calls, ch.delta)
            if ch.delta.function_call:
                name = name or ch.delta.function_call.name
                streamed += ch.delta.function_call.arguments or ""
    expect(name == "get_weather" and json.loads(streamed) == args, (name, streamed))
    follow = msgs + [{"role": "assistant", "content": None, "function_call": {"name": "get_weather", "arguments": m.function_call.arguments}},
                     {"role": "function", "name": "get_weather", "content": "18 C"}]
    r = c.chat.completions.create(model="dummy", messages=follow, functions=LEGACY_FUNCTIONS, function_call="none", max_tokens=4)
    expect(r.choices[0].message.function_call is None and isinstance(r.choices[0].message.content, str), r.choices[0])


@check
def completion():
    c = client()
    r = c.completions.create(model="dummy", prompt="Once upon", max_tokens=5, logprobs=2, echo=True, extra_body={"ignore_eos": True})
    expect(r.id.startswith("cmpl-") and r.object == "text_completion", r.id)
    ch = r.choices[0]
    expect(ch.text.startswith("Once upon"), f"echo missing: {ch.text!r}")
    # echo covers the prompt's tokens too (vLLM: the first one has no logprob);
    # top_logprobs hold the sampled token and the 2 alternatives (OpenAI's logprobs + 1)
    lp = ch.logprobs
    expect(len(lp.tokens) == r.usage.prompt_tokens + 5, lp)
    expect(lp.token_logprobs[0] is None and lp.top_logprobs[0] is None, lp)
    expect(all(len(t) <= 3 for t in lp.top_logprobs[1:]), lp)
    expect(r.usage.completion_tokens == 5, r.usage)


@check
def completion_batch_n2():
    r = client().completions.create(model="dummy", prompt=["a", "b"], n=2, max_tokens=3, extra_body={"ignore_eos": True})
    expect(len(r.choices) == 4 and sorted(c.index for c in r.choices) == [0, 1, 2, 3], r.choices)
    expect(r.usage.completion_tokens == 12, r.usage)


@check
def completion_token_prompt_stream_usage():
    s = client().completions.create(model="dummy", prompt=[72, 105], max_tokens=4, stream=True,
                                    stream_options={"include_usage": True}, extra_body={"ignore_eos": True})
    chunks = list(s)
    expect(chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4 and chunks[-1].usage.prompt_tokens == 2, chunks[-1])


@check
def stop_string():
    c = client()
    base = c.completions.create(model="dummy", prompt="x", max_tokens=24, temperature=0, extra_body={"ignore_eos": True, "logit_bias": ascii_only()})
    text = base.choices[0].text
    expect(len(text) == 24, f"text {text!r}")
    stop = text[10:12]
    r = c.completions.create(model="dummy", prompt="x", max_tokens=24, temperature=0, stop=[stop], extra_body={"ignore_eos": True, "logit_bias": ascii_only()})
    ch = r.choices[0]
    expect(ch.text == text[: text.index(stop)], f"stopped text {ch.text!r}, base {text!r}, stop {stop!r}")
    expect(ch.finish_reason == "stop", ch.finish_reason)
    expect(ch.model_extra.get("stop_reason") == stop, ch.model_extra)


@check
def seed_reproducible():
    c = client()
    a = chat(c, seed=1234, temperature=1.0, max_tokens=12).choices[0].message.content
    b = chat(c, seed=1234, temperature=1.0, max_tokens=12).choices[0].message.content
    d = chat(c, seed=99, temperature=1.0, max_tokens=12).choices[0].message.content
    expect(a == b, f"same seed differs: {a!r} {b!r}")
    expect(a != d, f"different seeds agree: {a!r}")


def session_requests(sid):
    return get_json("/v1/sessions/" + sid)["num_requests"]


@check
def session_header():
    sid = "py-hdr-" + uuid.uuid4().hex
    chat(client(), max_tokens=2, extra_headers={"X-Session-ID": sid})
    chat(client(), max_tokens=2, extra_headers={"x-session-id": sid})
    expect(session_requests(sid) == 2, "session not seen twice")


@check
def extra_body_session_and_top_k():
    c = client()
    sid = "py-body-" + uuid.uuid4().hex
    greedy = chat(c, temperature=0, max_tokens=10, extra_body={"ignore_eos": True}).choices[0].message.content
    top1 = chat(c, temperature=1.0, max_tokens=10, extra_body={"ignore_eos": True, "top_k": 1, "session_id": sid}).choices[0].message.content
    expect(top1 == greedy, f"top_k=1 {top1!r} != greedy {greedy!r}")
    expect(session_requests(sid) == 1, "body session_id not seen")


@check
def request_id_header():
    raw = client().chat.completions.with_raw_response.create(model="dummy", messages=[{"role": "user", "content": "hi"}], max_tokens=2,
                                                             extra_headers={"X-Request-Id": "py-req-1"})
    expect(raw.headers.get("x-request-id") == "py-req-1", raw.headers)
    expect(raw.parse().id == "chatcmpl-py-req-1", raw.parse().id)


@check
def beam_search():
    r = client().completions.create(model="dummy", prompt="ab", max_tokens=3, n=2,
                                    extra_body={"use_beam_search": True, "ignore_eos": True, "length_penalty": 1.0})
    expect(len(r.choices) == 2 and all(c.finish_reason == "length" for c in r.choices), r.choices)
    expect(r.choices[0].text != r.choices[1].text, "beams are not distinct")


@check
def responses_create_and_follow_up():
    c = client()
    r1 = c.responses.create(model="dummy", input="Hello there", instructions="Be brief.", max_output_tokens=6)
    expect(r1.id.startswith("resp_") and r1.object == "response", r1.id)
    expect(isinstance(r1.output_text, str) and r1.status in ("completed", "incomplete"), r1)
    expect(r1.usage.output_tokens <= 6 and r1.usage.total_tokens == r1.usage.input_tokens + r1.usage.output_tokens, r1.usage)
    r2 = c.responses.create(model="dummy", input=[{"role": "user", "content": "And then?"}], previous_response_id=r1.id, max_output_tokens=4)
    expect(r2.previous_response_id == r1.id, r2.previous_response_id)
    expect(r2.usage.input_tokens > r1.usage.input_tokens, f"follow-up input {r2.usage.input_tokens} not longer than {r1.usage.input_tokens}")
    got = c.responses.retrieve(r1.id)
    expect(got.id == r1.id and got.output_text == r1.output_text, got)
    c.responses.delete(r1.id)
    try:
        c.responses.retrieve(r1.id)
        raise AssertionError("deleted response still retrievable")
    except openai.NotFoundError:
        pass


@check
def responses_stream():
    c = client()
    types, deltas = [], ""
    with c.responses.stream(model="dummy", input="Hi", max_output_tokens=5, extra_body={"logit_bias": ascii_only()}) as s:
        for ev in s:
            types.append(ev.type)
            if ev.type == "response.output_text.delta":
                deltas += ev.delta
        final = s.get_final_response()
    want = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    expect(types[:4] == want, types)
    expect(types[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"], types)
    expect(types[-1] in ("response.completed", "response.incomplete"), types[-1])
    expect(final.output_text == deltas and final.usage is not None, f"{final.output_text!r} vs {deltas!r}")
    # create(stream=True) yields the same typed events.
    evs = list(c.responses.create(model="dummy", input="Hi", max_output_tokens=3, stream=True))
    expect([e.sequence_number for e in evs] == list(range(len(evs))), "sequence numbers")


@check
def responses_background_stream():
    # background with stream (vLLM's event store): the create call streams
    # the events; retrieve(stream=True, starting_after=N) replays the rest.
    c = client()
    evs = list(c.responses.create(model="dummy", input="Hi", max_output_tokens=4, background=True, stream=True))
    expect(evs[0].type == "response.created" and evs[0].response.background, evs[0])
    expect(evs[-1].type in ("response.completed", "response.incomplete"), evs[-1].type)
    rid = evs[0].response.id
    again = list(c.responses.retrieve(rid, stream=True, starting_after=1))
    expect([e.sequence_number for e in again] == [e.sequence_number for e in evs[2:]], "replayed sequence numbers")
    expect([e.type for e in again] == [e.type for e in evs[2:]], "replayed types")
    got = c.responses.retrieve(rid)
    expect(got.status in ("completed", "incomplete") and got.background, got.status)


@check
def error_400_param():
    try:
        chat(client(), temperature=-1)
        raise AssertionError("no error")
    except openai.BadRequestError as e:
        expect(e.status_code == 400 and e.param == "temperature", f"{e.status_code} {e.param}")


@check
def error_400_context_length():
    try:
        chat(client(), content="x" * 5000)
        raise AssertionError("no error")
    except openai.BadRequestError as e:
        expect(e.code == "context_length_exceeded", e.code)
        expect("5" in e.message and "maximum context length" in e.message, e.message)


@check
def error_404_model():
    try:
        client().chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "x"}])
        raise AssertionError("no error")
    except openai.NotFoundError as e:
        expect(e.status_code == 404 and e.code == "model_not_found", f"{e.status_code} {e.code}")


@check
def error_401():
    if not ARGS.api_key:
        return "skipped: server has no --api-key"
    bad = openai.OpenAI(base_url=ARGS.base_url + "/v1", api_key="wrong-key", max_retries=0)
    try:
        bad.models.list()
        raise AssertionError("no error")
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, e.status_code)


@check
def error_413():
    if not ARGS.max_body:
        return "skipped: --max-body not given"
    try:
        client().completions.create(model="dummy", prompt="x" * (ARGS.max_body + 1), max_tokens=1)
        raise AssertionError("no error")
    except openai.APIStatusError as e:
        expect(e.status_code == 413, e.status_code)


@check
def embeddings():
    c = client()
    texts = ["The quick brown fox", "jumps over the lazy dog", "The quick brown fox"]
    # The SDK asks for base64 unless told otherwise and decodes it itself.
    b64 = c.embeddings.create(model="dummy", input=texts)
    flt = c.embeddings.create(model="dummy", input=texts, encoding_format="float")
    expect([d.index for d in b64.data] == [0, 1, 2] and all(d.object == "embedding" for d in b64.data), b64.data)
    dim = len(b64.data[0].embedding)
    expect(dim > 1 and all(len(d.embedding) == dim for d in b64.data + flt.data), "lengths differ")
    for a, b in zip(b64.data, flt.data):
        expect(max(abs(x - y) for x, y in zip(a.embedding, b.embedding)) < 1e-6, "base64 and float differ")
    for d in flt.data:
        norm = sum(x * x for x in d.embedding) ** 0.5
        expect(abs(norm - 1) < 1e-4, f"norm {norm}")
    e0, e1, e2 = (d.embedding for d in flt.data)
    expect(max(abs(x - y) for x, y in zip(e0, e2)) < 1e-5, "the same text embeds differently in one batch")
    expect(max(abs(x - y) for x, y in zip(e0, e1)) > 1e-3, "different texts embed alike")
    expect(b64.usage.prompt_tokens > 0 and b64.usage.total_tokens == b64.usage.prompt_tokens, b64.usage)
    # Alone, the first text embeds as it did in the batch.
    one = c.embeddings.create(model="dummy", input=texts[0], encoding_format="float").data[0].embedding
    expect(max(abs(x - y) for x, y in zip(one, e0)) < 1e-5, "batch changes the embedding")
    # dimensions keeps the first n values, normalized again.
    short = c.embeddings.create(model="dummy", input=texts[0], dimensions=8, encoding_format="float").data[0].embedding
    full8 = e0[:8]
    n8 = sum(x * x for x in full8) ** 0.5
    expect(len(short) == 8 and max(abs(x - y / n8) for x, y in zip(short, full8)) < 1e-5, short)
    ids = c.embeddings.create(model="dummy", input=[[72, 105, 33]], encoding_format="float")
    expect(len(ids.data) == 1 and ids.usage.prompt_tokens == 3, ids.usage)
    for bad in ({"input": []}, {"input": "x", "encoding_format": "int8"}, {"input": "x", "dimensions": 0},
                {"input": [[10**7]]}, {"input": "x", "dimensions": 10**6}):
        try:
            c.embeddings.create(model="dummy", **bad)
            raise AssertionError(f"no error for {bad}")
        except openai.BadRequestError as e:
            expect(e.status_code == 400, e)


@check
def error_429():
    if not ARGS.max_waiting:
        return "skipped: --max-waiting not given"
    c = client()
    # One long request runs (the engine takes one at a time); the next waits,
    # filling a queue of --max-waiting 1; a third is refused.
    long = chat(c, max_tokens=4000, stream=True, extra_body={"ignore_eos": True, "min_tokens": 4000})
    for chunk in long:
        if chunk.choices and chunk.choices[0].delta.content:
            break
    waiter = threading.Thread(target=lambda: chat(client(), max_tokens=1))
    waiter.start()
    time.sleep(0.3)
    try:
        try:
            chat(c, max_tokens=1)
            raise AssertionError("no 429")
        except openai.RateLimitError as e:
            expect(e.status_code == 429 and e.response.headers.get("retry-after") == "1", e.response.headers)
    finally:
        long.close()
        waiter.join(60)


def unavailable():
    try:
        chat(client(), max_tokens=1)
        raise AssertionError("no error")
    except openai.InternalServerError as e:
        expect(e.status_code == 503, e.status_code)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("base_url")
    p.add_argument("--api-key", default="")
    p.add_argument("--max-waiting", type=int, default=0)
    p.add_argument("--max-body", type=int, default=0)
    p.add_argument("--expect-unavailable", action="store_true")
    p.add_argument("--only", action="append", default=[], help="run only this check (repeatable; underscores and case ignored)")
    ARGS = p.parse_args()
    ARGS.base_url = ARGS.base_url.rstrip("/")
    checks = [unavailable] if ARGS.expect_unavailable else CHECKS
    norm = lambda s: s.replace("_", "").lower()  # noqa: E731
    if ARGS.only:
        wanted = {norm(o) for o in ARGS.only}
        checks = [c for c in checks if norm(c.__name__) in wanted]
    passed = failed = skipped = 0
    for fn in checks:
        try:
            note = fn()
            if isinstance(note, str):
                skipped += 1
                print(f"SKIP {fn.__name__}: {note}")
            else:
                passed += 1
                print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 — report every failure and go on
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3)
    print(f"python openai {openai.__version__}: {passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
