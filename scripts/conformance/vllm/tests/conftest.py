"""Tandem's stand-in for vLLM's tests/conftest.py (scripts/conformance).

vLLM's own conftest builds HF and vLLM runners on torch; the OpenAI HTTP
tests need only these fixtures from it.
"""

import pytest


@pytest.fixture
def sample_json_schema():
    return {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "skills": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "age", "skills"],
    }
