"""`deepsearch doctor`: placeholder until the provider checks land."""

from __future__ import annotations

from deepsearch.cli import EXIT_RUNTIME, ConfigOption, fail


def doctor(config: ConfigOption = None) -> None:
    raise fail("doctor is not implemented yet", EXIT_RUNTIME)
