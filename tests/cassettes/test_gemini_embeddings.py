"""A Gemini run with provider embeddings records and replays like any other: the
replay builds the Gemini client without GEMINI_API_KEY and answers the embedding calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cassettes.conftest import World, cli, without_times
from tests.cli.test_end_to_end import ANSWER_STEP, SEARCH, SECRET, VISIT, router
from tests.fakes.gemini_server import FakeGeminiServer

# Gemini requests carry no schema name (titles are stripped): tell them by a property.
SCHEMA_BY_PROPERTY = {
    "action": "AgentStep",
    "needs_definitive": "QuestionEval",
    "improvement_plan": "StrictEval",
    "queries": "RewriteReply",
    "recap": "ErrorAnalysis",
    "pass": "DefinitiveEval",
}


def gemini_router() -> Any:
    openai_route = router([SEARCH, VISIT, ANSWER_STEP])

    def route(body: dict[str, Any]) -> Any:
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or {}
        props = schema.get("properties") or {}
        name = next((n for p, n in SCHEMA_BY_PROPERTY.items() if p in props), None)
        text = body["contents"][-1]["parts"][0]["text"]
        fmt = {"json_schema": {"name": name}} if name else None
        return openai_route({"response_format": fmt, "messages": [{"content": text}]})

    return route


def test_gemini_with_embeddings_replays_without_key_or_network(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"llm": {"embedding_model": "text-embedding-004"}}), "utf-8")
    args = [a if a != "openai" else "gemini" for a in world.args()] + ["--config", str(config)]
    cassette = tmp_path / "cassette"
    with FakeGeminiServer(gemini_router()) as gemini:
        monkeypatch.setenv("GEMINI_API_KEY", SECRET)
        monkeypatch.setenv("GEMINI_BASE_URL", gemini.url)
        code, recorded = cli(capsys, *args, "--record", str(cassette))
        assert code == 0, recorded.get("error")
        assert gemini.requests_to("embed"), "the run used provider embeddings"
    assert "embedding" in recorded["usage"]["by_tool"]
    embeds = (cassette / "embed.jsonl").read_text("utf-8").splitlines()
    assert embeds and json.loads(embeds[0])["request"]["model"] == "text-embedding-004"
    assert SECRET not in "".join(p.read_text("utf-8") for p in cassette.iterdir())

    request.getfixturevalue("no_network")
    monkeypatch.delenv("GEMINI_BASE_URL")
    code, replayed = cli(capsys, *args, "--replay", str(cassette))
    assert code == 0, replayed.get("error")
    assert without_times(replayed) == without_times(recorded)


def test_a_changed_embedding_model_is_a_miss(tmp_path: Path) -> None:
    import asyncio

    from deepsearch.cassettes import CassetteMiss, Player, Recorder
    from deepsearch.cassettes.record import RecordingEmbedder
    from deepsearch.cassettes.replay import ReplayEmbedder

    class Vectors:
        async def embed(self, texts: list[str]) -> list[list[float]]:
            return [[float(len(t)), 1.0] for t in texts]

    recorder = Recorder(tmp_path / "c")
    asyncio.run(RecordingEmbedder(Vectors(), "emb-1", recorder.writer).embed(["ab", "c"]))
    recorder.write_run(embedder=True)
    player = Player(recorder.directory)
    same = asyncio.run(ReplayEmbedder(player, "emb-1").embed_with_usage(["ab", "c"]))
    assert same.vectors == [[2.0, 1.0], [1.0, 1.0]] and same.prompt_tokens is None
    with pytest.raises(CassetteMiss, match="embedding call not in cassette: model differs"):
        asyncio.run(ReplayEmbedder(player, "emb-2").embed(["ab", "c"]))
