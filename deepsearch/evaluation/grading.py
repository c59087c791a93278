"""Grading an answer against the gold: `exact` (normalized match) or `llm` (SimpleQA's
rubric through the `grader` tool). An answer of a run that found nothing (status
not_found, failed, interrupted, or empty) is not attempted under both, with no LLM call."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from deepsearch.evaluation.results import Grade
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render

GraderName = Literal["llm", "exact"]
ATTEMPTED_STATUSES = frozenset({"answered", "forced"})
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_THOUSANDS = re.compile(r"(?<=\d)[,\u202f\u00a0 ](?=\d{3}\b)")
_NOT_WORD = re.compile(r"[^\w]+")


def normalize(text: str) -> list[str]:
    """Lowercase words without accents, punctuation or articles; 1,889 -> 1889."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = _THOUSANDS.sub("", text)
    text = _NOT_WORD.sub(" ", text.replace("_", " "))
    return _ARTICLES.sub(" ", text).split()


def answer_body(answer: str) -> str:
    """The answer without its reference definitions (their quotes are the sources'
    words, not the answer's)."""
    lines = answer.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith("[^")), len(lines))
    return "\n".join(lines[:cut])


def _contains(words: list[str], phrase: list[str]) -> bool:
    size = len(phrase)
    return size > 0 and any(words[i : i + size] == phrase for i in range(len(words) - size + 1))


def attempted(status: str, answer: str) -> bool:
    return status in ATTEMPTED_STATUSES and bool(answer.strip())


def exact_grade(answer: str, status: str, gold: str, aliases: Sequence[str] = ()) -> Grade:
    """correct when the gold answer or an alias appears, as whole words, in the answer."""
    if not attempted(status, answer):
        return "not_attempted"
    words = normalize(answer_body(answer))
    if any(_contains(words, normalize(target)) for target in (gold, *aliases)):
        return "correct"
    return "incorrect"


class GraderReply(BaseModel):
    think: str = Field("", max_length=600, description="one or two sentences")
    grade: Grade = Field(description="correct | incorrect | not_attempted")


def grader_messages(question: str, gold: str, aliases: Sequence[str], answer: str) -> list[Message]:
    targets = (
        gold if not aliases else render("grader_targets", gold=gold, aliases="; ".join(aliases))
    )
    content = render(
        "grader_input", question=question, targets=targets, answer=answer_body(answer).strip()
    )
    return [Message(role="user", content=content)]


async def llm_grade(
    llm: LLMClient, question: str, answer: str, status: str, gold: str, aliases: Sequence[str]
) -> Grade:
    if not attempted(status, answer):
        return "not_attempted"
    reply = await llm.generate_object(
        "grader", GraderReply, render("grader"), grader_messages(question, gold, aliases, answer)
    )
    return reply.value.grade
