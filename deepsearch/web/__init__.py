"""Web layer: search providers with failover, the page reader, URL tools, SSRF guard, cache.

The agent depends only on the protocols and models in `types.py`; `urls` is the one
definition of a URL's canonical form and a page's identity. Timing goes through the
injected `deepsearch.clock.Clock`. Never imports `deepsearch.agent`.
"""
