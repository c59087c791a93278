"""Write deepsearch/web/data/justext-stoplist.txt.gz: justext's every-language stoplist,
lower-cased, as trafilatura builds it on its first short page (~0.3 s of CPU a process,
against ~0.1 s to read this file). Run after upgrading justext:

    .venv/bin/python tools/justext_stoplist.py
"""

from __future__ import annotations

import gzip
from importlib.metadata import version
from pathlib import Path

OUT = (
    Path(__file__).resolve().parents[1] / "deepsearch" / "web" / "data" / "justext-stoplist.txt.gz"
)


def stoplist_bytes() -> bytes:
    """The file's content: a header naming the justext release, then one word a line."""
    from justext import get_stoplist, get_stoplists

    words = sorted({w.lower() for lang in get_stoplists() for w in get_stoplist(lang)})
    return "\n".join([f"justext {version('justext')}", *words]).encode("utf-8")


def main() -> None:
    OUT.write_bytes(gzip.compress(stoplist_bytes(), compresslevel=9, mtime=0))
    print(f"{OUT}: {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
