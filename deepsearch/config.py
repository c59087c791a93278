"""Layered configuration: CLI flag > environment > user config file > shipped config.json.

Every layer is a nested dict; they are deep-merged in precedence order while the
source of every leaf is remembered, then the result is validated once by pydantic.
`deepsearch config` prints that provenance, with secrets masked.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationError

from deepsearch.errors import ConfigError
from deepsearch.resources import default_config_path

ToolName = Literal[
    "agent",
    "agent_beast",
    "evaluator",
    "error_analyzer",
    "query_rewriter",
    "research_planner",
    "coder",
    "finalizer",
    "fallback",
    "grader",
]
ProviderName = Literal["gemini", "openai", "ollama"]
SearchProviderName = Literal["duckduckgo", "searxng", "jina", "brave", "serper", "local"]
Effort = Literal["low", "medium", "high"]


class EffortPreset(BaseModel):
    """What an effort level sets; any key set by a flag, the environment or the user
    file wins over it (README: "Team mode and effort")."""

    model_config = ConfigDict(frozen=True)
    budget: int
    max_steps: int
    max_bad_attempts: int
    direct_answer: bool
    reflect: bool
    team_size: int
    recheck: bool


EFFORT_PRESETS: dict[str, EffortPreset] = {
    # speed: few steps, no reflect, one evaluation attempt, a smaller budget
    "low": EffortPreset(
        budget=100_000, max_steps=10, max_bad_attempts=1, direct_answer=True,
        reflect=False, team_size=1, recheck=False,
    ),
    "medium": EffortPreset(  # balanced: the shipped config.json values
        budget=500_000, max_steps=100, max_bad_attempts=2, direct_answer=True,
        reflect=True, team_size=1, recheck=False,
    ),
    # thorough: a team of two when the planner splits, more attempts, a re-check
    "high": EffortPreset(
        budget=1_000_000, max_steps=100, max_bad_attempts=3, direct_answer=True,
        reflect=True, team_size=2, recheck=True,
    ),
}  # fmt: skip
EFFORT_BUDGETS: dict[str, int] = {name: p.budget for name, p in EFFORT_PRESETS.items()}
# The agent.* keys a preset fills (the budget goes through AgentConfig.token_budget).
PRESET_KEYS = ("max_steps", "max_bad_attempts", "direct_answer", "reflect", "team_size", "recheck")
# The smallest budget a run can actually spend: an agent step's prompt is ~1k tokens
# plus its output, so this leaves a few steps, Beast Mode's 15% and the finalizer.
MIN_BUDGET = 10_000

# Environment variables and the dotted config key each one sets.
ENV_KEYS: dict[str, str] = {
    "OPENAI_API_KEY": "keys.openai_api_key",
    "OPENAI_BASE_URL": "llm.openai_base_url",
    "GEMINI_API_KEY": "keys.gemini_api_key",
    "GEMINI_BASE_URL": "llm.gemini_base_url",
    "JINA_API_KEY": "keys.jina_api_key",
    "BRAVE_API_KEY": "keys.brave_api_key",
    "SERPER_API_KEY": "keys.serper_api_key",
    "SEARXNG_URL": "search.searxng_url",
    "DEEPSEARCH_LLM_PROVIDER": "llm.provider",
    "DEEPSEARCH_MODEL": "llm.model",
    "DEEPSEARCH_SEARCH_PROVIDER": "search.providers",
    "DEEPSEARCH_CACHE_DIR": "cache.dir",
}
# Keys whose value is a list; from the environment they are comma separated.
_LIST_KEYS = {"search.providers"}
DEFAULT_USER_CONFIG = Path("~/.config/deepsearch/config.json")


def _http_url(value: str) -> str:
    """A provider endpoint must be http(s)://host…: a typo fails at load, not mid-run."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {redact_userinfo(value)!r}")
    return value.strip()


HttpUrl = Annotated[str, AfterValidator(_http_url)]
_HOST = re.compile(r"(?:[\w-]+\.)+[\w-]+\.?|localhost", re.IGNORECASE)


def _host_names(values: list[str]) -> list[str]:
    """Host lists (`--only-hostnames` …): a typo would silently filter out every result,
    so each entry must be a host name; a pasted URL is reduced to its host."""
    hosts = []
    for value in values:
        host = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value.strip(), flags=re.IGNORECASE)
        host = host.split("/", 1)[0]
        if not _HOST.fullmatch(host):
            raise ValueError(f"not a host name (like en.wikipedia.org): {value!r}")
        hosts.append(host.lower())
    return hosts


