"""What the corpus index trusts nothing about: file names that are not UTF-8 (skipped
and counted, `LocalCorpus.files`), and an index on disk of valid JSON but the wrong
shape (an old format, a hand edit, a torn copy): rebuilt instead of failing every
later search with an IndexError."""

from __future__ import annotations

from typing import Any


def utf8_name(name: str) -> bool:
    """A file name as os.walk gives it is UTF-8 unless it carries surrogate escapes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_index_shape(passages: Any, docs: Any) -> None:
    """ValueError unless `docs` is a list of {"path", "title"} and `passages` a list of
    [document number, text] pairs naming those documents."""
    if not isinstance(docs, list) or not isinstance(passages, list):
        raise ValueError("the index files are not lists")
    for doc in docs:
        if not (isinstance(doc, dict) and isinstance(doc.get("path"), str)):
            raise ValueError("a document entry has no path")
        if not isinstance(doc.get("title"), str):
            raise ValueError("a document entry has no title")
    for entry in passages:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], str)):
            raise ValueError("a passage entry is not [document, text]")
        if not (isinstance(entry[0], int) and 0 <= entry[0] < len(docs)):
            raise ValueError("a passage names no document of the index")
