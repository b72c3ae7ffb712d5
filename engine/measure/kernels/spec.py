"""``--model-dims``: a JSON object (inline or a file) naming a preset and KernelDims fields to
change, read bounded and validated with pydantic before any dims are built."""

from __future__ import annotations

import json
import os
from dataclasses import fields
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, create_model

from engine import errors as E
from engine.decision import Name
from engine.errors import InputError
from engine.measure.input_guards import read_utf8
from engine.measure.kernels.dims import (
    DIMS_FIELD,
    DIMS_OBJECT,
    DIMS_SIZE,
    NUMBER_TOO_LONG,
    PRESET_WITH_MODEL,
    KernelDims,
)
from engine.measure.kernels.from_model import preset_dims
from engine.measure.measure_data import measure_facts

_FIELD = "model-dims"
_SETTABLE = tuple(f.name for f in fields(KernelDims) if f.name not in ("name", "kv"))

# {"preset": "llama-3.1-70b", "num_layers": 40}: every key optional, unknown keys refused.
DimsSpec: type[BaseModel] = create_model(
    "DimsSpec",
    __config__=ConfigDict(frozen=True, extra="forbid"),
    preset=(str | None, None),
    **{name: (StrictInt | None, None) for name in _SETTABLE},  # type: ignore[call-overload]
)


def _looks_like_path(text: str) -> bool:
    return not text.startswith(("{", "[")) and (os.sep in text or os.path.exists(text))


def read_dims_spec(text: str) -> dict[str, Any]:
    """The JSON object behind ``--model-dims``: inline JSON, or a path to a JSON file (a
    regular, UTF-8 file within the size limit; anything else is one ``InputError``)."""
    limit = measure_facts().limits.dims_bytes
    source = text.strip()
    if _looks_like_path(source):
        source = read_utf8(source, _FIELD, limit)
    elif len(source.encode("utf-8", "surrogatepass")) > limit:
        raise InputError(_FIELD, DIMS_SIZE(most=limit // 1024))
    try:
        data = json.loads(source)
    except json.JSONDecodeError as err:
        raise InputError(
            _FIELD, E.JSON(line=err.lineno, column=err.colno, problem=E.json_problem(err.msg))
        ) from None
    except RecursionError:
        raise InputError(_FIELD, E.FILE_DEPTH()) from None
    except ValueError:  # an integer past Python's 4,300-digit conversion limit
        raise InputError(_FIELD, NUMBER_TOO_LONG()) from None
    if not isinstance(data, dict):
        raise InputError(_FIELD, DIMS_OBJECT())
    return data


def dims_from_spec(spec: dict[str, Any], base: KernelDims | None = None) -> KernelDims:
    """``{"preset": "llama-3.1-70b", "num_layers": 40}``: a preset's dims (default: the
    ``default`` preset), or ``base``, with fields changed. A changed shape drops the engine's
    KV numbers (they describe the unchanged model)."""
    try:
        parsed = DimsSpec.model_validate(spec)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        expected = (
            DIMS_FIELD(fields=tuple(Name(n) for n in _SETTABLE))
            if first["type"] == "extra_forbidden"
            else E.VALID(kind=Name(first["type"]), got=E.got(first.get("input")))
        )
        raise InputError(f"{_FIELD}.{where}" if where else _FIELD, expected) from None
    values = parsed.model_dump(exclude_none=True)
    preset = values.pop("preset", None)
    if base is not None and preset is not None:
        raise InputError(f"{_FIELD}.preset", PRESET_WITH_MODEL())
    dims = base if base is not None else preset_dims(preset or "default")
    return dims.with_fields(**values) if values else dims


def dims_from_json(text: str) -> KernelDims:
    """``--model-dims``: a JSON object (or a path to one) of KernelDims fields, optionally with
    ``"preset"`` (a short preset name or any bundled catalog model)."""
    return dims_from_spec(read_dims_spec(text))
