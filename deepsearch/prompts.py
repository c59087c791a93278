"""Load and render the prompt templates in prompts/ (string.Template, `${name}`).

Every text the model reads comes from there: system prompts, the tags of the
agent's context, the structured-output retry, the evaluator's and rewriter's
inputs. It sits at the package's top level because llm/ (the retry text), agent/
and evaluation/ all render templates, and llm/ never imports agent/.

Rendering fails loudly on a missing or an unexpected variable, so a template and
the code that fills it cannot drift apart silently. A file's surrounding
whitespace is stripped: the code that joins rendered pieces owns the separators.
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


@cache
def template_variables(name: str) -> frozenset[str]:
    # Cached: the agent renders small templates per knowledge item and per URL each step.
    return frozenset(load_template(name).get_identifiers())


def render(name: str, **values: object) -> str:
    expected = template_variables(name)
    given = set(values)
    if expected != given:
        missing = sorted(expected - given)
        unknown = sorted(given - expected)
        raise PromptError(f"prompt {name!r}: missing {missing}, unknown {unknown}")
    return load_template(name).substitute({k: str(v) for k, v in values.items()})
