"""The serving engines' own CLI tables, pinned to the version they were extracted from, asked of
the engine's adapter (``engine.engines``): every option its parser accepts, with its choices, and
the live registries behind the open-ended options (tool-call and reasoning parsers, quantization
methods, KV-cache dtypes, attention backends). Both were produced by
``tools/extract_engine_flags.py`` from the installed package, so a command built or linted
against them uses only spellings and values that engine accepts.

Where several versions of an engine's tables sit in ``data/engines/``, the newest is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from engine.engines import ENGINES, Engine, adapter
from engine.engines import check_engine as _check_engine
from engine.engines.cli_table import ENGINES_DIR, ChoicesSource, FlagInfo
from engine.engines.cli_table import table_path as _table_path

__all__ = [
    "ENGINES",
    "ENGINES_DIR",
    "ChoicesSource",
    "Engine",
    "FlagInfo",
    "attention_backends",
    "engine_version",
    "flag_table",
    "kv_cache_dtypes",
    "lookup_flag",
    "quantization_methods",
    "reasoning_parsers",
    "supported_architectures",
    "table_path",
    "tool_call_parsers",
]


def table_path(engine: Engine, kind: Literal["flags", "registries"]) -> Path:
    """The JSON file a table is read from (shown as the source of flag facts)."""
    return _table_path(_check_engine(engine), kind)


def flag_table(engine: Engine) -> Mapping[str, FlagInfo]:
    """Every option spelling the engine's parser accepts (aliases and ``--no-X`` included).
    Read-only and loaded once: callers share the one table."""
    return adapter(engine).flags


def lookup_flag(engine: Engine, spelling: str) -> FlagInfo | None:
    """The option a command-line token names, or None: ``--flag=value`` and the spellings the
    engine's own parser accepts besides the table's (vLLM: ``--flag_with_underscores`` and
    ``--json-option.key``; SGLang: a unique prefix such as ``--tp``)."""
    return adapter(engine).lookup(spelling)


def engine_version(engine: Engine) -> str:
    """The engine release the bundled tables were extracted from, e.g. "0.33.0"."""
    return adapter(engine).version


def tool_call_parsers(engine: Engine) -> frozenset[str]:
    """Registered ``--tool-call-parser`` names (SGLang's CLI also accepts ``auto``: no parser)."""
    return adapter(engine).registries.tool_call_parsers


def reasoning_parsers(engine: Engine) -> frozenset[str]:
    """Registered ``--reasoning-parser`` names."""
    return adapter(engine).registries.reasoning_parsers


def quantization_methods(engine: Engine) -> frozenset[str]:
    """Values ``--quantization`` accepts (vLLM ``QUANTIZATION_METHODS``, SGLang's choices)."""
    return adapter(engine).registries.quantization_methods


def kv_cache_dtypes(engine: Engine) -> frozenset[str]:
    """Values ``--kv-cache-dtype`` accepts."""
    return adapter(engine).registries.kv_cache_dtypes


def attention_backends(engine: Engine) -> frozenset[str]:
    """Values ``--attention-backend`` accepts."""
    return adapter(engine).registries.attention_backends


def supported_architectures(engine: Engine) -> frozenset[str] | None:
    """Model classes the engine implements natively, when the extractor recorded them.

    The bundled 0.33.0 / 0.5.23 tables predate that field, so this is None for them; callers then
    fall back to the per-architecture rows in ``data/software.yaml``.
    """
    return adapter(engine).registries.model_architectures
