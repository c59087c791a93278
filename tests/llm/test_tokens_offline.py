"""Token counting works with no network and no tiktoken cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from deepsearch.llm.tokens import count_tokens, get_encoding

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: empty TIKTOKEN_CACHE_DIR, and every non-loopback
# connect refused, so any download attempt would fail the count.
_CHILD = r"""
import json, socket
def refuse(self, address):
    raise ConnectionRefusedError(f"offline test: refused {address!r}")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
from deepsearch.llm.tokens import get_encoding, count_tokens
print(json.dumps({
    "o200k": get_encoding("o200k_base").encode("hello world"),
    "cl100k": get_encoding("cl100k_base").encode("hello world"),
    "count": count_tokens("The quick brown fox jumps over the lazy dog.", model="gpt-4o"),
}))
"""


def test_counting_is_offline_in_a_fresh_process(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TIKTOKEN_CACHE_DIR": str(cache),
        "DATA_GYM_CACHE_DIR": str(cache),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # ids as produced by tiktoken with its downloaded files
    assert result["o200k"] == [24912, 2375]
    assert result["cl100k"] == [15339, 1917]
    assert result["count"] == 10
    assert list(cache.iterdir()) == [], "nothing written to the tiktoken cache"


def test_count_empty_and_short() -> None:
    assert count_tokens("") == 0
    text = "one two three four five six"
    assert count_tokens(text, model="gpt-4o") == len(get_encoding("o200k_base").encode(text))
