"""The app's shared view state and its round trip through URL query parameters.

Everything a teammate needs to reproduce a view (model, hardware, engine, workload and the
sizing sliders) is one frozen ``ViewState``. ``to_query`` writes it as short string
parameters; ``from_query`` reads them back, one field at a time, so a tampered or stale value
falls back to its default with a warning naming the parameter instead of failing the page.
Pure Python: the Streamlit frame only moves these dicts to and from ``st.query_params``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.diagnose import Options
from engine.errors import InputError
from engine.kv.dtype import KV_DTYPE_CHOICES
from engine.model.loader import HF_ID, catalog_path

DEFAULT_MODEL = "deepseek-ai/DeepSeek-V3"
DEFAULT_GPU = "H200"
MAX_CONTEXT = 1 << 26  # the bound diagnose.Options accepts
MAX_GPUS_PER_NODE = 64
MAX_NODES = 128
MAX_USERS = 1_000_000

Source = Literal["catalog", "hub", "upload", "paste"]
EngineName = Literal["vllm", "sglang"]
Latency = Literal["latency", "balanced", "throughput"]

SOURCES: tuple[str, ...] = ("catalog", "hub", "upload", "paste")
ENGINES: tuple[str, ...] = ("vllm", "sglang")
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang"}
LATENCY_PRIORITIES: tuple[str, ...] = ("latency", "balanced", "throughput")

# Query-parameter name -> ViewState field. Short names keep a shared link readable.
QUERY_KEYS: dict[str, str] = {
    "src": "source",
    "model": "model",
    "hub": "hub",
    "gpu": "gpu",
    "gpus": "gpus",
    "nodes": "nodes",
    "engine": "engine",
    "ctx": "context",
    "users": "users",
    "prefix": "prefix",
    "latency": "latency",
    "kv": "kv_dtype",
    "tp": "tp",
    "dp": "dp",
    "ep": "ep",
    "mem": "memory_fraction",
}
FIELD_TO_QUERY = {v: k for k, v in QUERY_KEYS.items()}


class ViewState(BaseModel):
    """One view of the app. Field bounds are the ones the engine accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Source = "catalog"
    model: str = DEFAULT_MODEL
    hub: str | None = None
    gpu: str = DEFAULT_GPU
    gpus: Annotated[int, Field(ge=1, le=MAX_GPUS_PER_NODE)] = 8
    nodes: Annotated[int, Field(ge=1, le=MAX_NODES)] = 1
    engine: EngineName = "vllm"
    context: Annotated[int, Field(ge=1, le=MAX_CONTEXT)] = 32_768
    users: Annotated[int, Field(ge=1, le=MAX_USERS)] = 16
    prefix: Annotated[int, Field(ge=0, le=100)] = 0
    latency: Latency = "balanced"
    kv_dtype: str = "auto"
    tp: Annotated[int, Field(ge=1, le=MAX_GPUS_PER_NODE * MAX_NODES)] = 8
    dp: Annotated[int, Field(ge=1, le=MAX_GPUS_PER_NODE * MAX_NODES)] = 1
    ep: bool = False
    memory_fraction: Annotated[float, Field(ge=0.05, le=1.0)] = 0.9

    @field_validator("model")
    @classmethod
    def _catalog_name(cls, v: str) -> str:
        path = catalog_path(v)
        if path is None:
            raise ValueError("a bundled catalog model name")
        return path.stem.replace("__", "/", 1)

    @field_validator("hub")
    @classmethod
    def _hub_id(cls, v: str | None) -> str | None:
        if v is not None and not HF_ID.match(v):
            raise ValueError("a Hugging Face id like 'org/name'")
        return v

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

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.nodes

    def replace(self, **changes: Any) -> ViewState:
        """A validated copy with ``changes`` applied (raises InputError naming the field)."""
        data = self.model_dump()
        data.update(changes)
        try:
            return ViewState.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else "state"
            raise InputError(name, _message(first)) from None


DEFAULT_STATE = ViewState()


def _message(error: Mapping[str, Any]) -> str:
    msg = str(error.get("msg", "a valid value"))
    return msg.removeprefix("Value error, ")


