"""The Scenario: everything a user chooses, in one validated, frozen object.

The CLI flags, the URL query parameters and the app's sidebar all parse into a ``Scenario``
with the same rules and the same error text (``InputError(field, expected)``). The study of a
scenario (``engine.study.study``) is a pure function of it, so equal scenarios give one
cached study and every reader (pages, CLI, linter, manifests) sees the same decision.

A pinned layout field (``tp``, ``dp``, ``ep``, ``pp``, ``replicas``) left at ``None`` is the
engine's to choose; a value overrides the layout search everywhere at once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import InputError
from engine.kv.dtype import KV_DTYPE_CHOICES
from engine.rules import load_data

Engine = Literal["vllm", "sglang"]
ENGINES: tuple[Engine, ...] = get_args(Engine)
ENGINE_LABELS: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang"}
Latency = Literal["latency", "balanced", "throughput"]
LATENCY_PRIORITIES: tuple[Latency, ...] = get_args(Latency)
# catalog: a bundled config; hub: a Hugging Face id; file: config bytes given by the user (an
# upload, a paste, a CLI path), addressed by their digest in engine.model.store.
Source = Literal["catalog", "hub", "file"]
SOURCES: tuple[Source, ...] = get_args(Source)


class _Defaults(BaseModel):
    """data/scenario.yaml: where a new scenario starts (each value with its reason there)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    model: str = Field(min_length=1)
    gpu: str = Field(min_length=1)
    gpus_per_node: int = Field(ge=1)
    context: int = Field(ge=1)
    users: int = Field(ge=1)


def _load_defaults() -> _Defaults:
    return load_data(_Defaults, "scenario.yaml")


DEFAULTS = _load_defaults()
DEFAULT_MODEL = DEFAULTS.model
DEFAULT_GPU = DEFAULTS.gpu
DEFAULT_CONTEXT = DEFAULTS.context
MAX_GPUS_PER_NODE = 64
MAX_NODES = 128
MAX_USERS = 1_000_000
MAX_CONTEXT = 1 << 26
MAX_NAME_CHARS = 200  # a model id, a file name or a GPU name; longer is not a name
MAX_PARALLEL = MAX_GPUS_PER_NODE * MAX_NODES


