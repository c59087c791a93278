"""Web layer: search providers with failover, the page reader, URL tools, SSRF guard, cache.

The agent depends only on the protocols and models in `types.py`.
"""
