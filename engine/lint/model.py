"""Which config.json the model checks read: the checkpoint the command names when it can be
loaded (the bundled catalog, an official quantized sibling of a bundled config, the Hugging Face
cache), else the selected model or a bundled config of the same family and size as a stand-in,
else none. Config overrides the command passes (``--hf-overrides``,
``--json-model-override-args``) are applied on top, as the engine applies them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.decision import Decision, Name, Param
from engine.errors import InputError
from engine.lint import codes as C
from engine.lint.rule_data import lint_rules
from engine.model import store
from engine.model.checkpoint import detect_checkpoint_format
from engine.model.config import normalize
from engine.model.formats import Sibling, official_sibling, raw_in_format
from engine.model.loader import (
    HF_ID,
    LoadedModel,
    catalog_names,
    catalog_path,
    load_catalog,
    load_hub,
)

_TOKEN_SPLIT = re.compile(r"[-_.]+")
MAX_ID_CHARS = 200  # a Hugging Face id or a path; longer is not one (and no file name)
_UNQUANTIZED = frozenset({"bf16", "fp16", "fp32"})


@dataclass(frozen=True)
class ModelChoice:
    """The config the model checks read, and how it relates to what the command names.

    ``own``: the config is the command's own checkpoint (or the only model the user gave);
    False for a stand-in of the same family, whose parser names and checkpoint details may
    differ. ``note``: (finding code, what, fix) for the report, or None."""

    loaded: LoadedModel | None
    own: bool
    note: tuple[str, Decision, Decision] | None = None


def repo_name(model_id: str) -> str:
    return model_id.rstrip("/").rsplit("/", 1)[-1]


def tokens(model_id: str) -> list[str]:
    return [t for t in _TOKEN_SPLIT.split(repo_name(model_id).lower()) if t]


def _significant(model_id: str) -> list[str]:
    names = lint_rules().model_names
    return [t for t in tokens(model_id) if not names.is_variant(t)]


def relatedness(a: str, b: str) -> tuple[int, int, int] | None:
    """How close two checkpoint names are, or None when they name different models: the same
    significant tokens, or a shared leading run of them, with equal size tokens (70b, a3b, 16e)
    where both state them. Larger is closer."""
    names = lint_rules().model_names
    ta, tb = _significant(a), _significant(b)
    if not ta or not tb:
        return None
    sa = {t for t in ta if names.is_size(t)}
    sb = {t for t in tb if names.is_size(t)}
    if sa and sb and sa != sb:
        return None
    if set(ta) & set(names.distinct_tokens) != set(tb) & set(names.distinct_tokens):
        return None
    if ta == tb:
        return (1, len(ta), 0)
    shared = 0
    for x, y in zip(ta, tb, strict=False):
        if x != y:
            break
        shared += 1
    if shared < names.min_shared_prefix:
        return None
    extra = len(set(tokens(a)) ^ set(tokens(b)))
    return (0, shared, -extra)


def same_model(command_id: str, name: str) -> bool:
    return (
        command_id.rstrip("/").lower() == name.lower()
        or repo_name(command_id).lower() == repo_name(name).lower()
    )


def _hinted_dtype(model_id: str) -> str | None:
    """The weight format a checkpoint name states (-FP8, -NVFP4, -FP4, -AWQ ...), or None."""
    fmt = detect_checkpoint_format({"architectures": ["LlamaForCausalLM"]}, model_id)
    if not fmt.from_model_id:
        return None
    return fmt.weight_dtype if fmt.weight_dtype != "unknown" else None


def _weight_dtype(loaded: LoadedModel) -> str:
    return detect_checkpoint_format(loaded.config.raw).weight_dtype


def derived(loaded: LoadedModel, name: str, changes: dict[str, Any]) -> LoadedModel:
    """``loaded`` with top-level config fields replaced, held under ``name``."""
    raw = dict(loaded.config.raw) | changes
    return LoadedModel(normalize(raw), "derived", name)


def _with_format(loaded: LoadedModel, model_id: str) -> tuple[LoadedModel, str | None]:
    """``loaded`` re-described as the format ``model_id`` states, when it states another one
    (the config of zai-org/GLM-5 for zai-org/GLM-5-FP8); the format applied, or None."""
    hint = _hinted_dtype(model_id)
    configs = lint_rules().model_names.quantization_configs
    if hint is None or hint not in configs or hint == _weight_dtype(loaded):
        return loaded, None
    qc = dict(configs[hint])
    return derived(loaded, f"{loaded.name} ({hint.upper()})", {"quantization_config": qc}), hint


def _in_sibling_format(sibling: Sibling) -> tuple[LoadedModel, str | None]:
    """The bundled base of an official sibling (data/recipes.yaml checkpoints) in the sibling's
    format, as the loader answers its id offline; the format applied, or None when the base
    already is in it (or the format has no known quantization_config)."""
    base = load_catalog(sibling.base)
    raw = raw_in_format(base.config.raw, sibling.fmt)
    if raw is None or sibling.fmt == _weight_dtype(base):
        return base, None
    name = f"{base.name} ({sibling.fmt.upper()})"
    return LoadedModel(normalize(raw), "derived", name), sibling.fmt


# Whether the hub may be asked: a flag, or a callable asked before each fetch (the app counts
# each fetch against the session's allowance of loads and answers False past it).
HubPolicy = bool | Callable[[], bool]


def _hub(model_id: str) -> LoadedModel | None:
    try:
        return load_hub(model_id)
    except InputError:
        return None


def resolve(
    command_id: str | None,
    has_variables: bool,
    given: LoadedModel | None,
    hub: HubPolicy,
) -> ModelChoice:
    """The config to check ``command_id`` against. ``given``: the model selected in the app or
    passed with --model; ``hub``: the Hugging Face hub may be asked (its local cache always is; a
    callable is asked before the fetch)."""
    if command_id is None or has_variables or not command_id.strip():
        if given is None:
            return ModelChoice(None, False)
        return ModelChoice(given, True)
    cid = command_id.strip()
    if len(cid) > MAX_ID_CHARS or not cid.isprintable():
        return ModelChoice(
            None,
            False,
            ("model-not-loaded", C.NOT_LOADED_LONG(chars=len(cid)), C.NOT_LOADED_LONG_FIX()),
        )
    shown_given = given.name if given is not None else None
    if given is not None and same_model(cid, given.name):
        return ModelChoice(given, True)

    def differs(loaded: LoadedModel, sibling: tuple[str, str] | None = None) -> ModelChoice:
        note = None
        if shown_given is not None:
            model, selected = Name(cid), Name(shown_given)
            what = (
                C.DIFFERS_SIBLING(
                    model=model,
                    selected=selected,
                    format=Name(sibling[0].upper()),
                    bundled=Name(sibling[1]),
                )
                if sibling is not None
                else C.DIFFERS(model=model, selected=selected)
            )
            note = ("model-differs", what, C.DIFFERS_FIX(model=model))
        return ModelChoice(loaded, True, note)

    if catalog_path(cid) is not None and not cid.startswith(("/", ".", "~")):
        return differs(load_catalog(cid))
    sibling = official_sibling(cid)
    if sibling is not None and catalog_path(sibling.base) is not None:
        loaded, fmt = _in_sibling_format(sibling)
        return differs(loaded, (sibling.fmt, sibling.base) if fmt else None)
    if HF_ID.match(cid):
        fetched = _hub(cid) if (hub() if callable(hub) else hub) else None
        if fetched is not None:
            return differs(fetched)
    return _stand_in(cid, given)


def _stand_in(cid: str, given: LoadedModel | None) -> ModelChoice:
    """A related config (the given one first) for a checkpoint whose own cannot be loaded."""
    best: tuple[tuple[int, int, int], int, LoadedModel | str] | None = None
    candidates: list[LoadedModel | str] = []
    if given is not None:
        candidates.append(given)
    candidates += catalog_names()
    for rank, cand in enumerate(candidates):
        name = cand.name if isinstance(cand, LoadedModel) else cand
        score = relatedness(cid, name)
        if score is None:
            continue
        key = (score, -rank)
        if best is None or key > (best[0], best[1]):
            best = (score, -rank, cand)
    model = Name(cid)
    if best is None:
        what = (
            C.NOT_LOADED_SELECTED(model=model, selected=Name(given.name))
            if given is not None
            else C.NOT_LOADED(model=model)
        )
        return ModelChoice(None, False, ("model-not-loaded", what, C.NOT_LOADED_FIX(model=model)))
    cand = best[2]
    base = cand if isinstance(cand, LoadedModel) else load_catalog(cand)
    loaded, fmt = _with_format(base, cid)
    params: dict[str, Param] = {"model": model, "config": Name(base.name)}
    if fmt:
        params["format"] = Name(fmt.upper())
    if given is not None and given.name != base.name:
        params["selected"] = Name(given.name)
    code = {
        (False, False): C.STAND_IN,
        (True, False): C.STAND_IN_FORMAT,
        (False, True): C.STAND_IN_SELECTED,
        (True, True): C.STAND_IN_SELECTED_FORMAT,
    }[("format" in params, "selected" in params)]
    return ModelChoice(
        loaded, False, ("model-stand-in", code(**params), C.STAND_IN_FIX(model=model))
    )


def scenario_fields(loaded: LoadedModel) -> dict[str, Any]:
    """The Scenario fields that name ``loaded``: catalog and hub by id, anything else by the
    digest it is held under."""
    if loaded.source == "catalog":
        return {"source": "catalog", "model": loaded.name}
    if loaded.source == "hub" and HF_ID.match(loaded.name):
        return {"source": "hub", "model": loaded.name}
    name = "".join(c for c in loaded.name if c.isprintable())[:200] or "config.json"
    return {"source": "file", "model": name, "digest": store.put(loaded)}


def with_overrides(loaded: LoadedModel, overrides: dict[str, Any] | None) -> LoadedModel:
    """The config with the command's ``--hf-overrides`` / ``--json-model-override-args``."""
    if not overrides:
        return loaded
    return derived(loaded, loaded.name, overrides)
