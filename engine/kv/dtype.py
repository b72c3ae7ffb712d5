"""The ``--kv-cache-dtype`` spellings across the engines: those a scenario may ask for, those
every engine accepts, and a spelling as the dtype it stores in terms both engines share.

What an engine stores for a request is its adapter's rule (``EngineAdapter.kv_dtype``; its
``kv_aliases`` are its own spellings): vLLM maps ``auto`` to the model dtype or the checkpoint's
declared KV dtype and lets a DSA backend pack fp8 rows; SGLang picks the DSA dtype per GPU
generation. This module only gathers the adapters' spellings; it decides nothing per engine.
"""

from __future__ import annotations

from engine.engines import ENGINES, adapter
from engine.engines.kvstore import DTYPE_BYTES, KvDtype, is_dsa, model_dtype, modelopt_kv_dtype

# Every spelling some engine accepts, each engine's in its own order (the scenario's choices).
KV_DTYPE_CHOICES: tuple[str, ...] = tuple(
    dict.fromkeys(name for e in ENGINES for name in adapter(e).kv_aliases)
)
# The spellings every engine accepts (a command's value both engines' sizing can study).
SHARED_KV_DTYPES: frozenset[str] = frozenset.intersection(
    *(frozenset(adapter(e).kv_aliases) for e in ENGINES)
)

__all__ = [
    "DTYPE_BYTES",
    "KV_DTYPE_CHOICES",
    "SHARED_KV_DTYPES",
    "KvDtype",
    "is_dsa",
    "model_dtype",
    "modelopt_kv_dtype",
    "stored_name",
]


def stored_name(spelling: str) -> str:
    """``spelling`` as the dtype it stores, in terms the engines share: any engine's renaming
    applied until none renames it further (bf16 is bfloat16; fp8 and fp8_ds_mla are the
    fp8_e4m3 SGLang stores them as); a spelling no engine knows stays as written."""
    name = spelling.strip().lower()
    for _ in range(len(ENGINES) + 1):
        renamed = next(
            (
                adapter(e).kv_aliases[name]
                for e in ENGINES
                if adapter(e).kv_aliases.get(name, name) != name
            ),
            name,
        )
        if renamed == name:
            break
        name = renamed
    return name
