"""Every error deepsearch raises on purpose, in one place.

    DeepsearchError
    ├── ConfigError                 bad flag, bad config file, no provider (exit 2)
    └── RunError                    something failed while running (exit 1)
        ├── BudgetExceeded          a token budget would be overrun by the next call
        ├── ProviderError           an LLM provider failed (provider, model kept)
        │   ├── ProviderAuthError   401/403: names the environment variable to fix
        │   ├── ModelNotFoundError  404 model_not_found: the model name is wrong (exit 2)
        │   ├── ContextLengthError  the prompt does not fit the model's window
        │   └── StructuredOutputError  no valid object after every recovery step
        ├── SearchError             every search provider in the chain failed
        │   (web.search.chain.SearchUnavailable: and again on the next try; fatal)
        └── SandboxUnavailable      no real isolation for the coding action

The CLI is the only place that turns these into exit codes and one-line messages.
"""

from __future__ import annotations


class DeepsearchError(Exception):
    """Base of every deliberate deepsearch error."""


class ConfigError(DeepsearchError):
    """The user's configuration or flags are unusable. Exit code 2."""


class RunError(DeepsearchError):
    """A failure while running. Exit code 1.

    `configuration`: only the user can fix it (a rejected key, an unknown model, a
    search URL that cannot work): exit code 2. `fatal`: no later step can succeed, so
    the run stops at once (no Beast Mode); what was found so far is still printed."""

    configuration: bool = False
    fatal: bool = False


class BudgetExceeded(RunError):
    """The next LLM call could overrun the token budget."""

    def __init__(self, *, budget: int, used: int, needed: int) -> None:
        super().__init__(
            f"token budget of {budget} would be exceeded (used {used}, next call needs ~{needed})"
        )
        self.budget = budget
        self.used = used
        self.needed = needed


class ProviderError(RunError):
    """An LLM provider call failed."""

    def __init__(self, message: str, *, provider: str = "", model: str = "") -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model


class ProviderAuthError(ProviderError):
    """The provider rejected our credentials (HTTP 401/403)."""

    configuration = True
    fatal = True


class ModelNotFoundError(ProviderError):
    """The provider does not know the configured model (HTTP 404 model_not_found)."""

    configuration = True
    fatal = True


class ContextLengthError(ProviderError):
    """The prompt is longer than the model's context window."""


class StructuredOutputError(ProviderError):
    """The model never produced an object that validates against the schema."""

    def __init__(self, message: str, *, provider: str = "", model: str = "", raw: str = "") -> None:
        super().__init__(message, provider=provider, model=model)
        self.raw = raw


class SearchError(RunError):
    """Every configured search provider failed."""


class SandboxUnavailable(RunError):
    """No real isolation is available, so LLM-written code is not run."""
