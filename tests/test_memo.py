"""Caches bounded in bytes (issue 36, item 23): the text-feature caches of a long-lived
process (`serve`) hold at most their byte budget, whatever the texts' sizes."""

from __future__ import annotations

import threading

import pytest

from deepsearch.agent.retrieval import lexical
from deepsearch.llm import tokens
from deepsearch.memo import text_bytes, weighed_cache


def test_the_least_recently_used_go_first_within_the_byte_budget() -> None:
    calls: list[str] = []

    @weighed_cache(100, lambda text: len(text))
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    shout("a" * 40)
    shout("b" * 40)
    shout("a" * 40)  # a is now the most recent
    shout("c" * 40)  # 120 bytes: b, the least recent, goes
    assert shout.cache_info().bytes == 80 and shout.cache_info().entries == 2
    shout("a" * 40)
    shout("b" * 40)
    assert calls == ["a" * 40, "b" * 40, "c" * 40, "b" * 40]
    assert shout("x" * 500) == "X" * 500 and shout.cache_info().bytes <= 100, "too big: not kept"


def test_concurrent_callers_keep_the_account_right() -> None:
    @weighed_cache(10_000, text_bytes)
    def same(text: str) -> str:
        return text

    threads = [
        threading.Thread(target=lambda i=i: [same(f"{i}-{j}") for j in range(200)])
        for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = same.cache_info()
    assert info.bytes <= 10_000 and info.bytes == sum(text_bytes(key[0]) for key in same._entries)


@pytest.mark.parametrize(
    ("cached", "budget"),
    [(lexical.tf_features, 1_000_000), (lexical.words, 200_000), (tokens._count_block, 50_000)],
    ids=["tf_features", "words", "token_counts"],
)
def test_the_text_feature_caches_are_bounded_in_bytes(
    cached: object, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cached, "max_bytes", budget)
    cached.cache_clear()  # type: ignore[attr-defined]
    for i in range(60):
        text = f"snippet {i} " + "lorem ipsum dolor sit amet " * 80  # ~2,200 characters
        if cached is tokens._count_block:
            cached(text, "o200k_base")  # type: ignore[operator]
        else:
            cached(text)  # type: ignore[operator]
    info = cached.cache_info()  # type: ignore[attr-defined]
    assert 0 < info.bytes <= budget and info.entries < 60, "full, and bounded"
    cached.cache_clear()  # type: ignore[attr-defined]
