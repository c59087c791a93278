"""Secrets never shown: a key is "set" or not, a URL loses its password and its
credential-like query values. Used by every output that may hold configuration."""

from __future__ import annotations

import re

SECRET_MASK = "****"


def mask_secret(value: str) -> str:
    """Show that a secret is set without revealing any of it."""
    return f"{SECRET_MASK} (set)" if value else "-"  # not even its length


_SECRET_QUERY = re.compile(
    r"([?&;](?:[\w.-]*(?:key|token|secret|password|passwd|auth|signature|sig)[\w.-]*)=)[^&;#\s]+",
    re.IGNORECASE,
)


def redact_userinfo(text: str) -> str:
    """Hide credentials embedded in a URL: a password (http://user:pass@host →
    http://user:****@host) and credential-like query values (?api_key=… → ?api_key=****)."""
    text = re.sub(r"(?<=://)([^/@:\s]+):[^/@\s]+@", r"\1:" + SECRET_MASK + "@", text)
    return _SECRET_QUERY.sub(r"\1" + SECRET_MASK, text)
