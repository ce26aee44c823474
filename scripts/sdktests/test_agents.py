#!/usr/bin/env python3
"""OpenAI's Agents SDK (openai-agents) against a Tandem server.

Usage: test_agents.py BASE_URL MODEL

Over both of the SDK's model classes, OpenAIResponsesModel (the
Responses API, the SDK's default) and OpenAIChatCompletionsModel (chat
completions): an agent with a function tool and tool_choice "required"
calls it with arguments of the tool's types, gets its result back and
ends with a text answer (the SDK resets tool_choice after the calls); an
agent with output_type returns a validated Pydantic object; a streamed
run emits the tool call, its output and the answer as run items.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_structured_test.go runs it.
"""

import asyncio
import sys

from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner, function_tool,
                    set_tracing_disabled)
from openai import AsyncOpenAI
from pydantic import BaseModel
from harness import finish, run

set_tracing_disabled(True)  # no traces sent to OpenAI
CALLS = []


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    assert isinstance(a, int) and isinstance(b, int), (a, b)
    CALLS.append((a, b))
    return a + b


class City(BaseModel):
    name: str
    country: str


def main():
    base, model = sys.argv[1], sys.argv[2]
    # Greedy, so that the runs repeat; a repetition penalty, as for a 135M model.
    settings = dict(temperature=0, max_tokens=200, extra_body={"repetition_penalty": 1.1})
    kinds = {"responses": OpenAIResponsesModel, "chat": OpenAIChatCompletionsModel}
    loop = asyncio.new_event_loop()  # one loop for every run: the client's connections live in it
    client = AsyncOpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=300)

    def make(kind):
        return kinds[kind](model=model, openai_client=client)

    def calls_then_answer(kinds_seen, outputs):
        # Rounds of one or more calls (a model may call in parallel) each
        # followed by their outputs, then the answer.
        assert kinds_seen and kinds_seen[0] == "ToolCallItem", kinds_seen
        assert kinds_seen[-1] == "MessageOutputItem", kinds_seen
        pending = 0
        for k in kinds_seen[:-1]:
            if k == "ToolCallItem":
                pending += 1
            else:
                assert k == "ToolCallOutputItem" and pending > 0, kinds_seen
                pending -= 1
        assert pending == 0, kinds_seen
        assert outputs == [a + b for a, b in CALLS], (outputs, CALLS)

    def tool_loop(m):
        def fn():
            CALLS.clear()
            agent = Agent(name="calc", instructions="You are a calculator. Use the add tool.", tools=[add], model=make(m),
                          model_settings=ModelSettings(tool_choice="required", **settings))
            result = loop.run_until_complete(Runner.run(agent, "Use the add tool to compute 20 plus 22.", max_turns=6))
            outputs = [i.output for i in result.new_items if type(i).__name__ == "ToolCallOutputItem"]
            calls_then_answer([type(i).__name__ for i in result.new_items], outputs)
            assert isinstance(result.final_output, str) and result.final_output.strip(), result.final_output
        return fn

    def structured(m):
        def fn():
            agent = Agent(name="geo", instructions="Answer with the city and its country.", model=make(m), output_type=City,
                          model_settings=ModelSettings(**settings))
            result = loop.run_until_complete(Runner.run(agent, "Name the capital of Japan and its country."))
            assert isinstance(result.final_output, City), result.final_output
        return fn

    def streamed(m):
        def fn():
            CALLS.clear()
            agent = Agent(name="calc", instructions="Use the add tool.", tools=[add], model=make(m),
                          model_settings=ModelSettings(tool_choice="required", **settings))

            async def go():
                res = Runner.run_streamed(agent, "Use the add tool: 2 plus 3.", max_turns=6)
                seen, outputs = [], []
                async for ev in res.stream_events():
                    if ev.type == "run_item_stream_event":
                        seen.append(type(ev.item).__name__)
                        if ev.name == "tool_output":
                            outputs.append(ev.item.output)
                return res, seen, outputs

            res, seen, outputs = loop.run_until_complete(go())
            calls_then_answer(seen, outputs)
            assert isinstance(res.final_output, str) and res.final_output.strip(), res.final_output
        return fn

    for kind in kinds:
        run(f"{kind}: tool, result, answer", tool_loop(kind))
        run(f"{kind}: output_type", structured(kind))
        run(f"{kind}: streamed run", streamed(kind))
    loop.run_until_complete(client.close())
    finish()


if __name__ == "__main__":
    main()
