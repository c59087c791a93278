"""Citations: references anchored to quotes that are verbatim in the cited page's plain
text (`references`, `quote_text`), the finalizing pass over the answer (`finalize`)
and markdown repair (`markdown`).

May import `agent.retrieval` (similarity), `agent.state`, `deepsearch.text`,
`deepsearch.web.urls` (page identity) and plain types; never the loop.
"""
