#!/usr/bin/env python3
"""Anthropic's Messages API through the official Anthropic Python SDK.

Usage: test_anthropic.py BASE_URL MODEL --api-key KEY

Against a server started with --api-key KEY: messages.create (text, a
system prompt, stop_sequences), messages.stream (text_stream and the
accumulated final message, which must equal the non-streamed answer),
the raw event order, a tool_use round trip (tool_choice tool and any, so
the small model is made to call; then a tool_result turn), a streamed
tool call, count_tokens, sessions (X-Session-ID), the key sent as
x-api-key and as a bearer token, and errors (400 for a missing
max_tokens, an image, a prompt over the context; 401 for a wrong key),
typed as the SDK types them.

Prints one PASS/FAIL line per check and "N passed, M failed"; exits
non-zero on any failure. cmd/tandem/e2e_anthropic_test.go runs it.
"""

import argparse
import json
import urllib.request

import anthropic
from harness import finish, run

ARGS = None
WEATHER = {
    "name": "get_weather",
    "description": "Get the current weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
TIME = {"name": "get_time", "description": "Get the time in a time zone",
        "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}
HELLO = [{"role": "user", "content": "Say hello to the sea."}]
# Greedy sampling. The SDK (2.16) has no temperature, top_p or top_k
# arguments any more; the API and Tandem still take them in the body.
GREEDY = {"extra_body": {"temperature": 0}}


def client(**kw):
    kw.setdefault("api_key", ARGS.api_key)
    return anthropic.Anthropic(base_url=ARGS.base_url, max_retries=0, timeout=120, **kw)


def text_of(msg):
    return "".join(b.text for b in msg.content if b.type == "text")


def check_text():
    m = client().messages.create(model=ARGS.model, max_tokens=30, **GREEDY, system="You are brief.", messages=HELLO)
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_"), m
    assert m.content and m.content[0].type == "text" and text_of(m), m
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None, m
    u = m.usage
    assert u.input_tokens + (u.cache_read_input_tokens or 0) > 10 and 0 < u.output_tokens <= 30, u


def check_stop_sequence():
    c = client()
    full = text_of(c.messages.create(model=ARGS.model, max_tokens=24, **GREEDY, messages=HELLO))
    words = full.split()
    assert len(words) >= 3, full
    stop = " " + words[2]
    m = c.messages.create(model=ARGS.model, max_tokens=24, **GREEDY, messages=HELLO, stop_sequences=[stop, "\x00never"])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop, m
    assert text_of(m) == full[: full.index(stop)], (text_of(m), full)


def check_stream():
    c = client()
    whole = c.messages.create(model=ARGS.model, max_tokens=20, **GREEDY, messages=HELLO)
    with c.messages.stream(model=ARGS.model, max_tokens=20, **GREEDY, messages=HELLO) as s:
        pieces = list(s.text_stream)
        final = s.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == text_of(final) == text_of(whole), (pieces, final, whole)
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens, (final, whole)
    assert final.id.startswith("msg_") and final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0) > 10, final


def check_stream_events():
    events = list(client().messages.create(model=ARGS.model, max_tokens=5, **GREEDY, messages=HELLO, stream=True))
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"], types
    assert "content_block_start" in types and all(t in types for t in ("content_block_delta", "content_block_stop")), types
    assert events[-2].delta.stop_reason == "max_tokens" and events[-2].usage.output_tokens == 5, events[-2]


def tool_use(m, name):
    calls = [b for b in m.content if b.type == "tool_use"]
    assert m.stop_reason == "tool_use" and calls and calls[0].name == name, m
    assert calls[0].id.startswith("toolu_") and isinstance(calls[0].input, dict), calls[0]
    return calls[0]


def check_tool_round_trip():
    c = client()
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    m = c.messages.create(model=ARGS.model, max_tokens=60, **GREEDY, tools=[WEATHER, TIME],
                          tool_choice={"type": "tool", "name": "get_weather"}, messages=ask)
    call = tool_use(m, "get_weather")
    assert isinstance(call.input.get("city"), str), call.input
    turns = ask + [{"role": "assistant", "content": m.content},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 25 °C"}]}]
    answer = c.messages.create(model=ARGS.model, max_tokens=40, **GREEDY, tools=[WEATHER, TIME], messages=turns)
    assert answer.content and answer.content[0].type == "text" and text_of(answer), answer
    assert answer.stop_reason in ("end_turn", "max_tokens"), answer
    counted = c.messages.count_tokens(model=ARGS.model, tools=[WEATHER, TIME], messages=turns)
    assert counted.input_tokens == answer.usage.input_tokens + (answer.usage.cache_read_input_tokens or 0), (counted, answer.usage)


def check_tool_any():
    m = client().messages.create(model=ARGS.model, max_tokens=80, **GREEDY, tools=[WEATHER, TIME],
                                 tool_choice={"type": "any", "disable_parallel_tool_use": True},
                                 messages=[{"role": "user", "content": "What time is it in Tokyo?"}])
    calls = [b for b in m.content if b.type == "tool_use"]
    assert m.stop_reason == "tool_use" and len(calls) == 1 and calls[0].name in ("get_weather", "get_time"), m


def check_tool_stream():
    with client().messages.stream(model=ARGS.model, max_tokens=60, **GREEDY, tools=[WEATHER],
                                  tool_choice={"type": "tool", "name": "get_weather"},
                                  messages=[{"role": "user", "content": "Weather in Rome?"}]) as s:
        kinds = [e.type for e in s]
        final = s.get_final_message()
    assert "input_json" in kinds, kinds
    assert isinstance(tool_use(final, "get_weather").input.get("city"), str), final


def check_count_tokens():
    c = client()
    plain = c.messages.count_tokens(model=ARGS.model, messages=[{"role": "user", "content": "Hello world"}])
    longer = c.messages.count_tokens(model=ARGS.model, messages=[{"role": "user", "content": "Hello world, the sea and the sky"}])
    assert plain.input_tokens > 0 and longer.input_tokens > plain.input_tokens, (plain, longer)
    m = c.messages.create(model=ARGS.model, max_tokens=1, messages=[{"role": "user", "content": "Hello world"}])
    assert m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) == plain.input_tokens, (m.usage, plain)


def check_session_and_bearer():
    sid = "anthropic-sdk-session"
    c = client(api_key=None, auth_token=ARGS.api_key)  # Authorization: Bearer, not x-api-key
    for _ in range(2):
        c.messages.create(model=ARGS.model, max_tokens=2, messages=HELLO, extra_headers={"X-Session-ID": sid})
    req = urllib.request.Request(f"{ARGS.base_url}/v1/sessions/{sid}", headers={"x-api-key": ARGS.api_key})
    with urllib.request.urlopen(req) as r:
        sess = json.load(r)
    assert sess["num_requests"] == 2, sess


def expect(err_type, status, fn, contains):
    try:
        fn()
    except err_type as e:
        assert e.status_code == status, e
        assert e.body["type"] == "error" and contains in e.body["error"]["message"], e.body
        return e
    raise AssertionError(f"no {err_type.__name__}")


def check_errors():
    c = client()
    e = expect(anthropic.BadRequestError, 400, lambda: c.post("/v1/messages", body={"model": ARGS.model, "messages": HELLO}, cast_to=object),
               "max_tokens: Field required")
    assert e.body["error"]["type"] == "invalid_request_error", e.body
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    expect(anthropic.BadRequestError, 400, lambda: c.messages.create(model=ARGS.model, max_tokens=5, messages=[
        {"role": "user", "content": [image, {"type": "text", "text": "What is this?"}]}]), "image input is not supported")
    expect(anthropic.BadRequestError, 400, lambda: c.messages.create(model=ARGS.model, max_tokens=5, messages=[
        {"role": "user", "content": "word " * 10000}]), "prompt is too long")
    e = expect(anthropic.AuthenticationError, 401, lambda: client(api_key="wrong").messages.create(model=ARGS.model, max_tokens=5, messages=HELLO),
               "API key")
    assert e.body["error"]["type"] == "authentication_error", e.body


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("model")
    ap.add_argument("--api-key", required=True)
    ARGS = ap.parse_args()
    print("anthropic", anthropic.__version__, flush=True)
    for name, fn in [("messages.create text", check_text), ("stop_sequences", check_stop_sequence),
                     ("messages.stream text", check_stream), ("stream events", check_stream_events),
                     ("tool_use round trip", check_tool_round_trip), ("tool_choice any", check_tool_any),
                     ("tool_use streamed", check_tool_stream), ("count_tokens", check_count_tokens),
                     ("X-Session-ID and bearer token", check_session_and_bearer), ("errors", check_errors)]:
        run(name, fn)
    finish()


if __name__ == "__main__":
    main()
