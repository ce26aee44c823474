#!/usr/bin/env python3
"""LangChain against a Tandem server: a tool loop and structured output.

Usage: test_langchain.py BASE_URL MODEL

With langchain-openai's ChatOpenAI: bind_tools with tool_choice
"required" gives tool calls whose arguments fit the tools; the tools' results
go back as ToolMessages and the model answers in text (a two-step tool
loop); with_structured_output(PydanticModel) returns a validated object;
OpenAIEmbeddings (check_embedding_ctx_length off: its default tokenizes
with OpenAI's tiktoken, whose ids are not this model's) embeds documents
and a query alike.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_structured_test.go runs it.
"""

import sys

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from pydantic import BaseModel
from harness import finish, run

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"It is sunny and 21 degrees in {city}."


class City(BaseModel):
    name: str
    country: str


def main():
    base, model = sys.argv[1], sys.argv[2]
    # Sampling with a repetition penalty, as for a 135M model (see test_structured.py).
    llm = ChatOpenAI(base_url=base + "/v1", api_key="unused", model=model, temperature=0.7, max_tokens=300,
                     max_retries=0, timeout=300, seed=5, extra_body={"repetition_penalty": 1.1})
    tools = {"add": add, "get_weather": get_weather}

    def tool_loop():
        msgs = [HumanMessage("Use the add tool to compute 20 plus 22.")]
        ai = llm.bind_tools(list(tools.values()), tool_choice="required").invoke(msgs)
        assert ai.tool_calls, ai
        msgs.append(ai)
        for call in ai.tool_calls:
            assert call["name"] in tools, call
            msgs.append(ToolMessage(str(tools[call["name"]].invoke(call["args"])), tool_call_id=call["id"]))
        final = llm.bind_tools(list(tools.values())).invoke(msgs)
        assert isinstance(final.content, str) and final.content.strip(), final

    def named_tool():
        ai = llm.bind_tools(list(tools.values()), tool_choice="get_weather").invoke([HumanMessage("Weather in Lima?")])
        assert len(ai.tool_calls) == 1 and ai.tool_calls[0]["name"] == "get_weather", ai.tool_calls
        assert isinstance(ai.tool_calls[0]["args"].get("city"), str), ai.tool_calls

    def structured():
        out = llm.with_structured_output(City).invoke("Name the capital of Japan and its country.")
        assert isinstance(out, City), out

    def embeddings():
        emb = OpenAIEmbeddings(base_url=base + "/v1", api_key="unused", model=model, check_embedding_ctx_length=False,
                               max_retries=0, timeout=300)
        docs = emb.embed_documents(["Tokyo is the capital of Japan.", "Lima is the capital of Peru."])
        query = emb.embed_query("Tokyo is the capital of Japan.")
        assert len(docs) == 2 and len(docs[0]) == len(query) > 1, (len(docs), len(query))
        assert max(abs(a - b) for a, b in zip(docs[0], query)) < 1e-5, "embed_query differs from embed_documents"
        cos = sum(a * b for a, b in zip(docs[0], docs[1]))
        assert cos < 0.999, cos

    run("bind_tools: call, result, answer", tool_loop)
    run("bind_tools: a named tool", named_tool)
    run("with_structured_output", structured)
    run("OpenAIEmbeddings", embeddings)
    finish()


if __name__ == "__main__":
    main()
