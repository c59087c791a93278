"""Language detection without an LLM call."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deepsearch.agent.language import NAMES, detect_language, language_name

CASES = [
    ("Who won the 2022 World Cup?", "en"),
    ("Wer hat die Fußball-WM 2022 gewonnen?", "de"),
    ("Qui a gagné la coupe du monde 2022 ?", "fr"),
    ("¿Quién ganó el mundial de 2022?", "es"),
    ("Chi ha vinto i mondiali del 2022?", "it"),
    ("Quem ganhou a copa do mundo de 2022?", "pt"),
    ("Wie heeft het WK 2022 gewonnen?", "nl"),
    ("Vem vann fotbolls-VM 2022?", "sv"),
    ("Kto wygrał mistrzostwa świata w 2022?", "pl"),
    ("2022 Dünya Kupasını kim kazandı?", "tr"),
    ("Кто выиграл чемпионат мира 2022?", "ru"),
    ("Хто виграв чемпіонат світу 2022?", "uk"),
    ("谁赢得了2022年世界杯？", "zh"),
    ("2022年のワールドカップで優勝したのは誰ですか？", "ja"),
    ("2022 월드컵 우승팀은?", "ko"),
    ("من فاز بكأس العالم 2022؟", "ar"),
    ("چه کسی جام جهانی ۲۰۲۲ را برد؟", "fa"),
    ("מי זכה במונדיאל 2022?", "he"),
    ("Ποιος κέρδισε το Παγκόσμιο Κύπελλο 2022;", "el"),
    ("2022 विश्व कप किसने जीता?", "hi"),
    ("ใครชนะฟุตบอลโลก 2022", "th"),
]


@pytest.mark.parametrize(("question", "code"), CASES)
def test_detects_language(question: str, code: str) -> None:
    found = detect_language(question)
    assert found.code == code
    assert found.name == NAMES[code]


def test_unknown_falls_back_to_english_with_low_confidence() -> None:
    for text in ["", "Tesla", "GPT-4o vs Claude", "12345 ?!"]:
        found = detect_language(text)
        assert found.code == "en" and found.confidence <= 0.2


def test_language_name() -> None:
    assert language_name("de") == "German"
    assert language_name("pt-BR") == "Portuguese"
    assert language_name("xx") == "xx"


@given(st.text(max_size=200))
def test_always_returns_a_known_code(text: str) -> None:
    found = detect_language(text)
    assert found.code in NAMES and 0.0 <= found.confidence <= 1.0


def test_answer_language_prefers_the_flag_then_detection() -> None:
    from deepsearch.agent.language import answer_language

    assert answer_language("Wann wurde der Eiffelturm fertiggestellt?") == "German"
    assert answer_language("Wann wurde der Eiffelturm fertiggestellt?", "fr") == "French"
    assert answer_language("x", "German") == "German"
