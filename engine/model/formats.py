"""A config re-described as another checkpoint format: the same architecture with the minimal
``quantization_config`` of that format (``data/lint.yaml`` ``model_names.quantization_configs``,
as ``data/software.yaml``'s checkpoint formats detect them).

An official FP8 or NVFP4 sibling of a model (``data/recipes.yaml`` ``checkpoints``) has the same
shapes as its base; its weights differ by format. To re-check an alternative that names such a
checkpoint without fetching it, the Study sizes the base config in that format.
"""

from __future__ import annotations

from typing import Any

from engine.model.config import normalize
from engine.model.loader import LoadedModel
from engine.rules import data_yaml


def quantization_configs() -> dict[str, dict[str, Any]]:
    """Format name -> its minimal ``quantization_config``."""
    configs: dict[str, dict[str, Any]] = data_yaml("lint.yaml")["model_names"][
        "quantization_configs"
    ]
    return configs


def as_format(loaded: LoadedModel, fmt: str, name: str) -> LoadedModel | None:
    """``loaded`` in checkpoint format ``fmt``, held under ``name`` (None: a format with no
    known quantization_config)."""
    qc = quantization_configs().get(fmt)
    if qc is None:
        return None
    raw = dict(loaded.config.raw) | {"quantization_config": dict(qc)}
    return LoadedModel(normalize(raw), "derived", name)
