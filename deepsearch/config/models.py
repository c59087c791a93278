"""The settings models: the whole configuration as pydantic validates it (strict:
an unknown key is an error), and the environment variables that set keys."""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from deepsearch.config.presets import EFFORT_BUDGETS, MAX_TEAM_SIZE, MIN_BUDGET, Effort
from deepsearch.config.redaction import url_secrets
from deepsearch.config.values import AnswerKeySites, HostList, HttpUrl, OptionalLanguage
from deepsearch.errors import ConfigError

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
    "follow_up",
]
ProviderName = Literal["gemini", "openai", "ollama"]
SearchProviderName = Literal["duckduckgo", "searxng", "jina", "brave", "serper", "local"]
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
    "DEEPSEARCH_DATA_DIR": "history.dir",
}


class _Strict(BaseModel):
    # defer_build: a section (AgentConfig, LLMConfig, ...) is validated inside Settings,
    # whose schema holds its own; its validator and serializer are built only if it is
    # ever used alone (issue 21: ~25 ms of CPU before a run's first request).
    model_config = ConfigDict(extra="forbid", defer_build=True)


class ModelSettings(_Strict):
    """What one LLM call is made with."""

    model: str
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(8192, ge=256, description="maximum output tokens")


class ModelOverride(_Strict):
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, ge=256)


class ModelPrice(_Strict):
    """What a model costs, in US dollars per million tokens (`llm.prices`: a user's
    price wins over the shipped table, docs/cost.md)."""

    model: str = Field(min_length=1)
    input: float = Field(ge=0, description="dollars per million input tokens")
    output: float = Field(ge=0, description="dollars per million output tokens")
    cached_input: float | None = Field(
        None, ge=0, description="dollars per million cached input tokens (default: input)"
    )


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
    # One LLM call's limits (llm/call_limits.py); None: by where the call goes,
    # 300 s / 120 s for a hosted API, 900 s / 600 s for a local server.
    timeout_s: float | None = Field(
        None, gt=0, description="whole-call limit in seconds (default: by endpoint)"
    )
    first_token_timeout_s: float | None = Field(
        None, gt=0, description="first-token allowance in seconds (default: by endpoint)"
    )
    max_retries: int = Field(3, ge=0, le=10)
    concurrency: int = Field(4, ge=1, le=64)
    embedding_model: str | None = None
    jina_embedding_model: str | None = None
    jina_embedding_url: HttpUrl = "https://api.jina.ai"
    providers: dict[ProviderName, ProviderModels]
    # A list, not a mapping: model names hold dots ("gemini-2.5-flash"), which the
    # dotted keys of the configuration layers would split.
    prices: list[ModelPrice] = Field(default_factory=list)


# Declared once: SearchConfig and RunOptions (the loop's copy) share it.
ResultsPerQuery = Annotated[int, Field(ge=1, le=50)]
_DEFAULT_SEARCH: list[SearchProviderName] = ["duckduckgo"]


class SearchConfig(_Strict):
    providers: list[SearchProviderName] = Field(default_factory=lambda: _DEFAULT_SEARCH.copy())
    results_per_query: ResultsPerQuery = 10
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


class HistoryConfig(_Strict):
    """The run history (deepsearch/history/): one SQLite file in the data directory."""

    enabled: bool = True
    dir: str | None = None  # None: the user data directory (platformdirs)


class AgentOptions(_Strict):
    """The agent.* keys the research loop reads: declared once, here. RunOptions
    (agent/deps.py) derives from this class, so a bound holds for a config file, a
    flag, a server knob and the loop alike."""

    max_steps: int = Field(100, ge=1)
    timeout_s: float | None = Field(None, gt=0)
    max_bad_attempts: int = Field(2, ge=1, le=10)
    direct_answer: bool = True
    # Team mode: up to this many concurrent sub-researches (deepsearch/agent/team/).
    team_size: int = Field(1, ge=1, le=MAX_TEAM_SIZE)
    reflect: bool = True  # offer the reflect action (effort low turns it off)
    recheck: bool = False  # hold an accepted answer against a second search (effort high)
    max_references: int = Field(10, ge=0, le=50)
    language: OptionalLanguage = None
    boost_hostnames: HostList = Field(default_factory=list)
    bad_hostnames: HostList = Field(default_factory=list)
    only_hostnames: HostList = Field(default_factory=list)
    # A forced answer below this confidence is reported as not_found (exit 4).
    min_confidence: float | None = Field(None, ge=0.0, le=1.0)


class AgentConfig(AgentOptions):
    effort: Effort = "medium"
    budget: int | None = Field(None, ge=MIN_BUDGET)
    # A hard cap in US dollars, enforced like the token budget (llm/tracker.py).
    max_cost: float | None = Field(None, gt=0, description="cost limit in US dollars")
    # Limits of the coding action's sandbox (its isolation is not configurable on purpose).
    sandbox_cpu_s: int = Field(5, ge=1, le=120)
    sandbox_wall_s: float = Field(10, gt=0, le=300)
    sandbox_memory_mb: int = Field(512, ge=64, le=8192)

    @property
    def token_budget(self) -> int:
        return self.budget if self.budget is not None else EFFORT_BUDGETS[self.effort]


class EvalConfig(_Strict):
    """`deepsearch eval`: benchmark runs."""

    concurrency: int = Field(4, ge=1, le=64)
    # Sites that publish benchmark answer keys: blocked from search results and reads
    # during an eval (unless --allow-answer-key-hosts), or a run could look the answer up.
    answer_key_hosts: AnswerKeySites = Field(default_factory=list)


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
    history: HistoryConfig = Field(default_factory=HistoryConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    keys: KeysConfig = Field(default_factory=KeysConfig)

    def secret_values(self) -> list[str]:
        """Every key that is set, and the credentials of every `user:pass@` URL (its
        password and the `Basic` credential sent for it): what any output masks."""
        urls = [
            value
            for section in (self.llm, self.search, self.reader)
            for value in section.model_dump().values()
            if isinstance(value, str) and "@" in value
        ]
        return [*self.keys.secret_values(), *(s for url in urls for s in url_secrets(url))]

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

    # Built at first use, when Settings is already complete (load_config validates it
    # first) and its schema is reused; built at import, it generated Settings' whole
    # schema a second time (~20 ms of CPU before a run's first request, issue 21).
    model_config = ConfigDict(defer_build=True)

    settings: Settings
    sources: dict[str, str]
    user_file: str | None = None


class Bounds(NamedTuple):
    """A numeric key's limits, as its field declares them (None: unbounded)."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None


def key_bounds(dotted: str) -> Bounds:
    """The bounds of a configuration key ("agent.team_size"), read from its field: the
    flag table's `--help`, MCP's input schema and the tests take them from here."""
    model: type[BaseModel] = Settings
    info = None
    for part in dotted.split("."):
        info = model.model_fields[part]
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            model = info.annotation
    found: dict[str, float] = {}
    for item in info.metadata if info is not None else ():
        for name in Bounds._fields:
            if isinstance(getattr(item, name, None), int | float):
                found[name] = getattr(item, name)
    return Bounds(**found)
