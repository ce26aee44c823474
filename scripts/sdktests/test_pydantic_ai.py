#!/usr/bin/env python3
"""Pydantic AI (pydantic-ai-slim[openai]) against a Tandem server.

Usage: test_pydantic_ai.py BASE_URL MODEL

Over both of its OpenAI model classes, OpenAIChatModel (chat
completions) and OpenAIResponsesModel (the Responses API):
output_type=City, which Pydantic AI asks for as a forced call of its
final_result tool, returns a validated City, also with a function tool
offered beside it (every call it makes has arguments of the tool's
types, and its result goes back before the answer); NativeOutput(City)
asks for it as response_format json_schema; a streamed run yields text;
a streamed structured run yields partial Citys, then a whole one.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_structured_test.go runs it.
"""

import asyncio
import sys

from pydantic import BaseModel
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider
from harness import finish, run


class City(BaseModel):
    name: str
    country: str


def main():
    base, model = sys.argv[1], sys.argv[2]
    loop = asyncio.new_event_loop()  # one loop for every run: the provider's client lives in it
    provider = OpenAIProvider(base_url=base + "/v1", api_key="unused")
    # Greedy, so that the runs repeat; a repetition penalty, as for a 135M model.
    settings = {"temperature": 0, "max_tokens": 200, "extra_body": {"repetition_penalty": 1.1}}
    question = "Name the capital of Japan and its country."

    def tool_output(cls):
        def fn():
            agent = Agent(cls(model, provider=provider), output_type=City, model_settings=settings)
            out = loop.run_until_complete(agent.run(question))
            assert isinstance(out.output, City), out.output
            calls = [p for m in out.all_messages() for p in m.parts if p.part_kind == "tool-call"]
            assert calls and calls[-1].tool_name == "final_result", calls
        return fn

    def with_a_tool(cls):
        def fn():
            seen = []
            agent = Agent(cls(model, provider=provider), output_type=City, model_settings=settings, retries=3,
                          system_prompt="Look the country up with country_of, then give the final result.")

            @agent.tool_plain
            def country_of(city: str) -> str:
                """The country a city is in."""
                assert isinstance(city, str), city
                seen.append(city)
                return "Japan" if "tokyo" in city.lower() else "unknown"

            out = loop.run_until_complete(agent.run("Which country is Tokyo in?"))
            assert isinstance(out.output, City), out.output
            returns = [p for m in out.all_messages() for p in m.parts if p.part_kind == "tool-return"]
            assert len([r for r in returns if r.tool_name == "country_of"]) == len(seen), (returns, seen)
            print("  country_of calls:", seen)
        return fn

    def native(cls):
        def fn():
            agent = Agent(cls(model, provider=provider), output_type=NativeOutput(City), model_settings=settings)
            out = loop.run_until_complete(agent.run(question))
            assert isinstance(out.output, City), out.output
        return fn

    def stream_text(cls):
        def fn():
            agent = Agent(cls(model, provider=provider), model_settings={**settings, "max_tokens": 40})

            async def go():
                async with agent.run_stream("Say hello.") as res:
                    return [d async for d in res.stream_text(delta=True)]

            parts = loop.run_until_complete(go())
            assert parts and "".join(parts).strip(), parts
        return fn

    def stream_output(cls):
        def fn():
            agent = Agent(cls(model, provider=provider), output_type=City, model_settings=settings)

            async def go():
                async with agent.run_stream(question) as res:
                    return [o async for o in res.stream_output()]

            outs = loop.run_until_complete(go())
            assert outs and isinstance(outs[-1], City), outs
        return fn

    for cls in (OpenAIChatModel, OpenAIResponsesModel):
        name = cls.__name__
        run(f"{name}: output_type (final_result tool)", tool_output(cls))
        run(f"{name}: a function tool, then the output", with_a_tool(cls))
        run(f"{name}: NativeOutput (json_schema)", native(cls))
        run(f"{name}: streamed text", stream_text(cls))
        run(f"{name}: streamed output", stream_output(cls))
    finish()


if __name__ == "__main__":
    main()
