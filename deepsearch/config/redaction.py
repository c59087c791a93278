"""Secrets never shown: a key is "set" or not, a URL loses its password and its
credential-like query values, and a known secret's value is replaced wherever it
appears. Used by every output that may hold configuration.

`redact_secrets` is the one rule for replacing known secret values, and `SECRET_MASK`
the one mask, used by error messages (provider errors, `doctor`, `serve`, `mcp`) and
by the files a run writes (`--trace`, cassettes; those said `[REDACTED]` before, and a
cassette that does still replays: cassettes/store.py reads it as `****`). Only values of `MIN_SECRET_LENGTH` characters or more are replaced: a placeholder key
for a keyless local server (`OPENAI_API_KEY=x`) is no secret, and replacing it would
garble every message that contains the letter (`'te****t'`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

SECRET_MASK = "****"
MIN_SECRET_LENGTH = 8


def maskable(secrets: Iterable[str | None]) -> list[str]:
    """The values `redact_secrets` replaces: distinct, at least MIN_SECRET_LENGTH
    characters, longest first (so a secret containing another goes whole)."""
    found = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
    return sorted(found, key=lambda s: (-len(s), s))


def redact_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret of MIN_SECRET_LENGTH+ characters replaced by
    SECRET_MASK, longest first (see `maskable`)."""
    for secret in maskable(secrets):
        text = text.replace(secret, SECRET_MASK)
    return text


def url_secrets(url: str | None) -> list[str]:
    """The secrets a `user:pass@` URL carries: its password, and the `Basic` credential
    an HTTP client derives from it (base64 of `user:pass`, as sent and as a server may
    echo it), raw and percent-decoded. [] for a URL without a password."""
    try:
        parts = urlsplit(url or "")
        user, password = parts.username, parts.password
    except ValueError:
        return []
    if not password:
        return []
    out = [password, unquote(password)]
    for pair in {f"{user or ''}:{password}", f"{unquote(user or '')}:{unquote(password)}"}:
        out.append(base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    return list(dict.fromkeys(out))


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
