"""Citations: references anchored to quotes that are verbatim in the cited page's plain
text (`references`, `quote_text`), the finalizing pass over the answer (`finalize`)
and markdown repair (`markdown`).

May import retrieval's text features (`lexical`, `similarity`), `deepsearch.text`,
`deepsearch.web.urls` (page identity, hostnames) and the vocabulary (`agent.types`);
never the loop, and retrieval never imports citations. `finalize`, the LLM pass over
the answer, still takes the state and deps: an exception named in pyproject.toml's
import contracts, which `make lint` checks.
"""
