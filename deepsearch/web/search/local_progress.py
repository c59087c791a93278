"""What a corpus index build did, as it goes (the live view) and at the end: one
summary line, also when nothing changed and the index on disk was reused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

MAX_FILE_BYTES = 50_000_000  # 50 MB (decimal, as the summary shows sizes): larger is skipped


def human_size(n_bytes: int) -> str:
    """Bytes as B, kB or MB (decimal, as file managers show them)."""
    if n_bytes < 1000:
        return f"{n_bytes} B"
    if n_bytes < 1_000_000:
        return f"{n_bytes / 1000:.1f} kB"
    return f"{n_bytes / 1_000_000:.1f} MB"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


class IndexProgress(BaseModel):
    """How far an index build is (for the live view) and, at the end, what it did."""

    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    files_done: int = 0
    files_total: int = 0
    bytes_done: int = 0
    bytes_total: int = 0  # of the files read: a file over the cap is not counted
    reused: int = 0  # unchanged files whose passages came from the cache
    binary_skipped: int = 0
    too_large: int = 0  # files over MAX_FILE_BYTES, skipped unread
    too_large_bytes: int = 0
    empty: int = 0  # files with no text: not documents
    unreadable: int = 0
    bad_names: int = 0  # files and folders whose names are not UTF-8: skipped
    documents: int = 0  # files in the index
    finished: bool = False
    unchanged: bool = False  # nothing changed: the index on disk was loaded as it was

    def summary(self) -> str:
        """`corpus: 15 documents indexed from 17 files (4.2 MB; 12 unchanged, 5 read);
        2 binary files skipped`, or `...; nothing changed` for a reused index."""
        head = f"corpus: {plural(self.documents, 'document')} indexed from " + plural(
            self.files_total, "file"
        )
        if self.unchanged:
            line = f"{head} ({human_size(self.bytes_total)}; nothing changed, index reused)"
        else:
            read = self.files_total - self.reused - self.too_large  # those are never read
            line = f"{head} ({human_size(self.bytes_total)}; {self.reused} unchanged, {read} read)"
        if self.binary_skipped:
            line += f"; {plural(self.binary_skipped, 'binary file')} skipped"
        if self.too_large:
            line += (
                f"; {plural(self.too_large, 'file')} over the {human_size(MAX_FILE_BYTES)} cap "
                f"skipped ({human_size(self.too_large_bytes)})"
            )
        if self.empty:
            line += f"; {plural(self.empty, 'empty file')} skipped"
        if self.unreadable:
            line += f"; {plural(self.unreadable, 'unreadable file')}"
        if self.bad_names:
            line += f"; {plural(self.bad_names, 'name')} not in UTF-8 skipped"
        return line
