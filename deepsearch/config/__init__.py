"""Layered configuration: CLI flag > environment > user config file > shipped config.json.

`deepsearch config` prints each value's provenance, with secrets masked. The package
by job (import the names below from `deepsearch.config`; the modules are its parts):

    presets.py    effort levels (budget and behaviour), the smallest budget
    values.py     field types that validate what users mistype (URLs, host lists,
                  language codes)
    models.py     the settings models (strict pydantic), the environment variables and
                  each key's bounds (key_bounds: declared once, on the field)
    loading.py    merging the layers with each leaf's source; load_config(), and
                  with_overrides() for one more layer (serve's request knobs)
    redaction.py  masking secrets and URL credentials in any output
    display.py    the effective values and sources, for `deepsearch config`

It imports only deepsearch.errors and deepsearch.resources from the project.
"""

from deepsearch.config.display import effective_items, effective_values
from deepsearch.config.loading import DEFAULT_USER_CONFIG, load_config, with_overrides
from deepsearch.config.models import (
    ENV_KEYS,
    AgentConfig,
    AgentOptions,
    Bounds,
    CacheConfig,
    EvalConfig,
    HistoryConfig,
    KeysConfig,
    LLMConfig,
    LoadedConfig,
    ModelOverride,
    ModelPrice,
    ModelSettings,
    ProviderModels,
    ProviderName,
    ReaderConfig,
    SearchConfig,
    SearchProviderName,
    Settings,
    ToolName,
    key_bounds,
)
from deepsearch.config.presets import (
    EFFORT_BUDGETS,
    EFFORT_PRESETS,
    MAX_TEAM_SIZE,
    MIN_BUDGET,
    PRESET_KEYS,
    Effort,
    EffortPreset,
)
from deepsearch.config.redaction import (
    MIN_SECRET_LENGTH,
    SECRET_MASK,
    mask_secret,
    maskable,
    redact_secrets,
    redact_userinfo,
)
from deepsearch.config.values import LANGUAGE_NAMES, HostList, HttpUrl, Language

__all__ = [
    "DEFAULT_USER_CONFIG",
    "EFFORT_BUDGETS",
    "EFFORT_PRESETS",
    "LANGUAGE_NAMES",
    "ENV_KEYS",
    "MAX_TEAM_SIZE",
    "MIN_BUDGET",
    "MIN_SECRET_LENGTH",
    "PRESET_KEYS",
    "SECRET_MASK",
    "AgentConfig",
    "AgentOptions",
    "Bounds",
    "CacheConfig",
    "Effort",
    "EffortPreset",
    "EvalConfig",
    "HistoryConfig",
    "HostList",
    "HttpUrl",
    "KeysConfig",
    "Language",
    "LLMConfig",
    "LoadedConfig",
    "ModelOverride",
    "ModelPrice",
    "ModelSettings",
    "ProviderModels",
    "ProviderName",
    "ReaderConfig",
    "SearchConfig",
    "SearchProviderName",
    "Settings",
    "ToolName",
    "effective_items",
    "effective_values",
    "key_bounds",
    "load_config",
    "mask_secret",
    "maskable",
    "redact_secrets",
    "redact_userinfo",
    "with_overrides",
]
