"""The rows of `deepsearch doctor`: the Check type, and the checks of this machine
(cache folder, sandbox). The LLM and search checks are in doctor_cmd.py; the order of
all groups is doctor_cmd.CHECK_GROUPS."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from deepsearch.config import LoadedConfig


class Check(NamedTuple):
    name: str
    ok: bool
    detail: str
    skipped: bool = False  # could not run (an earlier check failed, or not applicable)

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else "ok" if self.ok else "FAIL"


def skipped(name: str, why: str) -> Check:
    return Check(name=name, ok=True, detail=why, skipped=True)


CheckGroup = Callable[["LoadedConfig"], Awaitable[list[Check]]]


# ---------------------------------------------------------------- this machine


async def page_extraction_checks(loaded: LoadedConfig) -> list[Check]:
    """A page shipped with the package, read through the real reader (no network):
    proves this install can extract pages (a missing extraction dependency shows here)."""
    from deepsearch.web.selfcheck import check_page_extraction

    ok, detail = await check_page_extraction()
    return [Check(name="page extraction", ok=ok, detail=detail)]


async def cache_checks(loaded: LoadedConfig) -> list[Check]:
    """The search/page cache (and the corpus index under it) needs a writable folder."""
    import asyncio

    return [await asyncio.to_thread(_cache_row, loaded)]


def _cache_row(loaded: LoadedConfig) -> Check:
    import tempfile
    from pathlib import Path

    from deepsearch.web.cache import default_cache_dir

    cfg = loaded.settings.cache
    folder = Path(cfg.dir).expanduser() if cfg.dir else default_cache_dir()
    if not cfg.enabled:
        return skipped("cache folder", f"skipped: the cache is off ({folder})")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("cache folder", False, f"{folder}: not writable ({exc.strerror or exc})")
    return Check("cache folder", True, f"{folder} is writable")


async def sandbox_checks(loaded: LoadedConfig) -> list[Check]:
    """Whether the coding action can run LLM-written code in real isolation."""
    import asyncio

    from deepsearch.sandbox.runner import Sandbox, SandboxLimits

    agent = loaded.settings.agent
    sandbox = Sandbox(
        SandboxLimits(
            cpu_s=agent.sandbox_cpu_s,
            wall_s=agent.sandbox_wall_s,
            memory_mb=agent.sandbox_memory_mb,
        )
    )
    usable, reason = await asyncio.to_thread(sandbox.availability)
    # Not a failure: without isolation the run simply does not offer the coding action.
    if usable:
        return [Check("sandbox", True, reason or "available")]
    return [skipped("sandbox", f"unavailable, coding action off: {reason}")]