class Scenario(BaseModel):
    """One serving question: which model, on which GPUs, with which engine, for what workload,
    and any layout the user pins. Field bounds are the ones the engine accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source = "catalog"
    model: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)] = DEFAULT_MODEL
    digest: str | None = None  # sha256 of the config bytes when source == "file"
    gpu: Annotated[str, Field(min_length=1, max_length=64)] = DEFAULT_GPU
    gpus_per_node: Annotated[int, Field(strict=True, ge=1, le=MAX_GPUS_PER_NODE)] = (
        DEFAULTS.gpus_per_node
    )
    nodes: Annotated[int, Field(strict=True, ge=1, le=MAX_NODES)] = 1
    engine: Engine = "vllm"
    context: Annotated[int, Field(strict=True, ge=1, le=MAX_CONTEXT)] | None = DEFAULT_CONTEXT
    users: Annotated[int, Field(strict=True, ge=1, le=MAX_USERS)] = DEFAULTS.users
    prefix_overlap: Annotated[int, Field(strict=True, ge=0, le=100)] = 0
    latency: Latency = "balanced"
    kv_dtype: str = "auto"
    memory_fraction: Annotated[float, Field(ge=0.05, le=1.0, allow_inf_nan=False)] | None = None
    images: bool = False
    tp: Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None = None
    dp: Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None = None
    pp: Annotated[int, Field(strict=True, ge=1, le=MAX_NODES)] | None = None
    ep: bool | None = None
    replicas: Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None = None
    # requests one engine runs at once (vLLM --max-num-seqs, SGLang --max-running-requests);
    # None: the plan decides (the engine's default, or fewer when that is what frees the memory)
    max_num_seqs: Annotated[int, Field(strict=True, ge=1, le=MAX_USERS)] | None = None

    @field_validator("gpu")
    @classmethod
    def _gpu_key(cls, v: str) -> str:
        from engine.hardware.gpus import lookup_gpu

        try:
            return lookup_gpu(v).key
        except InputError as err:
            raise ValueError(err.expected) from None

    @field_validator("kv_dtype")
    @classmethod
    def _kv(cls, v: str) -> str:
        key = v.strip().lower()
        if key not in KV_DTYPE_CHOICES:
            raise ValueError(f"one of {', '.join(KV_DTYPE_CHOICES)}")
        return key

    @field_validator("digest")
    @classmethod
    def _digest(cls, v: str | None) -> str | None:
        if v is not None and (len(v) != 64 or any(c not in "0123456789abcdef" for c in v)):
            raise ValueError("a sha256 hex digest of the config bytes")
        return v

    @field_validator("model")
    @classmethod
    def _printable(cls, v: str) -> str:
        if any(not c.isprintable() for c in v):
            raise ValueError("a name without control characters or line breaks")
        return v.strip()

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def pinned(self) -> bool:
        """True when the user fixed any part of the layout."""
        return any(v is not None for v in (self.tp, self.dp, self.pp, self.ep, self.replicas))

    def replace(self, **changes: Any) -> Scenario:
        """A validated copy with ``changes`` applied (raises InputError naming the field)."""
        return make_scenario(**(self.model_dump() | changes))


def _expected(error: Mapping[str, Any]) -> str:
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "a whole number"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return "a finite number"
    if kind == "greater_than_equal":
        return f"at least {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"at most {ctx.get('le')}"
    if kind == "literal_error":
        return f"one of {ctx.get('expected', '')}".replace("'", "")
    if kind == "bool_parsing" or kind == "bool_type":
        return "true or false"
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return "a non-empty value"
    if kind == "extra_forbidden":
        return "a known scenario field"
    msg = str(error.get("msg", "a valid value"))
    return msg.removeprefix("Value error, ")


def make_scenario(**fields: Any) -> Scenario:
    """A Scenario from keyword values, with cross-field rules; raises InputError naming the
    first bad field (the CLI prints it as one line, the app as ``st.error``)."""
    try:
        s = Scenario.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "scenario"
        raise InputError(name, _expected(first)) from None
    if s.source == "file" and s.digest is None:
        raise InputError("digest", "the digest of the uploaded config bytes")
    if s.source == "hub":
        from engine.model.loader import HF_ID

        if not HF_ID.match(s.model):
            raise InputError("model", f"a Hugging Face id like 'org/name', got {echo(s.model)}")
    if s.source == "catalog":
        canonical = catalog_name(s.model)
        if canonical is None:
            raise InputError("model", f"a bundled catalog model name, got {echo(s.model)}")
        if canonical != s.model:
            s = s.model_copy(update={"model": canonical})
    used = math.prod(v for v in (s.tp, s.dp, s.pp, s.replicas) if v is not None)
    if used > s.total_gpus:
        raise InputError(
            "tp",
            f"a pinned layout (TP × DP × PP × replicas = {used}) that fits the "
            f"{s.total_gpus} GPUs ({s.gpus_per_node} per node × {s.nodes} nodes)",
        )
    return s


DEFAULT_SCENARIO = Scenario()


@cache
def _catalog_index() -> dict[str, str]:
    """Every spelling a bundled model answers to (``org/name`` and ``name``, any case) -> its
    canonical ``org/name``. Built once from the bundled folder's listing."""
    from engine.model.loader import catalog_names

    index: dict[str, str] = {}
    for name in reversed(catalog_names()):  # the first name in sorted order wins a short name
        index[name.split("/", 1)[-1].lower()] = name
    for name in catalog_names():
        index[name.lower()] = name
    return index


def catalog_name(name: str) -> str | None:
    """The canonical name of a bundled model, or None. A lookup in the listing of the bundled
    folder: user text never becomes a file path (no ``..``, no over-long file names)."""
    return _catalog_index().get(name.strip().lower()) if len(name) <= MAX_NAME_CHARS else None


