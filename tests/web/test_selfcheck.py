"""The doctor's page-extraction self-check: the shipped page through the real reader."""

from __future__ import annotations

import pytest

from deepsearch.web import extract, selfcheck
from deepsearch.web.extract import Extracted
from deepsearch.web.selfcheck import check_page_extraction, selfcheck_html, verify_text
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers

SECRET = "sk-selfcheck-secret-0123456789"


def test_the_page_ships_inside_the_package() -> None:
    assert b"Self-check of page extraction" in selfcheck_html()


async def test_a_working_install_passes() -> None:
    ok, detail = await check_page_extraction()
    assert ok, detail
    assert "chars of plain text" in detail


async def test_an_extractor_that_raises_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing_module(*args: object) -> object:
        raise ModuleNotFoundError("No module named 'lxml_html_clean'")

    monkeypatch.setattr(extract, "extract_body", missing_module)
    ok, detail = await check_page_extraction()
    assert not ok
    assert detail == "failed: extract: ModuleNotFoundError: No module named 'lxml_html_clean'"


@pytest.mark.parametrize(
    ("text_of", "problem"),
    [
        (lambda t: t.replace("| Alpha | 1901 |", "| Alpha | 1901 | "), "expected text missing"),
        (lambda t: t.replace("guide stays", "guide](https://example.org/guide) stays"), "missing"),
        (lambda t: t + "\nsee https://example.org/guide", "link targets"),
        (lambda t: t.replace("北京", "ÅŒ—äº¬"), "expected text missing"),
    ],
)
async def test_wrong_text_fails(
    monkeypatch: pytest.MonkeyPatch, text_of: object, problem: str
) -> None:
    real = extract.extract_body

    def spoiled(body: bytes, content_type: str | None, url: str) -> object:
        result = real(body, content_type, url)
        assert isinstance(result, Extracted)
        return result.model_copy(update={"text": text_of(result.text)})  # type: ignore[operator]

    monkeypatch.setattr(extract, "extract_body", spoiled)
    ok, detail = await check_page_extraction()
    assert not ok and problem in detail, detail


def test_links_must_be_harvested() -> None:
    page = "\n".join(selfcheck.EXPECTED_LINES) + "\n" + " ".join(selfcheck.EXPECTED_PHRASES)
    assert verify_text(page, [selfcheck.EXPECTED_LINK]) is None
    assert "not harvested" in (verify_text(page, []) or "")


def _doctor(**env: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from deepsearch.cli import make_app

    result = CliRunner().invoke(make_app(), ["doctor"], env={"COLUMNS": "200", **env})
    return result.exit_code, result.stdout


def test_doctor_reports_the_page_extraction_row(monkeypatch: pytest.MonkeyPatch) -> None:
    with (
        FakeSearchServers() as search,
        FakeOpenAIServer(handler=lambda body: {"ok": True}, api_key=SECRET) as llm,
    ):
        env = {
            "OPENAI_API_KEY": SECRET,
            "OPENAI_BASE_URL": llm.base_url,
            "DEEPSEARCH_SEARCH_PROVIDER": "searxng",
            "SEARXNG_URL": search.base_url("searxng"),
        }
        code, out = _doctor(**env)
        assert code == 0, out
        row = next(line for line in out.splitlines() if "page extraction" in line)
        assert "ok" in row and "chars of plain text" in row

        def broken(*args: object) -> object:
            raise ImportError("lxml.html.clean module is now a separate project")

        monkeypatch.setattr(extract, "extract_body", broken)
        code, out = _doctor(**env)
    assert code == 1
    row = next(line for line in out.splitlines() if "page extraction" in line)
    assert "FAIL" in row and "extract: ImportError" in row
