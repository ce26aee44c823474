#!/usr/bin/env python3
"""Ollama's native API through Ollama's own Python client (PyPI `ollama`).

Usage: test_ollama.py BASE_URL --api-key KEY

Against a server started with --api-key KEY: list (the served model with
its tag), show, ps, chat (greedy text, and the same answer streamed piece
by piece with the stats on the last object), options (num_predict, stop,
seed), format "json" and a JSON Schema (parsed and validated), a tool
result turn with the tools the client builds from a Python function,
generate (templated, raw, and continued from the returned context),
sessions (X-Session-ID), the load requests (no messages, no prompt),
logprobs, embed (normalized vectors, one per input, the same text
alike) and the older embeddings, errors (an unknown model is a 404, an
image a 400, a wrong key 401), as the client raises them; and LangChain's
ChatOllama (PyPI `langchain-ollama`): invoke and stream,
with_structured_output, a tool result turn paired by tool_call_id, and
logprobs; and its OllamaEmbeddings (documents and a query).

Prints one PASS/FAIL line per check and "N passed, M failed"; exits
non-zero on any failure. cmd/tandem/e2e_ollama_test.go runs it.
"""

import argparse
import json
import urllib.request
import uuid

import ollama
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_ollama import ChatOllama, OllamaEmbeddings
from pydantic import BaseModel
from harness import finish, run

ARGS = None
GREEDY = {"temperature": 0, "num_predict": 24}


def client(**kw):
    headers = kw.pop("headers", {})
    headers.setdefault("Authorization", "Bearer " + ARGS.api_key)
    return ollama.Client(host=ARGS.base_url, headers=headers, timeout=120, **kw)


def model():
    return client().list().models[0].model


def check_list_show_ps():
    c = client()
    models = c.list().models
    assert len(models) == 1 and models[0].model.endswith(":latest") and models[0].details.format == "gguf", models
    assert models[0].size > 1_000_000, models[0].size
    shown = c.show(models[0].model)
    assert "completion" in shown.capabilities and "im_start" in shown.template, shown
    assert c.show(models[0].model.removesuffix(":latest")).template == shown.template  # the name without its tag
    running = c.ps().models
    assert len(running) == 1 and running[0].context_length > 0, running


def check_chat_and_stream():
    c, m = client(), model()
    msgs = [{"role": "user", "content": "Write one sentence about the sea."}]
    whole = c.chat(model=m, messages=msgs, options=GREEDY)
    assert whole.done and whole.done_reason in ("stop", "length") and whole.message.role == "assistant", whole
    assert whole.message.content and whole.eval_count > 0 and whole.prompt_eval_count > 0, whole
    assert whole.total_duration >= whole.eval_duration > 0, whole
    pieces = list(c.chat(model=m, messages=msgs, options=GREEDY, stream=True))
    assert all(not p.done for p in pieces[:-1]) and pieces[-1].done, [p.done for p in pieces]
    assert len(pieces) > 3, len(pieces)
    text = "".join(p.message.content for p in pieces)
    assert text == whole.message.content, (text, whole.message.content)
    last = pieces[-1]
    assert last.done_reason == whole.done_reason and last.eval_count == whole.eval_count, last


def check_options():
    c, m = client(), model()
    msgs = [{"role": "user", "content": "Count from one to twenty in words."}]
    r = c.chat(model=m, messages=msgs, options={"num_predict": 5, "temperature": 0})
    assert r.eval_count == 5 and r.done_reason == "length", r
    full = c.chat(model=m, messages=msgs, options={"num_predict": 40, "temperature": 0}).message.content
    assert len(full) > 2, full
    word = full.split()[1]
    cut = c.chat(model=m, messages=msgs, options={"num_predict": 40, "temperature": 0, "stop": [word]})
    assert word not in cut.message.content and cut.done_reason == "stop", (word, cut.message.content)
    seeded = [c.chat(model=m, messages=msgs, options={"num_predict": 12, "temperature": 1, "seed": 7}).message.content for _ in range(2)]
    assert seeded[0] == seeded[1], seeded