HostList = Annotated[list[str], AfterValidator(_host_names)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSettings(_Strict):
    """What one LLM call is made with."""

    model: str
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(8192, ge=256, description="maximum output tokens")


class ModelOverride(_Strict):
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, ge=256)


class ProviderModels(_Strict):
    context_window: int = Field(128_000, ge=2048)
    default: ModelSettings
    tools: dict[ToolName, ModelOverride] = Field(default_factory=dict)


class LLMConfig(_Strict):
    provider: ProviderName | None = None
    model: str | None = None
    openai_base_url: HttpUrl | None = None
    gemini_base_url: HttpUrl | None = None
    ollama_url: HttpUrl = "http://127.0.0.1:11434"
    timeout_s: float = Field(120, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    concurrency: int = Field(4, ge=1, le=64)
    embedding_model: str | None = None
    jina_embedding_model: str | None = None
    jina_embedding_url: HttpUrl = "https://api.jina.ai"
    providers: dict[ProviderName, ProviderModels]


class SearchConfig(_Strict):
    providers: list[SearchProviderName] = Field(default_factory=lambda: ["duckduckgo"])
    results_per_query: int = Field(10, ge=1, le=50)
    searxng_url: HttpUrl | None = None
    jina_url: HttpUrl = "https://s.jina.ai"
    brave_url: HttpUrl = "https://api.search.brave.com/res/v1/web/search"
    serper_url: HttpUrl = "https://google.serper.dev/search"
    corpus_dir: str | None = None
    rate_limit_per_s: float = Field(2.0, gt=0, description="requests per second, per provider")
    rate_limits: dict[SearchProviderName, float] = Field(
        default_factory=dict, description="per-provider overrides of rate_limit_per_s"
    )
    timeout_s: float = Field(15, gt=0)


class ReaderConfig(_Strict):
    provider: Literal["local", "jina"] = "local"
    jina_url: HttpUrl = "https://r.jina.ai"
    timeout_s: float = Field(30, gt=0)
    connect_timeout_s: float = Field(10, gt=0)
    max_bytes: int = Field(10 * 1024 * 1024, ge=1024)
    max_redirects: int = Field(5, ge=0, le=20)
    per_host_concurrency: int = Field(6, ge=1)
    global_concurrency: int = Field(16, ge=1)
    allow_private_urls: bool = False


class CacheConfig(_Strict):
    enabled: bool = True
    dir: str | None = None
    page_ttl_s: int = Field(86_400, ge=0)
    search_ttl_s: int = Field(3_600, ge=0)


class AgentConfig(_Strict):
    effort: Effort = "medium"
    budget: int | None = Field(None, ge=MIN_BUDGET)
    max_steps: int = Field(100, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    max_bad_attempts: int = Field(2, ge=1, le=10)
    direct_answer: bool = True
    # Team mode: up to this many concurrent sub-researches (deepsearch/agent/team/).
    team_size: int = Field(1, ge=1, le=8)
    reflect: bool = True  # offer the reflect action (effort low turns it off)
    recheck: bool = False  # hold an accepted answer against a second search (effort high)
    max_references: int = Field(10, ge=0, le=50)
    language: str | None = None
    boost_hostnames: HostList = Field(default_factory=list)
    bad_hostnames: HostList = Field(default_factory=list)
    only_hostnames: HostList = Field(default_factory=list)
    # A forced answer below this confidence is reported as not_found (exit 4).
    min_confidence: float | None = Field(None, ge=0.0, le=1.0)
    # Limits of the coding action's sandbox (its isolation is not configurable on purpose).
    sandbox_cpu_s: int = Field(5, ge=1, le=120)
    sandbox_wall_s: float = Field(10, gt=0, le=300)
    sandbox_memory_mb: int = Field(512, ge=64, le=8192)

    @property
    def token_budget(self) -> int:
        return self.budget if self.budget is not None else EFFORT_BUDGETS[self.effort]


_ANSWER_KEY_SITE = re.compile(r"(?:[\w-]+\.)+[\w-]+(?:/[\w.~%-]+)*", re.IGNORECASE)


def _answer_key_sites(values: list[str]) -> list[str]:
    """`host` or `host/path` (a repository on a code host), without a scheme."""
    sites = []
    for value in values:
        site = re.sub(r"^https?://", "", value.strip(), flags=re.IGNORECASE).rstrip("/")
        if not _ANSWER_KEY_SITE.fullmatch(site):
            raise ValueError(
                f"not a host or host/path (like github.com/openai/simple-evals): {value!r}"
            )
        host, _, path = site.partition("/")
        sites.append(host.lower() + (f"/{path}" if path else ""))
    return sites


class EvalConfig(_Strict):
    """`deepsearch eval`: benchmark runs."""

    concurrency: int = Field(4, ge=1, le=64)
    # Sites that publish benchmark answer keys: blocked from search results and reads
    # during an eval (unless --allow-answer-key-hosts), or a run could look the answer up.
    answer_key_hosts: Annotated[list[str], AfterValidator(_answer_key_sites)] = Field(
        default_factory=list
    )


class KeysConfig(_Strict):
    """Every secret the program holds: one `<name>_api_key` field per provider."""

    openai_api_key: SecretStr | None = None
    gemini_api_key: SecretStr | None = None
    jina_api_key: SecretStr | None = None
    brave_api_key: SecretStr | None = None
    serper_api_key: SecretStr | None = None

    def secret_values(self) -> list[str]:
        """The value of every key that is set, to mask in any output."""
        values = (getattr(self, field) for field in type(self).model_fields)
        return [v.get_secret_value() for v in values if v is not None and v.get_secret_value()]

    @staticmethod
    def env_vars() -> dict[str, str]:
        """Provider name -> the environment variable that sets its key (from ENV_KEYS)."""
        return {
            dotted.removeprefix("keys.").removesuffix("_api_key"): var
            for var, dotted in ENV_KEYS.items()
            if dotted.startswith("keys.")
        }


class Settings(_Strict):
    """The whole effective configuration, validated."""

    llm: LLMConfig
    search: SearchConfig = Field(default_factory=SearchConfig)
    reader: ReaderConfig = Field(default_factory=ReaderConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    keys: KeysConfig = Field(default_factory=KeysConfig)

    def tool_settings(self, provider: ProviderName, tool: ToolName) -> ModelSettings:
        """The provider default merged with the tool's override (and DEEPSEARCH_MODEL)."""
        table = self.llm.providers.get(provider)
        if table is None:
            raise ConfigError(f"no model table for provider {provider!r} in the configuration")
        merged = table.default.model_dump()
        if self.llm.model:
            merged["model"] = self.llm.model
        override = table.tools.get(tool)
        if override is not None:
            merged.update(override.model_dump(exclude_none=True))
        return ModelSettings.model_validate(merged)

    def context_window(self, provider: ProviderName) -> int:
        table = self.llm.providers.get(provider)
        return table.context_window if table else 32_768


class LoadedConfig(BaseModel):
    """Settings plus where each leaf value came from (for `deepsearch config`)."""

    settings: Settings
    sources: dict[str, str]
    user_file: str | None = None


# ---------------------------------------------------------------- merging


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value


def _merge_layer(
    merged: dict[str, Any], sources: dict[str, str], layer: Mapping[str, Any], source: str
) -> None:
    for dotted, value in _flatten(layer).items():
        if isinstance(value, Mapping) and not value:
            continue  # `{}` in a user file means "no change", not "erase the defaults"
        _set_dotted(merged, dotted, value)
        sources[dotted] = source


def _read_json_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cannot read config file (not UTF-8 text)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object")
    return data


def _env_layer(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    layer: dict[str, Any] = {}
    names: dict[str, str] = {}
    for var, dotted in ENV_KEYS.items():
        raw = environ.get(var)
        if raw is None or raw.strip() == "":
            continue
        value: Any = raw.strip()
        if dotted in _LIST_KEYS:
            value = [part.strip() for part in raw.split(",") if part.strip()]
        _set_dotted(layer, dotted, value)
        names[dotted] = var
    return layer, names


def _user_config_path(
    explicit: str | os.PathLike[str] | None, environ: Mapping[str, str]
) -> Path | None:
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            what = "is a directory, not a config file" if path.is_dir() else "config file not found"
            raise ConfigError(f"{path}: {what}")
        return path
    env_path = environ.get("DEEPSEARCH_CONFIG")
    if env_path:
        path = Path(env_path).expanduser()
        if not path.is_file():
            what = "is a directory, not a config file" if path.is_dir() else "config file not found"
            raise ConfigError(f"{path}: {what} (from DEEPSEARCH_CONFIG)")
        return path
    default = DEFAULT_USER_CONFIG.expanduser()
    return default if default.is_file() else None


def _describe_validation_error(exc: ValidationError, sources: dict[str, str]) -> str:
    """One line: the source (file, env var or flag), the dotted key, the problem."""
    err = exc.errors()[0]
    parts = [str(p) for p in err["loc"] if isinstance(p, str) and p != "[key]"]
    dotted = ".".join(parts)
    source = None
    for cut in range(len(parts), 0, -1):  # the longest configured prefix names the source
        prefix = ".".join(parts[:cut])
        source = sources.get(prefix) or next(
            (s for k, s in sources.items() if k.startswith(prefix + ".")), None
        )
        if source:
            break
    message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
    message = message.removeprefix("Value error, ")
    index = next((p for p in err["loc"] if isinstance(p, int)), None)
    if index is not None:
        message = f"item {index}: {message}"
    return f"{source or 'config'}: {dotted}: {message}"


def load_config(
    *,
    config_file: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    override_labels: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Build the effective settings. `overrides` are CLI flags as dotted keys;
    `override_labels` names the flag behind each key, for error messages."""
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}

    default_path = default_config_path()
    _merge_layer(merged, sources, _read_json_file(default_path), "default")

    user_path = _user_config_path(config_file, environ)
    if user_path is not None:
        _merge_layer(merged, sources, _read_json_file(user_path), str(user_path))

    env_layer, env_names = _env_layer(environ)
    for dotted, value in _flatten(env_layer).items():
        _set_dotted(merged, dotted, value)
        sources[dotted] = f"env {env_names[dotted]}"

    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        _set_dotted(merged, dotted, value)
        sources[dotted] = (override_labels or {}).get(dotted, "flag")
    apply_effort_preset(merged, sources)

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe_validation_error(exc, sources)) from None
    return LoadedConfig(
        settings=settings, sources=sources, user_file=str(user_path) if user_path else None
    )


def apply_effort_preset(merged: dict[str, Any], sources: dict[str, str]) -> None:
    """Fill the preset of the effective effort into every PRESET_KEYS key that only the
    shipped defaults set (flags, environment and user file win); its source becomes
    `effort <level>` where the value changes."""
    agent = merged.get("agent")
    effort = agent.get("effort", "medium") if isinstance(agent, dict) else "medium"
    preset = EFFORT_PRESETS.get(effort) if isinstance(effort, str) else None
    if preset is None:  # validation names the bad value
        return
    for key in PRESET_KEYS:
        dotted = f"agent.{key}"
        if sources.get(dotted, "default") != "default":
            continue
        value = getattr(preset, key)
        if not isinstance(agent, dict) or agent.get(key) != value:
            _set_dotted(merged, dotted, value)
            sources[dotted] = f"effort {effort}"


SECRET_MASK = "****"


def mask_secret(value: str) -> str:
    """Show that a secret is set without revealing any of it."""
    return f"{SECRET_MASK} (set)" if value else "-"  # not even its length


def effective_values(loaded: LoadedConfig) -> dict[str, tuple[Any, str]]:
    """dotted key -> (JSON value, source), secrets masked (for `config --json`)."""
    data = loaded.settings.model_dump(mode="python")
    out: dict[str, tuple[Any, str]] = {}
    for dotted, value in sorted(_flatten(data).items()):
        if isinstance(value, SecretStr):
            value = mask_secret(value.get_secret_value())
        elif isinstance(value, str):
            value = redact_userinfo(value)
        out[dotted] = (value, loaded.sources.get(dotted, "built-in"))
    return out


_SECRET_QUERY = re.compile(
    r"([?&;](?:[\w.-]*(?:key|token|secret|password|passwd|auth|signature|sig)[\w.-]*)=)[^&;#\s]+",
    re.IGNORECASE,
)


def redact_userinfo(text: str) -> str:
    """Hide credentials embedded in a URL: a password (http://user:pass@host →
    http://user:****@host) and credential-like query values (?api_key=… → ?api_key=****)."""
    text = re.sub(r"(?<=://)([^/@:\s]+):[^/@\s]+@", r"\1:" + SECRET_MASK + "@", text)
    return _SECRET_QUERY.sub(r"\1" + SECRET_MASK, text)


def effective_items(loaded: LoadedConfig) -> list[tuple[str, str, str]]:
    """(dotted key, display value, source) for every leaf, secrets masked."""
    data = loaded.settings.model_dump(mode="python")
    rows: list[tuple[str, str, str]] = []
    for dotted, value in sorted(_flatten(data).items()):
        if isinstance(value, SecretStr):
            shown = mask_secret(value.get_secret_value())
        elif value is None:
            # An unset choice is made at run time (llm.provider: by the keys that are set).
            shown = "auto" if dotted == "llm.provider" else "-"
        else:
            shown = json.dumps(value) if not isinstance(value, str) else redact_userinfo(value)
        rows.append((dotted, shown, loaded.sources.get(dotted, "built-in")))
    return rows
