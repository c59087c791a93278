"""Citations: references anchored to quotes that are verbatim in the cited page's plain
text (`references`, `quote_text`), finalizing's plain part over the answer (`finalize`:
unseen links unlinked, references anchored) and markdown repair (`markdown`).

May import retrieval's text features (`lexical`, `similarity`), `deepsearch.text`,
`deepsearch.web.urls` (page identity, hostnames) and the vocabulary (`agent.types`);
never the loop, the state, the deps, an LLM client or a prompt, and retrieval never
imports citations (import contracts in pyproject.toml, checked by `make lint`). The
editor's LLM pass and the sources read from the state: agent/steps/finalize.py.
"""