def check_format():
    c, m = client(), model()
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
              "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]}
    r = c.chat(model=m, messages=[{"role": "user", "content": "Describe a person as JSON."}], format=schema,
               options={"num_predict": 60, "temperature": 0.7, "seed": 1, "repeat_penalty": 1.1})
    assert r.done_reason == "stop", r  # the schema's bounds end it well within 60 tokens
    person = json.loads(r.message.content)
    assert set(person) == {"name", "age"} and isinstance(person["age"], int) and 0 <= person["age"] <= 120, person
    r = c.generate(model=m, prompt="Give a JSON object.", format="json", options={"num_predict": 40, "temperature": 0.7, "seed": 2})
    if r.done_reason == "stop":
        assert isinstance(json.loads(r.response), dict), r.response
    else:  # cut by num_predict: still the start of an object
        assert r.response.lstrip().startswith("{"), r.response


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
      city: The city's name
    """
    return "18 C and sunny"


def check_tool_result_turn():
    c, m = client(), model()
    msgs = [{"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "content": get_weather("Paris"), "tool_name": "get_weather"}]
    r = c.chat(model=m, messages=msgs, tools=[get_weather], options=GREEDY)
    assert r.done and r.message.tool_calls is None, r  # no tool-call parser for SmolLM2's template: text
    assert r.prompt_eval_count > 40, r.prompt_eval_count  # the call and its result are in the prompt


def check_generate():
    c, m = client(), model()
    r = c.generate(model=m, prompt="The capital of France is", system="Answer briefly.", options=GREEDY)
    assert r.done and r.response and r.context and r.eval_count > 0, r
    again = c.generate(model=m, prompt="And of Italy?", context=r.context, options=GREEDY)
    assert again.prompt_eval_count > len(r.context), (again.prompt_eval_count, len(r.context))
    assert again.context[:len(r.context)] == r.context
    raw = c.generate(model=m, prompt="Once upon a time", raw=True, options={"num_predict": 6, "temperature": 0})
    assert raw.eval_count == 6 and raw.prompt_eval_count < 8, raw  # no chat template around it
    streamed = "".join(p.response for p in c.generate(model=m, prompt="Once upon a time", raw=True,
                                                      options={"num_predict": 6, "temperature": 0}, stream=True))
    assert streamed == raw.response, (streamed, raw.response)


def check_session():
    sid = "ollama-sdk-" + uuid.uuid4().hex
    c = client(headers={"X-Session-ID": sid})
    m = model()
    msgs = [{"role": "user", "content": "Tell me about whales."}]
    c.chat(model=m, messages=msgs, options={"num_predict": 4})
    c.chat(model=m, messages=msgs, options={"num_predict": 4})
    req = urllib.request.Request(ARGS.base_url + "/v1/sessions/" + sid, headers={"Authorization": "Bearer " + ARGS.api_key})
    with urllib.request.urlopen(req, timeout=30) as resp:
        info = json.load(resp)
    assert info["num_requests"] == 2 and info["num_cached_tokens"] > 0, info


def check_load():
    c, m = client(), model()
    r = c.chat(model=m, messages=[])
    assert r.done and r.done_reason == "load", r
    r = c.generate(model=m, prompt="")
    assert r.done and r.done_reason == "load", r


def check_logprobs():
    c, m = client(), model()
    r = c.chat(model=m, messages=[{"role": "user", "content": "Hi"}], logprobs=True, top_logprobs=2, options={"num_predict": 4, "temperature": 0})
    assert len(r.logprobs) == r.eval_count == 4, r
    for lp in r.logprobs:
        assert lp.logprob <= 0 and len(lp.top_logprobs) == 2 and lp.top_logprobs[0].logprob >= lp.top_logprobs[1].logprob, lp
        assert lp.token == lp.top_logprobs[0].token, lp  # greedy: the sampled token is the most likely
    assert "".join(lp.token for lp in r.logprobs) == r.message.content, (r.logprobs, r.message.content)


class City(BaseModel):
    name: str
    country: str


def check_langchain():
    kw = dict(model=model(), base_url=ARGS.base_url, client_kwargs={"headers": {"Authorization": "Bearer " + ARGS.api_key}})
    llm = ChatOllama(temperature=0, num_predict=20, **kw)
    whole = llm.invoke("Say hello to the sea.")
    assert whole.content and whole.usage_metadata["output_tokens"] > 0, whole
    assert "".join(chunk.content for chunk in llm.stream("Say hello to the sea.")) == whole.content
    city = ChatOllama(temperature=0.7, seed=1, num_predict=60, **kw).with_structured_output(City, method="json_schema").invoke("Describe Paris.")
    assert isinstance(city, City) and city.name, city
    msgs = [HumanMessage("What is the weather in Paris?"),
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "lc-call-1"}]),
            ToolMessage(get_weather("Paris"), tool_call_id="lc-call-1")]
    answer = llm.bind_tools([get_weather]).invoke(msgs)
    assert isinstance(answer.content, str) and answer.usage_metadata["input_tokens"] > 40, answer
    lps = ChatOllama(num_predict=3, logprobs=True, top_logprobs=1, **kw).invoke("Hi").response_metadata["logprobs"]
    assert len(lps) == 3 and all(len(lp.top_logprobs) == 1 for lp in lps), lps


def check_embed():
    c, m = client(), model()
    texts = ["The sea is deep.", "The sky is blue.", "The sea is deep."]
    r = c.embed(model=m, input=texts)
    vecs = r.embeddings
    assert len(vecs) == 3 and r.prompt_eval_count > 0, r
    for v in vecs:
        assert len(v) == len(vecs[0]) > 1 and abs(sum(x * x for x in v) - 1) < 1e-4, len(v)
    assert vecs[0] == vecs[2] and vecs[0] != vecs[1], "equal texts embed differently, or different texts alike"
    one = c.embed(model=m, input=texts[1]).embeddings
    assert len(one) == 1 and max(abs(a - b) for a, b in zip(one[0], vecs[1])) < 1e-5, "a batch changes the embedding"
    old = c.embeddings(model=m, prompt=texts[1]).embedding
    norm = sum(x * x for x in old) ** 0.5
    assert len(old) == len(vecs[0]) and max(abs(a / norm - b) for a, b in zip(old, vecs[1])) < 1e-5, "older /api/embeddings differs"
    kw = dict(model=m, base_url=ARGS.base_url, client_kwargs={"headers": {"Authorization": "Bearer " + ARGS.api_key}})
    lc = OllamaEmbeddings(**kw)
    docs = lc.embed_documents(texts[:2])
    query = lc.embed_query(texts[0])
    assert len(docs) == 2 and max(abs(a - b) for a, b in zip(docs[0], query)) < 1e-5, "embed_query differs from embed_documents"


def expect_error(status, fn, words):
    try:
        fn()
    except ollama.ResponseError as e:
        assert e.status_code == status and words in e.error, (e.status_code, e.error)
        return
    raise AssertionError("no error")


def check_errors():
    c, m = client(), model()
    expect_error(404, lambda: c.chat(model="no-such-model", messages=[{"role": "user", "content": "hi"}]), "not found")
    expect_error(400, lambda: c.chat(model=m, messages=[{"role": "user", "content": "What is this?", "images": ["iVBORw0KGgo="]}]), "image")
    expect_error(400, lambda: c.chat(model=m, messages=[{"role": "user", "content": "word " * 10000}]), "context length")
    expect_error(401, lambda: client(headers={"Authorization": "Bearer wrong"}).list(), "API key")


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("--api-key", required=True)
    ARGS = ap.parse_args()
    for name, fn in [("list, show, ps", check_list_show_ps), ("chat and its stream", check_chat_and_stream),
                     ("options", check_options), ("format", check_format), ("tool result turn", check_tool_result_turn),
                     ("generate", check_generate), ("X-Session-ID", check_session), ("load requests", check_load),
                     ("logprobs", check_logprobs), ("embed", check_embed), ("errors", check_errors), ("LangChain ChatOllama", check_langchain)]:
        run(name, fn)
    finish()


if __name__ == "__main__":
    main()
