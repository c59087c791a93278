"""Retrieval: which URLs to read next (`ranking`), how alike two texts are
(`similarity` on the features `lexical` owns), how a page is cut into chunks
(`passages`), how a query is rewritten (`rewrite`) and which read evidence stays in
the prompt (`evidence`).

May import `deepsearch.text`, `deepsearch.llm` / `deepsearch.web` plain types and
`agent.state`; never the loop.
"""
