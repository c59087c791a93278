"""Load and render the prompt templates in prompts/ (string.Template, `${name}`).

Every text the model reads comes from there: system prompts, the tags of the
agent's context, the structured-output retry, the evaluator's and rewriter's
inputs. It sits at the package's top level because llm/ (the retry text), agent/
and evaluation/ all render templates, and llm/ never imports agent/.

Rendering fails loudly on a missing or an unexpected variable, so a template and
the code that fills it cannot drift apart silently. A file's surrounding
whitespace is stripped: the code that joins rendered pieces owns the separators.

Text from outside -- a page, a search snippet, a title, what the model wrote after
reading them -- goes into a template through `untrusted`: it cannot open or close
any tag the prompts use (`</knowledge-3>`, `<context>`, ...) nor a chat-template
token (`<|im_start|>`), so a page's text always stays inside its own knowledge block.
"""

from __future__ import annotations

import re
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


# What a defused tag opens with: a single angle quotation mark, no `<` a tag needs.
DEFUSED = "\u2039"
_TAG_IN_TEMPLATE = re.compile(r"</?([A-Za-z][A-Za-z0-9_-]*)")


@cache
def _forgeable() -> re.Pattern[str]:
    """The start of any tag the prompts use, by its root (`knowledge` for
    `<knowledge-${index} ...>`), in any case and spacing, and of a chat-template token."""
    roots = {
        match.group(1).rstrip("-_")
        for path in prompts_dir().rglob("*.md")
        for match in _TAG_IN_TEMPLATE.finditer(path.read_text(encoding="utf-8"))
    }
    names = "|".join(sorted((re.escape(r) for r in roots if r), key=len, reverse=True))
    return re.compile(rf"<(?=\s*/?\s*(?:{names})(?!\w))|<(?=\s*\|)", re.IGNORECASE)


def untrusted(text: str) -> str:
    """`text` as data for a prompt: every `<` that would start one of the prompts' own
    tags (or a chat-template token) becomes DEFUSED; nothing else changes."""
    return _forgeable().sub(DEFUSED, text) if "<" in text else text
