"""Every error deepsearch raises on purpose, and the exit codes, in one place.

    DeepsearchError                 carries `exit_code` (1 unless a subclass says)
    ├── UsageError                  a command line the command cannot run (exit 2)
    ├── ConfigError                 bad flag, bad config file, no provider (exit 2)
    ├── CommandFailed               a command ran and failed; its own code (doctor: 1)
    └── RunError                    something failed while running (exit 1)
        ├── BudgetExceeded          a token budget would be overrun by the next call
        │   └── CostLimitReached    ... or the cost limit (--max-cost, dollars)
        ├── ProviderError           an LLM provider failed (provider, model kept)
        │   ├── ProviderAuthError   401/403: names the environment variable to fix
        │   ├── ModelNotFoundError  404 model_not_found: the model name is wrong (exit 2)
        │   ├── EndpointUnusable    not an OpenAI API (HTML), quota exhausted (exit 2)
        │   ├── ContextLengthError  the prompt does not fit the model's window
        │   └── StructuredOutputError  no valid object after every recovery step
        ├── SearchError             every search provider in the chain failed
        │   (web.search.chain.SearchUnavailable: and again on the next try; fatal)
        ├── WebUnreadable           every read refused two visits in a row (fatal)
        ├── SandboxUnavailable      no real isolation for the coding action
        └── library.ResearchFailed  the library's: a run that could not go on (.result)

A command raises one of these; cli.py alone catches them (one `except`), prints the
one-line message and exits with the code the error carries. A research run turns a
RunError into its result instead (what was found so far is still printed), and the
result's status decides the exit code (ResearchResult.exit_code).
"""

from __future__ import annotations

from collections.abc import Callable

# The exit codes, everywhere: the CLI's, the errors' and the research results'.
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_FORCED = 3  # Beast Mode or a limit
EXIT_NOT_FOUND = 4  # the run ended without a supported answer (status "not_found")
EXIT_INTERRUPTED = 130  # Ctrl-C; SIGTERM / SIGHUP are 143 / 129 (128 + the signal)


class DeepsearchError(Exception):
    """Base of every deliberate deepsearch error."""

    exit_code: int = EXIT_RUNTIME


class UsageError(DeepsearchError):
    """The command line cannot be run as given (a missing question, clashing flags)."""

    exit_code = EXIT_USAGE


class ConfigError(DeepsearchError):
    """The user's configuration or flags are unusable. Exit code 2."""

    exit_code = EXIT_USAGE


class CommandFailed(DeepsearchError):
    """A command ran and did not succeed (checks failed, stdout unwritable, a batch
    interrupted): the line to print and the exit code to end with."""

    def __init__(self, message: str, exit_code: int = EXIT_RUNTIME) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class RunError(DeepsearchError):
    """A failure while running. Exit code 1.

    `configuration`: only the user can fix it (a rejected key, an unknown model, a
    search URL that cannot work): exit code 2, by way of the run's result (a run's
    errors become its result's error_kind, never a CLI error). `fatal`: no later step
    can succeed, so the run stops at once (no Beast Mode); what was found so far is
    still printed. Whichever it is, a RunError that ends a run makes the result's
    error_kind "fatal" (or "configuration"): agent/result.failure_kind."""

    configuration: bool = False
    fatal: bool = False


class BudgetExceeded(RunError):
    """The next LLM call could overrun the token budget."""

    def __init__(
        self, *, budget: int, used: int, needed: int, shown: Callable[[int], str] = str
    ) -> None:
        # `shown`: how the raiser writes a count (the tracker: `60k`, as the view does).
        b, u, n = shown(budget), shown(used), shown(needed)
        super().__init__(f"token budget of {b} would be exceeded (used {u}, next call needs ~{n})")
        self.budget = budget
        self.used = used
        self.needed = needed


class CostLimitReached(BudgetExceeded):
    """The next LLM call could overrun the cost limit (`--max-cost`, in dollars)."""

    def __init__(self, *, limit: float, spent: float, needed: float) -> None:
        RunError.__init__(
            self,
            f"cost limit of ${limit:g} would be exceeded (spent ${spent:.6f}, "
            f"next call needs ~${needed:.6f})",
        )
        self.budget, self.used, self.needed = 0, 0, 0
        self.limit, self.spent, self.needed_usd = limit, spent, needed


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


class EndpointUnusable(ProviderError):
    """The endpoint cannot serve a run whatever is retried: it does not speak the API
    (an HTML page answered with 200), or the account's quota is exhausted."""

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


class WebUnreadable(RunError):
    """Every page read was refused (the address guard, 403s, a dead reader) in two
    visits in a row while search works: the run stops with the cause and the fix.
    `configuration` when only the user can fix it (the guard: --allow-private-urls)."""

    fatal = True

    def __init__(self, message: str, *, configuration: bool = False) -> None:
        super().__init__(message)
        self.configuration = configuration


class SandboxUnavailable(RunError):
    """No real isolation is available, so LLM-written code is not run."""