# Characters that carry meaning in Markdown (links, images, emphasis, HTML, code, math,
# Streamlit's :color[] directives) or end a line. A value echoed back in a message shows them
# as '?', so a crafted link cannot put a live link or a remote image into the page.
_UNSAFE_ECHO = re.compile(r"[^\w .,:;/=+@%'-]|_{2,}")


def echo(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message: at most ``limit`` characters, every character outside
    letters, digits and ``. , : ; / = + @ % ' -`` shown as ``?``."""
    more = "…" if len(text) > limit else ""
    return "'" + _UNSAFE_ECHO.sub("?", text[:limit]) + more + "'"


# --- URL query parameters ---------------------------------------------------------------------

# Query-parameter name -> Scenario field. Short names keep a shared link readable; the names of
# earlier links (gpus, ctx, prefix, kv, mem, hub) still work.
QUERY_KEYS: dict[str, str] = {
    "src": "source",
    "model": "model",
    "digest": "digest",
    "gpu": "gpu",
    "gpus": "gpus_per_node",
    "nodes": "nodes",
    "engine": "engine",
    "ctx": "context",
    "users": "users",
    "prefix": "prefix_overlap",
    "latency": "latency",
    "kv": "kv_dtype",
    "mem": "memory_fraction",
    "images": "images",
    "tp": "tp",
    "dp": "dp",
    "pp": "pp",
    "ep": "ep",
    "replicas": "replicas",
    "seqs": "max_num_seqs",
}
FIELD_TO_QUERY = {v: k for k, v in QUERY_KEYS.items()}
UI_KEYS = frozenset({"lang", "page"})  # read by the app, not part of the scenario
MAX_QUERY_VALUE = 256  # characters; a longer value is refused before any parsing

# fields whose empty query value means "not set" (the engine's or the search's choice)
_OPTIONAL_FIELDS = frozenset(
    {"tp", "dp", "pp", "ep", "replicas", "memory_fraction", "max_num_seqs"}
)
_DIGITS = re.compile(r"[0-9]{1,12}")
_DECIMAL = re.compile(r"[0-9]{0,3}(\.[0-9]{1,6})?")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_INT_FIELDS = frozenset(
    {
        "gpus_per_node",
        "nodes",
        "context",
        "users",
        "prefix_overlap",
        "tp",
        "dp",
        "pp",
        "replicas",
        "max_num_seqs",
    }
)


def _single(value: str | list[str]) -> str:
    """``st.query_params`` gives the last value of a repeated key; do the same."""
    if isinstance(value, list):
        return value[-1] if value else ""
    return value


def _from_text(field: str, text: str) -> Any:
    """A query string value as the type the field takes (InputError naming the field)."""
    if field in _INT_FIELDS:
        if not _DIGITS.fullmatch(text):  # ASCII digits only: int() also reads '٣' and '1_0'
            raise InputError(field, "a whole number")
        return int(text)
    if field == "memory_fraction":
        if not _DECIMAL.fullmatch(text):
            raise InputError(field, "a number between 0.05 and 1")
        return float(text)
    if field in ("images", "ep"):
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise InputError(field, "1 or 0")
    return text


def _check_field(field: str, value: Any) -> None:
    """One field's own bounds (the cross-field rules wait until every field is read)."""
    try:
        Scenario.model_validate({field: value})
    except ValidationError as err:
        raise InputError(field, _expected(err.errors()[0])) from None


@dataclass(frozen=True)
class ParsedQuery:
    scenario: Scenario
    warnings: tuple[str, ...]


def from_query(params: Mapping[str, str | list[str]]) -> ParsedQuery:
    """A scenario from query parameters. Each bad value falls back to its default with one
    warning naming the parameter and what it expects; unknown parameters are ignored with a
    warning; then the cross-field rules apply (a layout that does not fit is dropped)."""
    warnings: list[str] = []
    good: dict[str, Any] = {}
    legacy_hub: str | None = None
    for key, raw in list(params.items())[:64]:
        if key in UI_KEYS:
            continue
        text = _single(raw).strip()
        if len(text) > MAX_QUERY_VALUE:
            warnings.append(
                f"Link parameter {echo(key, 40)} is longer than {MAX_QUERY_VALUE} characters; "
                "using the default."
            )
            continue
        if key == "hub":
            legacy_hub = text or None
            continue
        field = QUERY_KEYS.get(key)
        if field is None:
            warnings.append(f"Ignored unknown link parameter {echo(key, 40)}.")
            continue
        if text == "" and field in _OPTIONAL_FIELDS:
            continue
        if field == "source" and text in ("upload", "paste"):
            text = "file"  # links written before uploads were addressed by digest
        try:
            value = _from_text(field, text)
            if field not in ("source", "model", "digest"):  # checked together below
                _check_field(field, value)
        except InputError as err:
            warnings.append(
                f"Link parameter {key}={echo(text)} is not valid ({err.expected}); "
                f"{_default_text(field)}."
            )
            continue
        good[field] = value
    if good.get("source") == "hub" and legacy_hub:
        good["model"] = legacy_hub
    elif legacy_hub and "source" not in good:
        good["source"], good["model"] = "hub", legacy_hub
    if good.get("source") == "file":
        good["source"] = "catalog"
        good.pop("digest", None)
        if catalog_name(str(good.get("model", DEFAULT_MODEL))) is None:
            good["model"] = DEFAULT_MODEL
        warnings.append(
            "The link was made from an uploaded or pasted config.json, which a link cannot "
            f"carry; showing {good.get('model', DEFAULT_MODEL)} instead. Upload the file again "
            "to see it."
        )
    try:
        scenario = make_scenario(**good)
    except InputError as err:
        scenario, note = _drop_until_valid(good, err)
        warnings.append(note)
    return ParsedQuery(scenario, tuple(warnings))


def _default_text(field: str) -> str:
    default = getattr(DEFAULT_SCENARIO, field, None)
    if default is None:
        return "leaving it to the engine"
    return f"using the default {echo(str(default))}"


def _drop_until_valid(good: dict[str, Any], err: InputError) -> tuple[Scenario, str]:
    """Cross-field failures (a pinned layout larger than the GPUs, a hub id that is not one,
    a file link): drop what the error names, else the whole layout, else everything."""
    if err.field in ("tp", "dp", "pp", "replicas"):
        for k in ("tp", "dp", "pp", "replicas", "ep"):
            good.pop(k, None)
        note = f"The pinned layout does not fit these GPUs ({err.expected}); choosing one."
    else:
        value = good.pop(err.field, None)
        if err.field == "model":
            good.pop("source", None)
        key = FIELD_TO_QUERY.get(err.field, err.field)
        note = (
            f"Link parameter {key}={echo(str(value))} is not valid ({err.expected}); "
            f"{_default_text(err.field)}."
        )
    try:
        return make_scenario(**good), note
    except InputError:
        return DEFAULT_SCENARIO, note


def to_query(s: Scenario) -> dict[str, str]:
    """Every set field as a string, so a link stays exact even if defaults change later.
    Uploaded configs cannot travel in a link: the link names the source and the file's name."""
    out: dict[str, str] = {}
    for field, key in FIELD_TO_QUERY.items():
        value = getattr(s, field)
        if value is None or field == "digest":
            continue
        if isinstance(value, bool):
            out[key] = "1" if value else "0"
        elif isinstance(value, float):
            out[key] = f"{value:g}"
        else:
            out[key] = str(value)
    return out


def link_source_note(s: Scenario) -> str | None:
    """What a link cannot carry for this scenario (shown next to the share link)."""
    if s.source == "file":
        return (
            f"An uploaded or pasted config.json ({echo(s.model)}) cannot travel in a link: whoever "
            "opens it sees the default model. Share the file, or publish it and use its hub id."
        )
    return None
