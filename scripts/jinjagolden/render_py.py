#!/usr/bin/env python3
"""Second oracle for gen.mjs: renders chat templates with Python jinja2 the way
transformers' apply_chat_template does (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, json.dumps tojson, raise_exception,
strftime_now, the {% generation %} tag as a no-op).

Reads a JSON list of jobs on stdin:
  {"template": str, "vars": {...}, "now": "2024-07-26T10:30:05"}
and writes a JSON list of results: {"out": str} or {"error": str}.
Only the standard library and jinja2 are needed; gen.mjs skips this oracle
when python3 or jinja2 is missing.
"""
import datetime
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """Accepts {% generation %}...{% endgeneration %} and renders the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def build_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    jobs = json.load(sys.stdin)
    results = []
    envs = {}
    compiled = {}
    for job in jobs:
        now = datetime.datetime.fromisoformat(job["now"])
        env = envs.setdefault(job["now"], build_env(now))
        try:
            key = (job["now"], job["template"])
            if key not in compiled:
                compiled[key] = env.from_string(job["template"])
            out = compiled[key].render(**job["vars"])
            results.append({"out": out})
        except Exception as e:  # noqa: BLE001 - every failure is a result
            results.append({"error": "%s: %s" % (type(e).__name__, e)})
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
