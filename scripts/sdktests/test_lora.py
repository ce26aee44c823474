#!/usr/bin/env python3
"""LoRA adapters through clients we did not write: the OpenAI Python SDK
and LangChain's ChatOpenAI, against a Tandem server started with
--lora-modules MODULE=FILE and --lora FILE --lora-init-without-apply (the
same file).

Usage: test_lora.py BASE_URL BASE_MODEL MODULE

models.list() lists the module after the base model, with the base as
its parent; a chat completion naming the module (greedy) answers otherwise
than the base model, the same on a second request and through LangChain;
the base model with llama-server's per-request lora list (extra_body,
id 0 at scale 1: the same file) answers as the module does; an unknown
model is the SDK's NotFoundError.
Prints PASS/FAIL lines and "N passed, M failed"; exits non-zero on any
failure. cmd/tandem/e2e_lora_test.go runs it.
"""

import sys

import openai
from langchain_openai import ChatOpenAI
from harness import finish, run

def main():
    base, model, module = sys.argv[1], sys.argv[2], sys.argv[3]
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=120)
    msgs = [{"role": "user", "content": "Once upon a time"}]

    def answer(name, **kw):
        r = client.chat.completions.create(model=name, messages=msgs, max_tokens=12, temperature=0, **kw)
        return r.choices[0].message.content

    def check_models():
        ids = [m.id for m in client.models.list()]
        assert ids == [model, module], ids
        card = client.models.retrieve(module)
        assert card.id == module and getattr(card, "parent", None) == model, card

    def check_module_answers():
        a, b, plain = answer(module), answer(module), answer(model)
        assert a == b, (a, b)
        assert a != plain, (a, plain)

    def check_lora_list():
        assert answer(model, extra_body={"lora": [{"id": 0, "scale": 1}]}) == answer(module)

    def check_langchain():
        llm = ChatOpenAI(base_url=base + "/v1", api_key="unused", model=module, temperature=0, max_tokens=12, max_retries=0)
        assert llm.invoke("Once upon a time").content == answer(module)

    def check_unknown():
        try:
            answer("no-such-adapter")
        except openai.NotFoundError as e:
            assert e.status_code == 404
            return
        raise AssertionError("an unknown model answered")

    for name, fn in [("models", check_models), ("module_answers", check_module_answers),
                     ("lora_list", check_lora_list), ("langchain", check_langchain), ("unknown", check_unknown)]:
        run(name, fn)
    finish()


if __name__ == "__main__":
    main()
