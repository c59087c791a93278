"""deepsearch: a research agent that hunts down one correct, cited answer.

From Python (see docs/library.md):

    import deepsearch
    result = deepsearch.research("Who directed Maximum Overdrive?", effort="low")
    print(result.answer, result.references[0].url, result.usage.total_tokens)

The names below are imported on first use, so `import deepsearch` (and the command
line's --help) stays fast.
"""

from __future__ import annotations

from deepsearch.version import __version__

# Not `from typing import TYPE_CHECKING`: importing typing alone would make
# `import deepsearch` several times slower (mypy reads any TYPE_CHECKING so).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from deepsearch.agent.events import AgentEvent
    from deepsearch.agent.result import ResearchResult
    from deepsearch.errors import ConfigError, DeepsearchError, RunError, UsageError
    from deepsearch.library import ResearchFailed, aresearch, research

# name -> the module that defines it
_LAZY = {
    "research": "deepsearch.library",
    "aresearch": "deepsearch.library",
    "ResearchResult": "deepsearch.agent.result",
    "AgentEvent": "deepsearch.agent.events",
    "DeepsearchError": "deepsearch.errors",
    "ConfigError": "deepsearch.errors",
    "UsageError": "deepsearch.errors",
    "RunError": "deepsearch.errors",
    "ResearchFailed": "deepsearch.library",
}

__all__ = [
    "AgentEvent",
    "ConfigError",
    "DeepsearchError",
    "ResearchFailed",
    "ResearchResult",
    "RunError",
    "UsageError",
    "__version__",
    "aresearch",
    "research",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepsearch' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
