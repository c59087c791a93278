"""Fixtures for the LLM tests: the loopback fakes of the OpenAI and Gemini APIs."""

from __future__ import annotations

from tests.fakes.gemini_server import gemini_server
from tests.fakes.openai_server import openai_server

__all__ = ["gemini_server", "openai_server"]
