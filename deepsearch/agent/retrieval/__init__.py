"""Retrieval: which URLs to read next (`ranking`), how alike two texts are
(`similarity` on the features `lexical` owns), how a page is cut into chunks
(`passages`), how a query is rewritten (`rewrite`) and which read evidence stays in
the prompt (`evidence`).

Plain functions over plain data: they import the vocabulary (`agent.types`,
`agent.limits`, `deepsearch.text`, `deepsearch.errors`) and the web's URL identity
(`deepsearch.web.urls`); never the state, the deps or the loop (`agent.refresh` turns
the state into their arguments before each prompt). `rewrite`, an LLM step, also
imports the LLM client, its prompt and the rewriter's type in `agent.deps`: exceptions
named in pyproject.toml's import contracts, which `make lint` checks.
"""
