"""Build Hypothesis's Unicode tables once, at `make install`, with its public API.

`st.text()` draws from the characters UTF-8 can encode, and `st.characters(codec=...)`
from those of that codec. Hypothesis finds them by trying every code point (1.1 million)
and caches the result in .hypothesis/unicode_data. On a fresh checkout each
pytest-xdist worker built those tables itself, in whichever property test came first:
~1.2 s of CPU per table and worker, in the first `make test` only. Run from the project
root (the Makefile does), so the tables land where the tests look.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

# The codecs the property tests draw from: utf-8 (st.text()'s default) and the cp1251
# of tests/web/test_reader_extract.py. Another codec only costs its first test the build.
CODECS = ("utf-8", "cp1251")


def main() -> int:
    @settings(max_examples=1, database=None, deadline=None)
    @given(st.tuples(*(st.characters(codec=codec) for codec in CODECS)), st.text(max_size=1))
    def draw_once(chars: tuple[str, ...], text: str) -> None:
        """Drawing once builds and caches every table the strategies need."""

    draw_once()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
