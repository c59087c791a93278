"""Fixtures for the LLM tests: the loopback fakes and a clean mode memory per test."""

from __future__ import annotations

import pytest

from deepsearch.llm import gemini_provider, openai_provider
from tests.fakes.gemini_server import gemini_server
from tests.fakes.openai_server import openai_server

__all__ = ["gemini_server", "openai_server"]


@pytest.fixture(autouse=True)
def _fresh_mode_memory() -> None:
    openai_provider.reset_mode_memory()
    gemini_provider.reset_mode_memory()
