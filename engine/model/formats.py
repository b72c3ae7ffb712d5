"""Checkpoint formats without fetching: a config re-described as an official sibling's format.

An official FP8 / NVFP4 / MXFP4 sibling of a model (``data/recipes.yaml`` ``checkpoints``: each
row the base, its siblings' Hub ids and the recipe it was read from) has the same shapes as its
base; its weights differ by format. So a sibling of a bundled config can be sized without its
own ``config.json``: the base config with the minimal ``quantization_config`` of that format
(``data/lint.yaml`` ``model_names.quantization_configs``, as ``data/software.yaml``'s checkpoint
formats detect them). The alternatives re-check a sibling this way, and the loader answers a
sibling's Hub id this way when the hub cannot be read — so a suggested checkpoint applies
offline exactly as it was checked.

Works on raw config mappings (the loader sits below the model's layers and uses it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.rules import data_yaml

# A sibling stored in 16-bit: the base's architecture with no quantization_config.
UNQUANTIZED = ("bf16", "fp16")


def quantization_configs() -> dict[str, dict[str, Any]]:
    """Format name -> its minimal ``quantization_config``."""
    configs: dict[str, dict[str, Any]] = data_yaml("lint.yaml")["model_names"][
        "quantization_configs"
    ]
    return configs


def raw_in_format(raw: Mapping[str, Any], fmt: str) -> dict[str, Any] | None:
    """``raw`` re-described in checkpoint format ``fmt`` (None: a format with no known
    quantization_config)."""
    if fmt in UNQUANTIZED:
        return {k: v for k, v in raw.items() if k != "quantization_config"}
    qc = quantization_configs().get(fmt)
    if qc is None:
        return None
    return dict(raw) | {"quantization_config": dict(qc)}


@dataclass(frozen=True)
class Sibling:
    """An official checkpoint of a bundled model in another format."""

    repo: str  # the sibling's Hub id
    base: str  # the row's bundled catalog model
    fmt: str  # its format: fp8, nvfp4, mxfp4, bf16, ...
    source: str  # the recipe the row was read from


@cache
def _siblings() -> dict[str, Sibling]:
    out: dict[str, Sibling] = {}
    for row in data_yaml("recipes.yaml")["checkpoints"]:
        base = row.get("bundled_model")
        if not isinstance(base, str):
            continue
        for fmt, entry in row.items():
            repo = entry.get("repo") if isinstance(entry, dict) else None
            if isinstance(repo, str) and repo.lower() != base.lower():
                out.setdefault(repo.lower(), Sibling(repo, base, fmt, str(row.get("source", ""))))
    return out


def official_sibling(repo_id: str) -> Sibling | None:
    """The bundled model ``repo_id`` is an official sibling of, and its format; None when the
    recipes name no such checkpoint."""
    return _siblings().get(repo_id.strip().rstrip("/").lower())
