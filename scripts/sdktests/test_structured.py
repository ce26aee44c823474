#!/usr/bin/env python3
"""Structured outputs through the official OpenAI Python SDK.

Usage: test_structured.py BASE_URL MODEL [--api-key KEY]

For 20 Pydantic models (nested objects, arrays, enums, optional fields,
unions, literals, numbers with bounds), asks the server for an instance
with `client.chat.completions.parse(response_format=Model)`, and the same
with the SDK's streaming helper, and checks that what comes back
validates (the SDK parses it into the model; a second validation runs on
the raw text). Then response_format json_object and structural_tag, a GBNF grammar, structured_outputs
choice and regex, a schema the engine cannot compile (400), and function
tools through the Responses API (required, auto, streamed, a call →
function_call_output → answer loop).

Prints one PASS/FAIL line per check and "N passed, M failed"; exits
non-zero on any failure. cmd/tandem/e2e_structured_test.go runs it.
"""

import argparse
import enum
import json
import re
from typing import List, Literal, Optional, Union

import openai
from pydantic import BaseModel, Field
from harness import finish, run


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Point(BaseModel):
    x: int
    y: int


class City(BaseModel):
    name: str
    country: str
    population: int


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=150)


class Address(BaseModel):
    street: str
    city: str
    zip: Optional[str]


class Contact(BaseModel):
    person: Person
    address: Address


class Team(BaseModel):
    name: str
    members: List[Person]


class Paint(BaseModel):
    color: Color
    liters: float


class Flag(BaseModel):
    enabled: bool
    reason: Optional[str]


class Shape(BaseModel):
    kind: Literal["circle", "square"]
    size: float


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Union[Cat, Dog]


class Tags(BaseModel):
    tags: List[str]


class Matrix(BaseModel):
    rows: List[List[int]]


class Book(BaseModel):
    title: str
    author: str
    year: int
    genres: List[str]


class Answer(BaseModel):
    answer: str
    confidence: float = Field(ge=0, le=1)


class Step(BaseModel):
    explanation: str
    output: str


class Reasoning(BaseModel):
    steps: List[Step]
    final_answer: str


class Event(BaseModel):
    name: str
    date: str
    participants: List[str]


class Weather(BaseModel):
    city: str
    unit: Literal["celsius", "fahrenheit"]
    temperature: float


class Inventory(BaseModel):
    items: List[Paint]
    total: Optional[int]


class Node(BaseModel):
    value: int
    children: List[Point]


MODELS = [
    (Point, "Give a point with small integer coordinates."),
    (City, "Describe the capital of France."),
    (Person, "Invent a person."),
    (Address, "Invent a postal address."),
    (Contact, "Invent a contact card."),
    (Team, "Invent a team of two people."),
    (Paint, "Describe a can of paint."),
    (Flag, "Is the feature enabled?"),
    (Shape, "Describe a shape."),
    (Pet, "Describe a pet."),
    (Tags, "Give three tags for a cooking blog."),
    (Matrix, "Give a 2x2 identity matrix."),
    (Book, "Describe a famous novel."),
    (Answer, "What is 2+2?"),
    (Reasoning, "Solve 3*4 step by step."),
    (Event, "Invent a meeting."),
    (Weather, "What is the weather in Paris?"),
    (Inventory, "List two cans of paint."),
    (Node, "Give a node with two child points."),
    (Color, None),  # an enum alone is not an object: wrapped below
]

ARGS = None

# A 135M model at temperature 0 repeats array items until max_tokens (the
# constraint keeps every prefix valid, but a cut answer does not parse):
# sample with a repetition penalty, as small-model clients do. An answer
# cut by max_tokens is retried with other seeds, up to 4 in all (it is not
# invalid, only unfinished); anything that finishes must validate.
SAMPLING = dict(max_tokens=600, temperature=0.7, seed=5, extra_body={"repetition_penalty": 1.1})


def with_retry(call, tries=4):
    for i in range(tries):
        try:
            return call(dict(SAMPLING, seed=SAMPLING["seed"] + i))
        except openai.LengthFinishReasonError:
            if i == tries - 1:
                raise


