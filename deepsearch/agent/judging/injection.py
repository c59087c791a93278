"""Pages that talk to the model: text written to instruct an LLM that reads it.

A page can say "ignore your previous instructions", forge a `SYSTEM:` line or the
closing tag of the prompt's knowledge block, or tell the reader what it "must
answer". The prompts say knowledge is data (prompts/agent.md, eval_strict.md) and
its tags cannot be forged (prompts.untrusted), but a model may still repeat such a
page's claim, and a verbatim quote proves only that the page said it. So an answer
whose cited support is only pages like that is not reported as well supported
(confidence.py, `instructed_sources`; a warning in the result).

`instructions_in` is a cheap, deliberately plain pattern match, no model call: it
looks for the usual forms and nothing subtler. A page *about* prompt injection is
flagged too; that costs only confidence, and only when such pages are all the
support an answer has.
"""

from __future__ import annotations

import re
from functools import lru_cache

MAX_SIGNALS = 3
_PATTERNS = [
    # "ignore / disregard / forget (all) (the|your) previous instructions"
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|earlier|preceding|former|system|original)\s+"
    r"(?:instructions?|prompts?|rules|directions|messages|context)",
    # a forged role line ("SYSTEM:", capitals: "System: Linux" is a spec sheet's) or a
    # chat-template token
    r"(?:^|\n)[ \t>*#]*(?:(?-i:SYSTEM|ASSISTANT|DEVELOPER)|system\s+(?:prompt|message))\s*:",
    r"<\|?\s*(?:im_start|im_end|system|endoftext)\s*\|?>|\[/?(?:INST|SYS)\]",
    # a forged closing or opening tag of a prompt's sections
    r"<\s*/?\s*(?:knowledge|context|original-question|current-question|diary|"
    r"action-answer|system|instructions?)\b[^>\n]{0,40}>",
    # orders about the answer ("you must run the installer" is a tutorial's)
    r"\byou\s+(?:must|should|will|have\s+to|are\s+(?:instructed|required|told)\s+to)\s+"
    r"(?:now\s+|always\s+|only\s+)?(?:answer|reply|respond|conclude|state\s+that|say\s+that)\b",
    r"\b(?:note|message|instructions?|attention)\s*(?:to|for|,|:)\s*(?:the\s+|any\s+|all\s+)?"
    r"(?:ai|llms?|ai\s+assistants?|language\s+models?|chatbots?)\b",
    r"\b(?:new|updated|real)\s+instructions?\s*:",
]
_INSTRUCTION = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)


@lru_cache(maxsize=32)  # at most 32 texts held (each <= 400,000 characters)
def instructions_in(text: str) -> tuple[str, ...]:
    """The first few passages of `text` that address the model reading it (each the
    matched words, whitespace collapsed); () for an ordinary page. Cached: a result
    is judged more than once (~0.25 s of CPU a megabyte)."""
    found: list[str] = []
    for match in _INSTRUCTION.finditer(text):
        words = " ".join(match.group(0).split())
        if words not in found:
            found.append(words)
        if len(found) >= MAX_SIGNALS:
            break
    return tuple(found)
