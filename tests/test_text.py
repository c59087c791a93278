"""The one definition each of a sentence, a number and a CJK character (deepsearch.text).

The properties pin the places where the former implementations disagreed: page
chunks did not end a sentence at a CJK stop without a blank after it (answer
sentences did); the dedup veto read "13,527" as two numbers and "3.5" as 3 and 5
(quote support did not); answer weighting counted Hangul and the Yijing hexagram
block as CJK (the tokenizer did not).
"""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from deepsearch.agent.citations.references import answer_sentences, text_weight
from deepsearch.agent.retrieval.passages import chunk_spans
from deepsearch.text import (
    CJK_STOPS,
    LATIN_STOPS,
    cjk_count,
    ends_sentence,
    is_cjk,
    numbers_in,
    sentence_breaks,
)

STOPS = LATIN_STOPS + CJK_STOPS


def reference_breaks(text: str) -> list[tuple[int, int]]:
    """The definition spelled out character by character."""
    out = []
    i = 1
    while i <= len(text):
        if text[i - 1] in STOPS:
            j = i
            while j < len(text) and text[j].isspace():
                j += 1
            blank_needed = text[i - 1] in LATIN_STOPS
            if j < len(text) and (j > i or not blank_needed):
                out.append((i, j))
                i = j + 1  # text[j] is the next sentence's first character
                continue
        i += 1
    return out


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab3 \n\u3000.!?。！？一"), max_size=80))
def test_sentence_breaks_follow_the_definition(text: str) -> None:
    assert sentence_breaks(text) == reference_breaks(text)


def test_what_ends_a_sentence_and_what_does_not() -> None:
    assert sentence_breaks("Pi is 3.14 here. Next") == [(16, 17)]
    assert sentence_breaks("e.g.x and U.S.A") == []
    assert sentence_breaks("东京。大阪！京都") == [(3, 3), (6, 6)]  # no blank needed
    assert ends_sentence("done.  ") and ends_sentence("完了。") and not ends_sentence("a list:")


def test_page_chunks_and_answer_sentences_share_the_cjk_stop() -> None:
    sentence = "东京是日本的首都，也是世界上人口最多的城市之一，有很多著名的景点。"
    page = sentence * 40  # one paragraph, far over a chunk, no blank anywhere
    spans = chunk_spans(page)
    assert len(spans) > 1
    assert all(page[a:b].endswith("。") for a, b in spans)  # cut at sentence ends only
    answer = [s.text for s in answer_sentences(sentence * 3)]
    assert answer == [sentence] * 3


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=999))
def test_a_number_is_the_same_with_or_without_thousands_separators(n: int, frac: int) -> None:
    assert numbers_in(f"{n:,} people") == numbers_in(f"{n} people") == {str(n)}
    assert numbers_in(f"{n:,}.{frac} ft") == {f"{n}.{frac}"}


@settings(max_examples=50, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["0123456789", "０１２３４５６７８９", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९"]),
    st.sampled_from(["Q{}", "covid{}", "{}th", "{}年", "v{}"]),
)
def test_a_number_ignores_glued_letters_and_the_digit_script(
    n: int, digits: str, form: str
) -> None:
    written = "".join(digits[int(d)] for d in str(n))
    assert numbers_in(form.format(written)) == {str(n)}


def test_decimals_and_versions_stay_apart() -> None:
    assert numbers_in("Python 3.11") != numbers_in("Python 3.12")
    assert numbers_in("Python 3.11") == {"3.11"}  # not {"3", "11"}
    assert numbers_in("1,5 kg") == {"1,5"}  # a decimal comma is not a thousands separator


def _named_cjk(char: str) -> bool:
    name = unicodedata.name(char, "")
    kana = ("HIRAGANA" in name or "KATAKANA" in name) and not name.startswith(
        ("CIRCLED", "SQUARED", "SQUARE")
    )
    return kana or name.startswith(("CJK UNIFIED IDEOGRAPH-", "CJK COMPATIBILITY IDEOGRAPH-"))


def test_a_cjk_character_is_a_bmp_ideograph_or_kana() -> None:
    # Every code point of the BMP (0.1 s), not a sample of 500 (2 s of Hypothesis).
    wrong = [
        (hex(ord(char)), unicodedata.name(char))
        for char in map(chr, range(0x10000))
        if unicodedata.name(char, "")  # unassigned code points inside the blocks aside
        and is_cjk(char) != _named_cjk(char)
    ]
    assert wrong == []


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 東京かなカナｶﾅ한국어䷀䷁"), max_size=40))
def test_answer_weight_counts_exactly_the_cjk_characters_twice(text: str) -> None:
    assert cjk_count(text) == sum(is_cjk(ch) for ch in text)
    assert text_weight(text) == len(text) + cjk_count(text)


def test_hangul_and_hexagrams_are_not_cjk() -> None:
    assert text_weight("한국어 문장") == len("한국어 문장")
    assert not any(is_cjk(ch) for ch in "한국어䷀䷁")
    assert all(is_cjk(ch) for ch in "東京かなカナｶﾅ")
    assert not is_cjk("東京")  # one character, not a run
