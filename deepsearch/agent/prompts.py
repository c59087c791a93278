"""Load and render prompt templates from prompts/*.md (string.Template, `${name}`).

Rendering fails loudly on a missing or an unexpected variable, so a template and
the code that fills it cannot drift apart silently.
"""

from __future__ import annotations

from functools import cache
from string import Template

from deepsearch.resources import prompts_dir


class PromptError(KeyError):
    """A template was rendered with missing or unknown variables."""


@cache
def load_template(name: str) -> Template:
    path = prompts_dir() / f"{name}.md"
    return Template(path.read_text(encoding="utf-8").strip())


def template_variables(name: str) -> set[str]:
    return set(load_template(name).get_identifiers())


def render(name: str, **values: object) -> str:
    template = load_template(name)
    expected = set(template.get_identifiers())
    given = set(values)
    if expected != given:
        missing = sorted(expected - given)
        unknown = sorted(given - expected)
        raise PromptError(f"prompt {name!r}: missing {missing}, unknown {unknown}")
    return template.substitute({k: str(v) for k, v in values.items()})