def client():
    return openai.OpenAI(base_url=ARGS.base_url + "/v1", api_key=ARGS.api_key or "unused", max_retries=0, timeout=300)


class ColorChoice(BaseModel):
    color: Color


def parse_check(model, prompt):
    def fn():
        c = client()
        msgs = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": prompt}]
        r = with_retry(lambda kw: c.chat.completions.parse(model=ARGS.model, messages=msgs, response_format=model, **kw))
        msg = r.choices[0].message
        assert msg.parsed is not None, f"nothing parsed: {msg.content!r} ({r.choices[0].finish_reason})"
        model.model_validate_json(msg.content)
        assert r.choices[0].finish_reason == "stop", r.choices[0].finish_reason
    return fn


def stream_check(model, prompt):
    def fn():
        c = client()
        msgs = [{"role": "user", "content": prompt}]
        def call(kw):
            with c.chat.completions.stream(model=ARGS.model, messages=msgs, response_format=model, **kw) as s:
                for _ in s:
                    pass
                return s.get_final_completion()
        final = with_retry(call)
        msg = final.choices[0].message
        assert msg.parsed is not None, f"nothing parsed: {msg.content!r}"
        model.model_validate_json(msg.content)
    return fn


def other_checks():
    c = client()

    def json_object():
        for i in range(4):  # an answer cut by max_tokens is retried with another seed
            r = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "Describe Paris in JSON."}],
                                          response_format={"type": "json_object"}, **dict(SAMPLING, seed=SAMPLING["seed"] + i))
            if r.choices[0].finish_reason != "length":
                break
        assert r.choices[0].finish_reason == "stop", r.choices[0].finish_reason
        v = json.loads(r.choices[0].message.content)
        assert isinstance(v, dict), v

    def choice():
        r = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "Is the sky blue? Answer yes or no."}],
                                      max_tokens=10, extra_body={"structured_outputs": {"choice": ["yes", "no"]}})
        assert r.choices[0].message.content in ("yes", "no"), r.choices[0].message.content

    def regex():
        r = c.completions.create(model=ARGS.model, prompt="A phone number: ", max_tokens=30,
                                 extra_body={"guided_regex": r"\d{3}-\d{3}-\d{4}"})
        assert re.fullmatch(r"\d{3}-\d{3}-\d{4}", r.choices[0].text), r.choices[0].text

    def gbnf():
        # llama.cpp's grammar format, as vLLM's grammar field takes it
        r = c.completions.create(model=ARGS.model, prompt="Two numbers added: ", max_tokens=30,
                                 extra_body={"structured_outputs": {"grammar": 'root ::= num " + " num\nnum ::= [1-9] [0-9]{0,2}'}})
        assert re.fullmatch(r"[1-9][0-9]{0,2} \+ [1-9][0-9]{0,2}", r.choices[0].text), r.choices[0].text

    def structural_tag():
        # free text, but every "<f=" opens a call: weather> {"city": …} </f>
        tag = {"type": "structural_tag", "triggers": ["<f="],
               "structures": [{"begin": "<f=weather>", "end": "</f>",
                               "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}]}
        r = c.chat.completions.create(model=ARGS.model, max_tokens=60, response_format=tag,
                                      messages=[{"role": "user", "content": "Write <f=weather>{\"city\": \"Paris\"}</f> to ask for the weather in Paris."}])
        text = r.choices[0].message.content
        for m in re.finditer(r"<f=", text):
            rest = text[m.end():]
            if not rest.startswith("weather>"):
                assert r.choices[0].finish_reason == "length" and len(rest) < len("weather>"), text
                continue
            body, sep, _ = rest[len("weather>"):].partition("</f>")
            if sep:
                v = json.loads(body)
                assert isinstance(v.get("city"), str) and set(v) == {"city"}, text
            else:
                assert r.choices[0].finish_reason == "length", text

    def beam_search():
        # beam search under a constraint: every beam keeps to it
        r = c.completions.create(model=ARGS.model, prompt="A phone number: ", max_tokens=20, n=2,
                                 extra_body={"use_beam_search": True, "structured_outputs": {"regex": r"\d{3}-\d{4}"}})
        assert len(r.choices) == 2, r.choices
        for ch in r.choices:
            assert re.fullmatch(r"\d{3}-\d{4}", ch.text) and ch.finish_reason == "stop", (ch.text, ch.finish_reason)
        r = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "Is water wet? yes or no"}], max_tokens=5, n=2,
                                      extra_body={"use_beam_search": True, "structured_outputs": {"choice": ["yes", "no", "maybe"]}})
        for ch in r.choices:
            assert ch.message.content in ("yes", "no", "maybe"), ch.message.content

    def bad_schema():
        try:
            c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "x"}], max_tokens=5,
                                      response_format={"type": "json_schema", "json_schema": {"name": "b", "schema": {"type": "object", "properties": {"a": {"$ref": "#/nope"}}}}})
        except openai.BadRequestError as e:
            assert "nope" in str(e) or "ref" in str(e).lower(), str(e)
            return
        raise AssertionError("an uncompilable schema was accepted")

    tools = [
        {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                                                         "required": ["city", "unit"], "additionalProperties": False}}},
        {"type": "function", "function": {"name": "add", "description": "Add two integers.",
                                          "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                                         "required": ["a", "b"], "additionalProperties": False}}},
        {"type": "function", "function": {"name": "search", "description": "Search the web.",
                                          "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
                                                         "required": ["query"], "additionalProperties": False}}},
    ]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}

    def valid_args(name, args):
        schema = schemas[name]
        assert set(schema["required"]) <= set(args) <= set(schema["properties"]), (name, args)
        for k, v in args.items():
            p = schema["properties"][k]
            if p.get("type") == "integer":
                assert isinstance(v, int) and p.get("minimum", v) <= v <= p.get("maximum", v), (k, v)
            elif p.get("type") == "string":
                assert isinstance(v, str), (k, v)
            elif "enum" in p:
                assert v in p["enum"], (k, v)

    def required(prompt):
        def fn():
            # create() returns a call cut by max_tokens (finish_reason
            # "length") instead of raising: retry it like with_retry does.
            for i in range(4):
                r = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": prompt}],
                                              tools=tools, tool_choice="required", **dict(SAMPLING, seed=SAMPLING["seed"] + i))
                if r.choices[0].finish_reason != "length":
                    break
            ch = r.choices[0]
            assert ch.finish_reason == "tool_calls" and ch.message.tool_calls, (ch.finish_reason, ch.message)
            for call in ch.message.tool_calls:
                assert call.type == "function" and call.id, call
                valid_args(call.function.name, json.loads(call.function.arguments))
        return fn

    def named():
        r = with_retry(lambda kw: c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "What is 2 plus 3?"}],
                                                             tools=tools, tool_choice={"type": "function", "function": {"name": "add"}}, **kw))
        calls = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "stop" and len(calls) == 1 and calls[0].function.name == "add", r.choices[0]
        valid_args("add", json.loads(calls[0].function.arguments))

    def streamed():
        stream = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=tools,
                                           tool_choice="required", stream=True, **SAMPLING)
        calls, finish = {}, None
        for chunk in stream:
            for ch in chunk.choices:
                for tc in ch.delta.tool_calls or []:
                    cur = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                    cur["name"] += tc.function.name or ""
                    cur["arguments"] += tc.function.arguments or ""
                finish = ch.finish_reason or finish
        assert finish == "tool_calls" and calls, (finish, calls)
        for cur in calls.values():
            valid_args(cur["name"], json.loads(cur["arguments"]))

    def tool_loop():
        msgs = [{"role": "user", "content": "Use the add tool: what is 20 plus 22?"}]
        r = with_retry(lambda kw: c.chat.completions.create(model=ARGS.model, messages=msgs, tools=tools,
                                                             tool_choice={"type": "function", "function": {"name": "add"}}, **kw))
        call = r.choices[0].message.tool_calls[0]
        args = json.loads(call.function.arguments)
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
        msgs.append({"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])})
        final = c.chat.completions.create(model=ARGS.model, messages=msgs, tools=tools, max_tokens=40, temperature=0)
        assert final.choices[0].message.content, final.choices[0]

    # tool_choice auto (and no tool_choice): the server reads the calls the
    # model writes, in the hermes syntax (--tool-call-parser hermes). The
    # 135M model does not write calls by itself, so a regex makes it.
    call_text = r'<tool_call>\n\{"name": "get_weather", "arguments": \{"city": "Paris", "unit": "celsius"\}\}\n</tool_call>'
    # Greedy, and room to spare: sampled, the forced text takes 60 to 70
    # tokens (the constraint allows many tokenizations of it).
    forced = dict(max_tokens=200, temperature=0, extra_body={"structured_outputs": {"regex": r"Let me check\.\n" + call_text}})
    weather = [{"role": "user", "content": "What is the weather in Paris?"}]

    def check_call(ch):
        assert ch.finish_reason == "tool_calls" and ch.message.content == "Let me check.", ch
        call = ch.message.tool_calls[0]
        assert len(ch.message.tool_calls) == 1 and call.id and call.type == "function" and call.function.name == "get_weather", call
        assert call.function.arguments == '{"city":"Paris","unit":"celsius"}', call.function.arguments
        return call

    def auto_call():
        check_call(c.chat.completions.create(model=ARGS.model, messages=weather, tools=tools, tool_choice="auto", **forced).choices[0])

    def auto_streamed():
        first, later, content = [], [], ""
        for chunk in c.chat.completions.create(model=ARGS.model, messages=weather, tools=tools, stream=True, **forced):
            for ch in chunk.choices:
                content += ch.delta.content or ""
                for tc in ch.delta.tool_calls or []:
                    (first if tc.id else later).append(tc)
        assert content == "Let me check.", content
        assert len(first) == 1 and first[0].index == 0 and first[0].type == "function", first
        assert first[0].function.name == "get_weather" and first[0].function.arguments == "", first
        assert later and all(tc.index == 0 and tc.type is None and tc.function.name is None for tc in later), later
        assert "".join(tc.function.arguments for tc in later) == '{"city":"Paris","unit":"celsius"}', later
        with c.chat.completions.stream(model=ARGS.model, messages=weather, tools=tools, **forced) as s:
            events = [e.type for e in s]
            final = s.get_final_completion()
        assert "tool_calls.function.arguments.done" in events, events
        check_call(final.choices[0])

    def auto_text():
        r = c.chat.completions.create(model=ARGS.model, messages=[{"role": "user", "content": "Say hello."}], tools=tools,
                                      max_tokens=20, temperature=0)
        assert r.choices[0].message.tool_calls is None and r.choices[0].message.content, r.choices[0]

    def auto_loop():
        call = check_call(c.chat.completions.create(model=ARGS.model, messages=weather, tools=tools, **forced).choices[0])
        msgs = weather + [{"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                          {"role": "tool", "tool_call_id": call.id, "content": "18 degrees, cloudy"}]
        final = c.chat.completions.create(model=ARGS.model, messages=msgs, tools=tools, max_tokens=40, temperature=0)
        assert final.choices[0].message.content, final.choices[0]

    for i, prompt in enumerate(["What is the weather in Paris in celsius?", "Add 2 and 40.", "Search the web for Go tutorials."]):
        run(f"tool_choice required {i}", required(prompt))
    run("tool_choice named", named)
    run("tool calls streamed", streamed)
    run("tool loop: call, result, answer", tool_loop)
    run("tool_choice auto: a call", auto_call)
    run("tool_choice auto: streamed", auto_streamed)
    run("tool_choice auto: text", auto_text)
    run("tool_choice auto: call, result, answer", auto_loop)
    run("json_object", json_object)
    run("structured_outputs choice", choice)
    run("guided_regex", regex)
    run("GBNF grammar", gbnf)
    run("structural_tag", structural_tag)
    run("beam search under a constraint", beam_search)
    run("uncompilable schema is a 400", bad_schema)
    responses_checks(c, tools, valid_args, forced)


def responses_checks(c, tools, valid_args, forced):
    """Function tools through the Responses API, read with the SDK's types."""
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

    flat = [{"type": "function", **t["function"]} for t in tools]  # the Responses API's form

    def required(prompt):
        def fn():
            for i in range(4):  # a cut answer is text with status incomplete: another seed
                r = c.responses.create(model=ARGS.model, input=prompt, tools=flat, tool_choice="required", max_output_tokens=600, temperature=0.7,
                                       extra_body={"repetition_penalty": 1.1, "seed": SAMPLING["seed"] + i})
                if r.status == "completed":
                    break
            assert r.status == "completed", r
            assert r.output and all(isinstance(it, ResponseFunctionToolCall) for it in r.output), r.output
            for call in r.output:
                assert call.id.startswith("fc_") and call.call_id.startswith("call_") and call.status == "completed", call
                valid_args(call.name, json.loads(call.arguments))
        return fn

    weather = "What is the weather in Paris?"
    forced = dict(max_output_tokens=forced["max_tokens"], temperature=forced["temperature"], extra_body=forced["extra_body"])

    def check(r):
        kinds = [ResponseOutputMessage, ResponseFunctionToolCall]  # the stream helper's are subclasses
        assert r.status == "completed" and len(r.output) == 2 and all(map(isinstance, r.output, kinds)), r.output
        assert r.output_text == "Let me check.", r.output_text
        call = r.output[1]
        assert call.name == "get_weather" and call.arguments == '{"city":"Paris","unit":"celsius"}' and call.call_id, call
        return r

    def auto():
        check(c.responses.create(model=ARGS.model, input=weather, tools=flat, **forced))

    def streamed():
        with c.responses.stream(model=ARGS.model, input=weather, tools=flat, **forced) as s:
            events = [e for e in s]
            final = s.get_final_response()
        types = [e.type for e in events]
        for t in ["response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
                  "response.output_item.done", "response.completed"]:
            assert t in types, (t, types)
        assert [e.sequence_number for e in events] == list(range(len(events))), types
        args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
        assert args == '{"city":"Paris","unit":"celsius"}', args
        check(final)

    def loop():
        r = check(c.responses.create(model=ARGS.model, input=weather, tools=flat, **forced))
        result = {"type": "function_call_output", "call_id": r.output[1].call_id, "output": "18 degrees, cloudy"}
        final = c.responses.create(model=ARGS.model, previous_response_id=r.id, input=[result], tools=flat, max_output_tokens=40, temperature=0)
        assert final.output_text and not [it for it in final.output if it.type == "function_call"], final.output
        # The same conversation resent as items, without previous_response_id.
        items = [{"role": "user", "content": weather}] + [it.model_dump(exclude_none=True) for it in r.output] + [result]
        again = c.responses.create(model=ARGS.model, input=items, tools=flat, max_output_tokens=40, temperature=0)
        assert again.output_text == final.output_text, (again.output_text, final.output_text)

    for i, prompt in enumerate(["What is the weather in Paris in celsius?", "Add 2 and 40."]):
        run(f"responses: tool_choice required {i}", required(prompt))
    run("responses: tool_choice auto, a call", auto)
    run("responses: a call streamed", streamed)
    run("responses: call, function_call_output, answer", loop)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("base_url")
    ap.add_argument("model")
    ap.add_argument("--api-key", default="")
    ARGS = ap.parse_args()
    for model, prompt in MODELS:
        if model is Color:
            model, prompt = ColorChoice, "Pick a color."
        run(f"parse {model.__name__}", parse_check(model, prompt))
    for model, prompt in MODELS[:5]:
        run(f"stream {model.__name__}", stream_check(model, prompt))
    other_checks()
    finish()


if __name__ == "__main__":
    main()
