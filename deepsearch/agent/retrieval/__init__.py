"""Retrieval: which URLs to read next (`ranking`), how alike two texts are
(`similarity`, `lexical`), which passages of a page matter (`passages`), how a query
is rewritten (`rewrite`) and which read evidence stays in the prompt (`evidence`).

May import `deepsearch.llm` / `deepsearch.web` plain types and `agent.state`; never the loop.
"""