def _single(value: str | list[str]) -> str:
    """``st.query_params`` gives the last value of a repeated key; do the same."""
    if isinstance(value, list):
        return value[-1] if value else ""
    return value


@dataclass(frozen=True)
class ParsedQuery:
    state: ViewState
    warnings: tuple[str, ...]


def from_query(params: Mapping[str, str | list[str]]) -> ParsedQuery:
    """Read a view from query parameters. Each bad value falls back to its default and adds
    one warning naming the parameter and what it expects; unknown parameters are ignored
    with a warning; then the cross-field rules of ``reconcile`` apply."""
    warnings: list[str] = []
    good: dict[str, Any] = {}
    for key, raw in params.items():
        field = QUERY_KEYS.get(key)
        if field is None:
            warnings.append(f"Ignored unknown link parameter {key!r}.")
            continue
        value: Any = _single(raw).strip()
        if field == "hub" and value == "":
            continue
        try:
            ViewState.model_validate({field: value})
        except ValidationError as err:
            default = getattr(DEFAULT_STATE, field)
            warnings.append(
                f"Link parameter {key}={_single(raw)[:60]!r} is not valid "
                f"({_message(err.errors()[0])}); using the default {default!r}."
            )
            continue
        good[field] = value
    state = ViewState.model_validate(good)
    if state.source in ("upload", "paste"):
        warnings.append(
            f"The link was made from a {state.source}ed config.json, which a link cannot "
            f"carry; showing {state.model}. Upload the file again to see that model."
        )
        state = state.replace(source="catalog")
    state, notes = reconcile(state)
    return ParsedQuery(state, tuple(warnings) + notes)


def to_query(state: ViewState) -> dict[str, str]:
    """Every field as a string, so a link stays exact even if defaults change later.
    Uploaded and pasted configs cannot travel in a link: ``src`` says so and ``model``
    keeps the last catalog model."""
    out: dict[str, str] = {}
    for field, key in FIELD_TO_QUERY.items():
        value = getattr(state, field)
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = "1" if value else "0"
        elif isinstance(value, float):
            out[key] = f"{value:g}"
        else:
            out[key] = str(value)
    return out


def reconcile(state: ViewState) -> tuple[ViewState, tuple[str, ...]]:
    """Cross-field rules: a hub source needs a hub id; uploads cannot come from a link;
    TP × DP cannot exceed the GPUs there are."""
    notes: list[str] = []
    if state.source == "hub" and state.hub is None:
        state = state.replace(source="catalog")
        notes.append("src=hub needs a hub=org/name parameter; showing the catalog model.")
    total = state.total_gpus
    if state.tp * state.dp > total:
        tp = min(state.tp, total)
        dp = max(1, total // tp)
        notes.append(
            f"TP × DP = {state.tp} × {state.dp} needs {state.tp * state.dp} GPUs but there are "
            f"{total} ({state.gpus} per node × {state.nodes} nodes); using TP {tp} × DP {dp}."
        )
        state = state.replace(tp=tp, dp=dp)
    return state, tuple(notes)


def link_source_note(state: ViewState) -> str | None:
    """What a link cannot carry for this state (shown next to the share link)."""
    if state.source in ("upload", "paste"):
        return (
            f"A {state.source}ed config.json cannot travel in a link: the link opens "
            f"{state.model} instead. Share the file, or publish it and use its hub id."
        )
    return None


def options_for(
    state: ViewState,
    gpu_name: str,
    gpu_arch: str,
    gpu_memory_bytes: int,
    *,
    context: int | None = None,
    kv_dtype: str | None = None,
) -> Options:
    """The diagnose options this view asks for (``context``/``kv_dtype`` override for
    charts that sweep them)."""
    return Options(
        kv_dtype=kv_dtype or state.kv_dtype,
        tp=state.tp,
        dp=state.dp,
        expert_parallel=state.ep,
        context=context or state.context,
        users=state.users,
        gpus=state.total_gpus,
        gpu_name=gpu_name,
        gpu_arch=gpu_arch,
        gpu_memory_bytes=gpu_memory_bytes,
        memory_fraction=state.memory_fraction,
    )
