#!/usr/bin/env python3
"""Writes tool_loop_qwen2.5.txt: the prompt transformers renders for the
request in tool_loop_qwen2.5.json with the Qwen2.5 template, after vLLM's
chat_utils._postprocess_messages (tool-call arguments as dicts; empty,
malformed or non-object ones as {}). Run from this directory; needs jinja2.
"""
import json
import subprocess

conv = json.load(open("tool_loop_qwen2.5.json"))
msgs = conv["messages"]
for m in msgs:
    if m["role"] == "assistant" and isinstance(m.get("tool_calls"), list):
        for call in m["tool_calls"]:
            fn = call["function"]
            args = fn.get("arguments")
            if args:
                try:
                    args = json.loads(args) if isinstance(args, str) else args
                except ValueError:
                    args = {}
            fn["arguments"] = args if isinstance(args, dict) else {}
template = open("../../chattemplate/testdata/templates/qwen2.5.jinja").read()
job = [{"template": template, "now": "2024-07-26T10:30:05",
        "vars": {"messages": msgs, "tools": conv["tools"], "add_generation_prompt": True}}]
out = subprocess.run(["python3", "../../../scripts/jinjagolden/render_py.py"], input=json.dumps(job),
                     capture_output=True, text=True, check=True).stdout
open("tool_loop_qwen2.5.txt", "w").write(json.loads(out)[0]["out"])
