"""serve's output is cleaned like the CLI's: no C1 control character (U+0080-U+009F;
`\\x9b` is a one-byte CSI) from the model or a source reaches a chat client, whole or
streamed, in the answer, its quotes or the reasoning."""

from __future__ import annotations

import re

from tests.cli.test_control_characters import C1, LACED_STEP
from tests.cli.test_end_to_end import QUESTION, SEARCH, VISIT, router
from tests.fakes.openai_server import FakeOpenAIServer
from tests.server.conftest import Serve

USER = [{"role": "user", "content": QUESTION}]
ANY_C1 = re.compile("[\x80-\x9f]")
# The step's reasoning quotes a page too: it is streamed as reasoning_content.
LACED_SEARCH = {**SEARCH, "think": f"find{C1} the films"}


def test_a_whole_answer_carries_no_c1_character(serve: Serve) -> None:
    with FakeOpenAIServer(router([LACED_SEARCH, VISIT, LACED_STEP])) as llm:
        server = serve(llm)
        done = server.client().chat.completions.create(model="deepsearch", messages=USER)
    message = done.choices[0].message
    assert "Stephen King" in (message.content or "") and message.annotations
    assert not ANY_C1.search(done.model_dump_json()), "a C1 character reached the client"


def test_a_streamed_answer_carries_no_c1_character(serve: Serve) -> None:
    with FakeOpenAIServer(router([LACED_SEARCH, VISIT, LACED_STEP])) as llm:
        server = serve(llm)
        stream = server.client().chat.completions.create(
            model="deepsearch", messages=USER, stream=True
        )
        chunks = [chunk.model_dump_json() for chunk in stream]
    text = "".join(chunks)
    assert "Stephen King" in text and "reasoning_content" in text
    assert not ANY_C1.search(text), "a C1 character reached the client"
