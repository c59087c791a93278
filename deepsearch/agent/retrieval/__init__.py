"""Retrieval: which URLs to read next (`ranking`), how alike two texts are
(`similarity` on the features `lexical` owns), how a page is cut into chunks
(`passages`), what the query rewriter replies (`rewrite`) and which read evidence
stays in the prompt (`evidence`).

Plain functions over plain data: they import the vocabulary (`agent.types`,
`agent.limits`, `deepsearch.text`, `deepsearch.errors`) and the web's URL identity
(`deepsearch.web.urls`); never the state, the deps, an LLM client, a prompt or the
loop (`agent.refresh` turns the state into their arguments before each prompt; the
rewriter's LLM call is agent/steps/rewrite.py). Import contracts in pyproject.toml,
checked by `make lint`, hold this with no exception.
"""
