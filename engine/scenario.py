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
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine import errors as E
from engine.decision import Code, Decision, Name, Tokens
from engine.engines import ENGINES as ENGINES
from engine.engines import Engine as Engine
from engine.engines import Setting, adapter
from engine.errors import InputError
from engine.hardware.gpus import lookup_gpu
from engine.kv.dtype import KV_DTYPE_CHOICES
from engine.model.loader import HF_ID, catalog_names
from engine.rules import load_data

# how the pages name each engine: its adapter's label
ENGINE_LABELS: dict[str, str] = {e: adapter(e).label for e in ENGINES}
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
    output_tokens: int = Field(ge=1)
    input_tokens: int = Field(ge=1)
    tpot_bound_ms: float = Field(gt=0)
    model_why: str
    hardware_why: str
    context_why: str
    users_why: str
    output_tokens_why: str
    input_tokens_why: str
    tpot_bound_ms_why: str


def _load_defaults() -> _Defaults:
    return load_data(_Defaults, "scenario.yaml")


DEFAULTS = _load_defaults()
DEFAULT_MODEL = DEFAULTS.model
DEFAULT_GPU = DEFAULTS.gpu
DEFAULT_CONTEXT = DEFAULTS.context
DEFAULT_OUTPUT_TOKENS = DEFAULTS.output_tokens
DEFAULT_INPUT_TOKENS = DEFAULTS.input_tokens
DEFAULT_TPOT_BOUND_MS = DEFAULTS.tpot_bound_ms
MAX_GPUS_PER_NODE = 64
MAX_NODES = 128
MAX_USERS = 1_000_000
MAX_CONTEXT = 1 << 26
MAX_NAME_CHARS = 200  # a model id, a file name or a GPU name; longer is not a name
MAX_PARALLEL = MAX_GPUS_PER_NODE * MAX_NODES
MAX_TARGET_MS = 3_600_000.0  # an hour: a latency target beyond it is not a target
MAX_RDMA_DEVICES = 16  # RDMA devices a node names for the KV transfer (eight GPUs, two ports)
MAX_RDMA_CHARS = 400
_RDMA = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}\Z")
RDMA_NAMES = Code("error.rdma_devices", "most")
# a target is written to a link and a flag with one decimal: the least it can say is 0.1 ms
MIN_TARGET_MS = 0.1
# a SOURCE the CLI reads as a Hugging Face id even where the catalog has the same one
HUB_PREFIX = "hf://"
# 100,000 requests/s: beyond every published serving fleet's load by orders of magnitude (a
# typo, not a traffic)
MAX_REQUEST_RATE = 100_000.0
MAX_GPU_PRICE = 1_000.0  # USD per GPU-hour; list prices are single dollars to tens
MAX_OFFLOAD_GIB = 65_536.0  # host memory per node given to the KV tier (64 TiB)
MAX_COMPARED_GPUS = 8
QUANTIZATIONS = ("none", "fp8")
PrefixKind = Literal["system", "session"]


# a refusal of a value at or below a field's exclusive bound (a rate, a price, a target)
MORE_THAN = Code("error.more_than", "low")

# --- the table of fields -------------------------------------------------------------------------

Section = Literal["hardware", "engine", "workload", "targets", "traffic"]
Widget = Literal["select", "number", "slider", "radio", "multiselect"]
# The CLI's help groups; a field the sidebar draws is in its section's group unless it says.
Group = Literal["hardware", "workload", "speed", "memory", "traffic", "disagg", "layout"]
_SECTION_GROUP: dict[Section, Group] = {
    "hardware": "hardware",
    "engine": "hardware",
    "workload": "workload",
    "targets": "speed",
    "traffic": "traffic",
}


@dataclass(frozen=True)
class Control:
    """How the sidebar draws a field: its widget, its section, the catalog keys of its label
    and help, and (for a choice) the catalog prefix that words each option."""

    widget: Widget
    section: Section
    label: str
    help: str | None = None
    step: int | float | None = None
    options: str | None = None  # catalog prefix for the options' words (None: as written)


@dataclass(frozen=True)
class Spec:
    """One scenario field's row: its link key (and the keys of older links), its CLI flag and
    help (the default is added from the field), why its default is what it is, how the sidebar
    draws it, whether the reproduce line spells it, and its lint source: the engine setting
    (data/engines/settings.yaml) a launch command carries it in, which each engine's adapter
    spells (``images`` is carried by the text-only switch, set when there are none).

    The Scenario model below is the table: each field is declared once with its type, bounds,
    default and this row; the CLI arguments (engine/cli.py), the link's parser and writer
    (``from_query`` / ``to_query``), the sidebar (ui/sidebar.py), the reproduce line
    (engine/present/artifacts.py) and the linter's reading of a command's flags
    (engine/lint/command_scenario.py) are generated from it."""

    query: str
    cli: str | None = None  # None: not a flag (the model is the CLI's positional SOURCE)
    help: str = ""
    why: str = ""  # the reason for the default (CLI help, README)
    control: Control | None = None
    aliases: tuple[str, ...] = ()
    auto: bool = False  # None is a value of its own, spelled "auto" (else None is the default)
    setting: Setting | None = None  # the lint source (None: no engine flag carries it)
    # a file held by its digest (a calibration): its flag names the file, a link and the
    # reproduce line cannot carry it
    held: bool = False
    # the CLI's help group (None: the sidebar section's); "layout" marks the layout pins, which
    # the layout search chooses when they are left at None
    group: Group | None = None

    @property
    def cli_group(self) -> Group | None:
        if self.group is not None:
            return self.group
        return _SECTION_GROUP[self.control.section] if self.control is not None else None


class Scenario(BaseModel):
    """One serving question: which model, on which GPUs, with which engine, for what workload
    and targets, and any layout the user pins. Field bounds are the ones the engine accepts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Annotated[Source, Spec("src")] = "catalog"
    model: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), Spec("model")] = (
        DEFAULT_MODEL
    )
    # sha256 of the config bytes when source == "file" (a link cannot carry the bytes)
    digest: Annotated[str | None, Spec("digest")] = None
    gpu: Annotated[
        str,
        Field(min_length=1, max_length=64),
        Spec(
            "gpu",
            "--gpu",
            "GPU name or alias from the catalog (python -m engine gpus lists them)",
            "one node of 8 × H200, the playbook's example (data/scenario.yaml)",
            Control("select", "hardware", "sidebar.gpu", "sidebar.gpu_help"),
        ),
    ] = DEFAULT_GPU
    gpus_per_node: Annotated[
        int,
        Field(strict=True, ge=1, le=MAX_GPUS_PER_NODE),
        Spec(
            "gpus",
            "--gpus",
            "GPUs per node",
            "the playbook's 8-GPU node",
            Control("number", "hardware", "sidebar.gpus"),
        ),
    ] = DEFAULTS.gpus_per_node
    nodes: Annotated[
        int,
        Field(strict=True, ge=1, le=MAX_NODES),
        Spec(
            "nodes",
            "--nodes",
            "nodes",
            "one node",
            Control("number", "hardware", "sidebar.nodes"),
            setting="nnodes",
        ),
    ] = 1
    engine: Annotated[
        Engine,
        Spec(
            "engine",
            "--engine",
            "serving engine",
            "the playbook's first engine",
            Control("radio", "engine", "sidebar.engine_label", options="common.engine"),
        ),
    ] = "vllm"
    context: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_CONTEXT)] | None,
        Spec(
            "ctx",
            "--context",
            "tokens per request, prompt + output ('auto': the model's own limit); capped at the "
            "model's limit",
            "the playbook sizes one user at 32K (data/scenario.yaml)",
            Control("number", "workload", "sidebar.context", "sidebar.context_help", step=1024),
            auto=True,
            setting="context",
        ),
    ] = DEFAULT_CONTEXT
    users: Annotated[
        int,
        Field(strict=True, ge=1, le=MAX_USERS),
        Spec(
            "users",
            "--users",
            "concurrent users (requests in flight)",
            "a small team's interactive load (data/scenario.yaml)",
            Control("number", "workload", "sidebar.users", "sidebar.users_help"),
        ),
    ] = DEFAULTS.users
    prefix_overlap: Annotated[
        int,
        Field(strict=True, ge=0, le=100),
        Spec(
            "prefix",
            "--prefix-overlap",
            "percent of each prompt that repeats an earlier one",
            "no shared prefix assumed",
            Control("slider", "workload", "sidebar.prefix", "sidebar.prefix_help"),
        ),
    ] = 0
    prefix_kind: Annotated[
        PrefixKind,
        Spec(
            "reuse",
            "--prefix-kind",
            "what repeats: one system prompt shared by every request (system), or each session's "
            "own history re-sent with its next turn (session)",
            "a shared system prompt, the simplest repeat",
            Control(
                "radio",
                "workload",
                "sidebar.prefix_kind",
                "sidebar.prefix_kind_help",
                options="sidebar.prefix_kinds",
            ),
        ),
    ] = "system"
    sessions: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_USERS)] | None,
        Spec(
            "sessions",
            "--sessions",
            "distinct repeated prefixes kept at once: system prompts (system), or live sessions "
            "whose history returns (session)",
            "one system prompt, or one session per concurrent user",
            Control("number", "traffic", "sidebar.sessions", "sidebar.sessions_help"),
        ),
    ] = None
    latency: Annotated[
        Latency,
        Spec(
            "latency",
            "--latency-priority",
            "what the layout search favours: latency (lowest time per output token), "
            "throughput (most tokens/s per GPU) or balanced",
            "the most tokens/s per GPU with the time per token within a bound",
            Control(
                "radio",
                "workload",
                "sidebar.latency",
                "sidebar.latency_help",
                options="sidebar.priority",
            ),
        ),
    ] = "balanced"
    input_tokens: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_CONTEXT)] | None,
        Spec(
            "isl",
            "--input-tokens",
            "prompt tokens per request, for the speed estimate",
            f"{DEFAULT_INPUT_TOKENS:,}, or the context less the output tokens when shorter: "
            "a typical long prompt of the published benchmarks (data/scenario.yaml)",
            Control(
                "number", "targets", "sidebar.input_tokens", "sidebar.input_tokens_help", step=256
            ),
        ),
    ] = None
    output_tokens: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_CONTEXT)] | None,
        Spec(
            "osl",
            "--output-tokens",
            "output tokens per request, for the speed estimate",
            f"{DEFAULT_OUTPUT_TOKENS:,}, or half the context when that is shorter: the most "
            "common published benchmark setting (data/scenario.yaml)",
            Control(
                "number", "targets", "sidebar.output_tokens", "sidebar.output_tokens_help", step=128
            ),
        ),
    ] = None
    ttft_ms: Annotated[
        Annotated[float, Field(ge=MIN_TARGET_MS, le=MAX_TARGET_MS, allow_inf_nan=False)] | None,
        Spec(
            "ttft",
            "--ttft-ms",
            "target time to first token, ms",
            "no target",
            Control("number", "targets", "sidebar.ttft_ms", "sidebar.ttft_help", step=50.0),
        ),
    ] = None
    tpot_ms: Annotated[
        Annotated[float, Field(ge=MIN_TARGET_MS, le=MAX_TARGET_MS, allow_inf_nan=False)] | None,
        Spec(
            "tpot",
            "--tpot-ms",
            "target time per output token, ms (1000 / tokens per second per user)",
            "no target",
            Control("number", "targets", "sidebar.tpot_ms", "sidebar.tpot_help", step=1.0),
        ),
    ] = None
    tpot_bound_ms: Annotated[
        float,
        Field(gt=0, le=MAX_TARGET_MS, allow_inf_nan=False),
        Spec(
            "bound",
            "--tpot-bound-ms",
            "the interactivity bound, ms: balanced priority serves the most tokens/s per GPU at "
            "the highest load whose time per output token stays within it",
            f"{DEFAULT_TPOT_BOUND_MS:g} ms, NVIDIA aiconfigurator's default TPOT for an "
            "interactive deployment (data/scenario.yaml)",
            Control(
                "number", "targets", "sidebar.tpot_bound_ms", "sidebar.tpot_bound_help", step=1.0
            ),
        ),
    ] = DEFAULT_TPOT_BOUND_MS
    request_rate: Annotated[
        Annotated[float, Field(gt=0, le=MAX_REQUEST_RATE, allow_inf_nan=False)] | None,
        Spec(
            "rate",
            "--request-rate",
            "requests per second to serve: sizes the GPUs and nodes needed (the concurrency "
            "follows by Little's law through the speed model)",
            "no traffic: the GPUs given are sized for the concurrent users",
            Control(
                "number", "traffic", "sidebar.request_rate", "sidebar.request_rate_help", step=0.5
            ),
        ),
    ] = None
    gpu_price: Annotated[
        Annotated[float, Field(gt=0, le=MAX_GPU_PRICE, allow_inf_nan=False)] | None,
        Spec(
            "price",
            "--gpu-price",
            "USD per GPU-hour, instead of the listed price (data/gpu_prices.yaml)",
            "the public on-demand list price of data/gpu_prices.yaml",
            Control("number", "traffic", "sidebar.gpu_price", "sidebar.gpu_price_help", step=0.1),
        ),
    ] = None
    compare_gpus: Annotated[
        Annotated[str, Field(max_length=400)] | None,
        Spec(
            "vs",
            "--compare-gpus",
            "other GPUs to size the same traffic on, comma-separated (python -m engine gpus)",
            "the scenario's GPU alone",
            Control("multiselect", "traffic", "sidebar.compare_gpus", "sidebar.compare_gpus_help"),
        ),
    ] = None
    kv_offload_gb: Annotated[
        Annotated[float, Field(ge=0, le=MAX_OFFLOAD_GIB, allow_inf_nan=False)] | None,
        Spec(
            "offload",
            "--kv-offload-gb",
            "host memory per node for a CPU tier of the KV cache, GiB (vLLM "
            "--kv-offloading-size, SGLang --hicache-size)",
            "no CPU tier",
            Control(
                "number", "hardware", "sidebar.kv_offload", "sidebar.kv_offload_help", step=16.0
            ),
            group="memory",
        ),
    ] = None
    quantization: Annotated[
        Literal["none", "fp8"],
        Spec(
            "quant",
            "--quantization",
            "online weight quantization of a 16-bit checkpoint at load (fp8: the engine's "
            "--quantization fp8, where the engine and the GPU support it)",
            "the checkpoint's own weights",
            Control(
                "radio",
                "engine",
                "sidebar.quantization",
                "sidebar.quantization_help",
                options="sidebar.quantizations",
            ),
            group="memory",
        ),
    ] = "none"
    kv_dtype: Annotated[
        str,
        Spec(
            "kv",
            "--kv-dtype",
            f"KV cache dtype: {', '.join(KV_DTYPE_CHOICES)}",
            "the engine's own pick",
            setting="kv_dtype",
            group="memory",
        ),
    ] = "auto"
    memory_fraction: Annotated[
        Annotated[float, Field(ge=0.05, le=1.0, allow_inf_nan=False)] | None,
        Spec(
            "mem",
            "--memory-fraction",
            "vLLM --gpu-memory-utilization / SGLang --mem-fraction-static",
            "the engine's own",
            setting="memory_fraction",
            group="memory",
        ),
    ] = None
    images: Annotated[
        bool,
        Spec(
            "images",
            "--images",
            "serve images (multimodal models)",
            "text only",
            setting="language_model_only",
            group="workload",
        ),
    ] = False
    tp: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None,
        Spec(
            "tp",
            "--tp",
            "pin the attention tensor-parallel size",
            "the layout search's",
            setting="tp",
            group="layout",
        ),
    ] = None
    dp: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None,
        Spec(
            "dp",
            "--dp",
            "pin the DP-attention ranks (MoE)",
            "the layout search's",
            setting="dp",
            group="layout",
        ),
    ] = None
    pp: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_NODES)] | None,
        Spec(
            "pp",
            "--pp",
            "pin the pipeline stages (across nodes)",
            "the layout search's",
            setting="pp",
            group="layout",
        ),
    ] = None
    ep: Annotated[
        bool | None,
        Spec(
            "ep",
            "--ep",
            "pin expert parallelism on (--ep) or off (--no-ep)",
            "the layout search's",
            setting="ep",
            group="layout",
        ),
    ] = None
    replicas: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_PARALLEL)] | None,
        Spec(
            "replicas",
            "--replicas",
            "pin the independent copies of the model",
            "the layout search's",
            group="layout",
        ),
    ] = None
    # sha256 of a calibration measured on the user's GPU (make gpu-check); a link cannot carry it
    calibration: Annotated[
        str | None,
        Spec(
            "cal",
            "--calibration",
            "a calibration JSON written by make gpu-check: the speed model uses the rates measured "
            "on that GPU",
            "the catalog's figures times the fitted fractions",
            group="speed",
            held=True,
        ),
    ] = None
    # sha256 of the software stack's factors fitted on the user's benchmark (bench-compare)
    bench_calibration: Annotated[
        str | None,
        Spec(
            "bcal",
            "--bench-calibration",
            "a calibration JSON written by bench-compare --save-calibration: the speed model "
            "uses the software stack's factors fitted on your benchmark",
            "data/perf.yaml's factors, fitted on published runs",
            held=True,
            group="speed",
        ),
    ] = None
    speculative: Annotated[
        bool | None,
        Spec(
            "spec",
            "--speculative",
            "pin speculative decoding with the checkpoint's MTP layers on (--speculative) or off "
            "(--no-speculative)",
            "the speed model's: drafts where they lower the objective",
            setting="speculative",
            group="speed",
        ),
    ] = None
    # requests one engine runs at once (vLLM --max-num-seqs, SGLang --max-running-requests)
    max_num_seqs: Annotated[
        Annotated[int, Field(strict=True, ge=1, le=MAX_USERS)] | None,
        Spec(
            "seqs",
            "--max-num-seqs",
            "requests one engine runs at once (vLLM --max-num-seqs, SGLang --max-running-requests)",
            "the plan decides: the engine's default, or fewer where that frees the memory",
            setting="max_num_seqs",
            group="memory",
        ),
    ] = None

    # disaggregated serving: which plan the launch files are, and the transfer's RDMA devices
    disaggregated: Annotated[
        bool | None,
        Spec(
            "pd",
            "--disaggregated",
            "with a request rate, write the disaggregated plan's launch files (--disaggregated: "
            "a prefill pool, a decode pool and their router) or the aggregated plan's "
            "(--no-disaggregated)",
            "the plan that serves the rate for less: the pools only where they win",
            group="disagg",
        ),
    ] = None
    rdma_devices: Annotated[
        Annotated[str, Field(min_length=1, max_length=MAX_RDMA_CHARS)] | None,
        Spec(
            "rdma",
            "--rdma-devices",
            "the RDMA devices a disaggregated plan moves the KV over, comma-separated "
            "(mlx5_0,mlx5_1): SGLang --disaggregation-ib-device, vLLM's UCX_NET_DEVICES",
            "the transfer library's own pick",
            group="disagg",
        ),
    ] = None

    @field_validator("gpu")
    @classmethod
    def _gpu_key(cls, v: str) -> str:
        return lookup_gpu(v).key  # its InputError is a ValueError: pydantic keeps it (ctx)

    @field_validator("kv_dtype")
    @classmethod
    def _kv(cls, v: str) -> str:
        key = v.strip().lower()
        if key not in KV_DTYPE_CHOICES:
            raise InputError("kv_dtype", E.ONE_OF(choices=tuple(Name(c) for c in KV_DTYPE_CHOICES)))
        return key

    @field_validator("rdma_devices")
    @classmethod
    def _rdma(cls, v: str | None) -> str | None:
        """Device names as the RDMA stack lists them (mlx5_0, mlx5_bond_0, ionic_3), each once,
        at most sixteen: nothing a shell or a manifest could read as more than a name."""
        if v is None:
            return None
        names = list(dict.fromkeys(n.strip() for n in v.split(",") if n.strip()))
        if not names or len(names) > MAX_RDMA_DEVICES or not all(_RDMA.match(n) for n in names):
            raise InputError("rdma_devices", RDMA_NAMES(most=MAX_RDMA_DEVICES))
        return ",".join(names)

    @field_validator("memory_fraction")
    @classmethod
    def _fraction(cls, v: float | None) -> float | None:
        return None if v is None else round(v, 4)  # what a link and a flag write exactly

    @field_validator("ttft_ms", "tpot_ms", "tpot_bound_ms")
    @classmethod
    def _ms(cls, v: float | None) -> float | None:
        return None if v is None else round(v, 1)

    @field_validator("request_rate", "gpu_price", "kv_offload_gb")
    @classmethod
    def _decimal(cls, v: float | None) -> float | None:
        return None if v is None else round(v, 4)  # what a link and a flag write exactly

    @field_validator("compare_gpus")
    @classmethod
    def _compared(cls, v: str | None) -> str | None:
        """Each name a catalog GPU (its key), in the order given, once; at most eight."""
        if v is None:
            return None
        keys = list(dict.fromkeys(lookup_gpu(n).key for n in v.split(",") if n.strip()))
        if len(keys) > MAX_COMPARED_GPUS:
            raise InputError("compare_gpus", E.AT_MOST(high=MAX_COMPARED_GPUS))
        return ",".join(keys) or None

    @field_validator("digest", "calibration", "bench_calibration")
    @classmethod
    def _digest(cls, v: str | None) -> str | None:
        if v is not None and (len(v) != 64 or any(c not in "0123456789abcdef" for c in v)):
            raise InputError("digest", E.SHA256())
        return v

    @field_validator("model")
    @classmethod
    def _printable(cls, v: str) -> str:
        if any(not c.isprintable() for c in v):
            raise InputError("model", E.PRINTABLE_NAME())
        return v.strip()

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def pinned(self) -> bool:
        """True when the user fixed any part of the layout."""
        return any(getattr(self, name) is not None for name in LAYOUT_PINS)

    def workload(self, context: int) -> tuple[int, int]:
        """(input, output) tokens of one request when the plan gives ``context`` tokens: the
        fields when set, else the stated defaults (output 1,024 or half the context, input
        8,192 or the rest of the context)."""
        out = self.output_tokens or max(1, min(DEFAULT_OUTPUT_TOKENS, context // 2))
        inp = self.input_tokens or max(1, min(DEFAULT_INPUT_TOKENS, context - out))
        return inp, out

    @property
    def compared(self) -> tuple[str, ...]:
        """The GPUs the capacity compares: the scenario's, then the others asked, once each."""
        others = self.compare_gpus.split(",") if self.compare_gpus else []
        return tuple(dict.fromkeys([self.gpu, *others]))

    @property
    def live_prefixes(self) -> int:
        """Distinct repeated prefixes kept at once: the sessions field, else one system prompt
        or one session per concurrent user."""
        if self.sessions is not None:
            return self.sessions
        return 1 if self.prefix_kind == "system" else self.users

    def replace(self, **changes: Any) -> Scenario:
        """A validated copy with ``changes`` applied (raises InputError naming the field)."""
        return make_scenario(**(self.model_dump() | changes))


@dataclass(frozen=True)
class FieldRow:
    """A field of the table as its readers need it: name, row, default, and the plain type of
    its value (``int``, ``float``, ``str``, ``bool``) with its choices for a Literal."""

    name: str
    spec: Spec
    default: Any
    kind: type
    choices: tuple[str, ...] = ()
    optional: bool = False
    low: float | None = None  # the field's bounds (ge / gt), for a widget
    high: float | None = None  # (le)


def _kind(annotation: Any) -> tuple[type, tuple[str, ...], bool]:
    union = get_origin(annotation) in (Union, UnionType)
    args = [a for a in get_args(annotation) if a is not type(None)] if union else [annotation]
    optional = union and type(None) in get_args(annotation)
    base = args[0]
    while get_origin(base) is Annotated:
        base = get_args(base)[0]
    if get_origin(base) is Literal:
        return str, tuple(str(a) for a in get_args(base)), optional
    return base, (), optional


def _bounds(annotation: Any, metadata: list[Any]) -> tuple[float | None, float | None]:
    """The ge / gt and le bounds of a field, wherever its Annotated layers keep them."""
    found = list(metadata)
    stack = [annotation]
    while stack:
        a = stack.pop()
        if get_origin(a) is Annotated:
            for m in get_args(a)[1:]:
                found += getattr(m, "metadata", [m])
        stack += [x for x in get_args(a) if not isinstance(x, str)]
    low = next((float(m.ge) for m in found if hasattr(m, "ge")), None)
    if low is None:
        low = next((float(m.gt) for m in found if hasattr(m, "gt")), None)
    high = next((float(m.le) for m in found if hasattr(m, "le")), None)
    return low, high


@cache
def fields() -> tuple[FieldRow, ...]:
    """The table, in declaration order."""
    rows = []
    for name, info in Scenario.model_fields.items():
        spec = next(m for m in info.metadata if isinstance(m, Spec))
        kind, choices, optional = _kind(info.annotation)
        low, high = _bounds(info.annotation, info.metadata)
        rows.append(FieldRow(name, spec, info.default, kind, choices, optional, low, high))
    return tuple(rows)


def field_row(name: str) -> FieldRow:
    return next(r for r in fields() if r.name == name)


# The layout pins (tp, dp, pp, ep, replicas), and those that are sizes: their product is the GPUs
# the pinned layout uses (ep is a switch).
LAYOUT_PINS: tuple[str, ...] = tuple(r.name for r in fields() if r.spec.group == "layout")
PIN_SIZES: tuple[str, ...] = tuple(n for n in LAYOUT_PINS if field_row(n).kind is int)


def _expects(error: Mapping[str, Any], field: str) -> Decision:
    """What a field expects, from pydantic's kind of error and its context (a validator's own
    refusal as it is)."""
    kind = str(error.get("type", ""))
    ctx = error.get("ctx") or {}
    if isinstance(ctx.get("error"), InputError):
        expects: Decision = ctx["error"].expects
        return expects
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return E.WHOLE_NUMBER()
    if kind in ("float_type", "float_parsing", "finite_number"):
        return E.FINITE()
    if kind == "greater_than_equal":
        return E.AT_LEAST(low=ctx["ge"])
    if kind == "greater_than":
        return MORE_THAN(low=ctx["gt"])
    if kind == "less_than_equal":
        return E.AT_MOST(high=ctx["le"])
    if kind == "literal_error":
        row = next((r for r in fields() if r.name == field), None)
        if row is not None:
            return E.ONE_OF(choices=tuple(Name(c) for c in row.choices))
    if kind in ("bool_parsing", "bool_type"):
        return E.TRUE_FALSE()
    if kind == "string_too_long":
        return E.TOO_LONG(most=ctx["max_length"])
    if kind == "string_too_short":
        return E.NOT_EMPTY()
    if kind == "extra_forbidden":
        return E.KNOWN_FIELD()
    return E.VALID(kind=Name(kind), got=E.got(error.get("input")))


def _refused(field: str, error: Mapping[str, Any]) -> InputError:
    """The InputError of pydantic's first error, naming ``field``."""
    return InputError(field, _expects(error, field))


def make_scenario(**fields: Any) -> Scenario:
    """A Scenario from keyword values, with cross-field rules; raises InputError naming the
    first bad field (the CLI prints it as one line, the app as ``st.error``)."""
    try:
        s = Scenario.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "scenario"
        raise _refused(name, first) from None
    if s.source == "file" and s.digest is None:
        raise InputError("digest", E.DIGEST())
    if s.source == "hub" and not HF_ID.match(s.model):
        raise InputError("model", E.HUB_ID(got=Name(echo(s.model))))
    if s.source == "catalog":
        canonical = catalog_name(s.model)
        if canonical is None:
            raise InputError("model", E.CATALOG_NAME(got=Name(echo(s.model))))
        if canonical != s.model:
            s = s.model_copy(update={"model": canonical})
    total = (s.input_tokens or 0) + (s.output_tokens or 0)
    if s.context is not None and total > s.context:
        raise InputError(
            "input_tokens", E.WITHIN_CONTEXT(total=Tokens(total), context=Tokens(s.context))
        )
    used = math.prod(v for v in (getattr(s, n) for n in PIN_SIZES) if v is not None)
    if used > s.total_gpus:
        raise InputError(
            "tp",
            E.LAYOUT_FITS(used=used, gpus=s.total_gpus, per_node=s.gpus_per_node, nodes=s.nodes),
        )
    return s


DEFAULT_SCENARIO = Scenario()


@cache
def _catalog_index() -> dict[str, str]:
    """Every spelling a bundled model answers to (``org/name`` and ``name``, any case) -> its
    canonical ``org/name``. Built once from the bundled folder's listing."""
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

# Query-parameter name -> Scenario field, from the table (short names keep a shared link
# readable; the names of older links stay in each row's aliases).
QUERY_KEYS: dict[str, str] = {
    key: r.name for r in fields() for key in (r.spec.query, *r.spec.aliases)
}
FIELD_TO_QUERY = {r.name: r.spec.query for r in fields()}
UI_KEYS = frozenset({"lang", "page"})  # read by the app, not part of the scenario
MAX_QUERY_VALUE = 256  # characters; a longer value is refused before any parsing
AUTO = "auto"

# fields whose empty query value means "not set" (the engine's or the search's choice)
_OPTIONAL_FIELDS = frozenset(r.name for r in fields() if r.optional and r.default is None)
_DIGITS = re.compile(r"[0-9]{1,12}")
_CLI_INT = re.compile(r"-?[0-9]+")  # a flag's bound says "at most" past 12 digits
_DECIMAL = re.compile(r"[0-9]{1,7}(\.[0-9]{1,6})?|\.[0-9]{1,6}")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _single(value: str | list[str]) -> str:
    """``st.query_params`` gives the last value of a repeated key; do the same."""
    if isinstance(value, list):
        return value[-1] if value else ""
    return value


def from_text(field: str, text: str) -> Any:
    """A CLI flag's text as the value of ``field``: ASCII only and no ``_`` (``int`` and
    ``float`` read '١٢' and '1_024'; a link does not), then the field's own bounds say what they
    expect (``--tp`` of 60 digits: at most …; ``--memory-fraction nan``: a finite number)."""
    text = text.strip()
    kind = field_row(field).kind
    if kind is int:
        if not _CLI_INT.fullmatch(text):
            raise InputError(field, E.WHOLE_NUMBER())
        return int(text)
    if kind is float:
        if not text.isascii() or "_" in text:
            raise InputError(field, E.DECIMAL())
        return float(text)
    return _from_text(field, text)


def whole_number(field: str) -> Callable[[str], int]:
    """A flag's type: a whole number written in ASCII digits (``InputError`` naming ``field``
    otherwise; argparse names the field in its message)."""

    def read(text: str) -> int:
        if not _DIGITS.fullmatch(text.strip()):
            raise InputError(field, E.WHOLE_NUMBER())
        return int(text)

    read.__name__ = field
    return read


def _from_text(field: str, text: str) -> Any:
    """A query string value as the type the field takes (InputError naming the field)."""
    row = field_row(field)
    if row.spec.auto and text.lower() == AUTO:
        return None
    if row.kind is bool:
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise InputError(field, E.ONE_OR_ZERO())
    if row.kind is int:
        if not _DIGITS.fullmatch(text):  # ASCII digits only: int() also reads '٣' and '1_0'
            raise InputError(field, E.WHOLE_NUMBER())
        return int(text)
    if row.kind is float:
        if not _DECIMAL.fullmatch(text):
            raise InputError(field, E.DECIMAL())
        return float(text)
    return text


def _check_field(field: str, value: Any) -> None:
    """One field's own bounds (the cross-field rules wait until every field is read)."""
    try:
        Scenario.model_validate({field: value})
    except ValidationError as err:
        raise _refused(field, err.errors()[0]) from None


@dataclass(frozen=True)
class ParsedQuery:
    """The link's scenario and what the parser said about the link: a decision per value it
    refused or ignored (the pages word them in the reader's language)."""

    scenario: Scenario
    notes: tuple[Decision, ...]


# What the link parser says about a link (data/i18n/<lang>/errors.yaml code.link).
LINK_TOO_LONG = Code("link.too_long", "key", "most")
LINK_UNKNOWN = Code("link.unknown", "key")
LINK_INVALID = Code("link.invalid", "key", "value", "expected", "then")
LINK_DEFAULT = Code("link.then.default", "value")
LINK_ENGINE = Code("link.then.engine")
LINK_CALIBRATION = Code("link.calibration")
LINK_BENCH_CALIBRATION = Code("link.bench_calibration")
# what a link says when it names a file it cannot carry, per held field
LINK_HELD = {"calibration": LINK_CALIBRATION, "bench_calibration": LINK_BENCH_CALIBRATION}
LINK_FILE = Code("link.file", "model")
LINK_LAYOUT = Code("link.layout", "expected")


def from_query(params: Mapping[str, str | list[str]]) -> ParsedQuery:
    """A scenario from query parameters. Each bad value falls back to its default with one
    warning naming the parameter and what it expects; unknown parameters are ignored with a
    warning; then the cross-field rules apply (a layout that does not fit is dropped)."""
    warnings: list[Decision] = []
    good: dict[str, Any] = {}
    legacy_hub: str | None = None
    for key, raw in list(params.items())[:64]:
        if key in UI_KEYS:
            continue
        text = _single(raw).strip()
        if len(text) > MAX_QUERY_VALUE:
            warnings.append(LINK_TOO_LONG(key=Name(echo(key, 40)), most=MAX_QUERY_VALUE))
            continue
        if key == "hub":
            legacy_hub = text or None
            continue
        field = QUERY_KEYS.get(key)
        if field is None:
            warnings.append(LINK_UNKNOWN(key=Name(echo(key, 40))))
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
            warnings.append(_invalid(key, text, err))
            continue
        good[field] = value
    if good.get("source") == "hub" and legacy_hub:
        good["model"] = legacy_hub
    elif legacy_hub and "source" not in good:
        good["source"], good["model"] = "hub", legacy_hub
    for name, code in LINK_HELD.items():
        if good.pop(name, None) is not None:
            warnings.append(code())
    if good.get("source") == "file":
        good["source"] = "catalog"
        good.pop("digest", None)
        if catalog_name(str(good.get("model", DEFAULT_MODEL))) is None:
            good["model"] = DEFAULT_MODEL
        warnings.append(LINK_FILE(model=Name(str(good.get("model", DEFAULT_MODEL)))))
    try:
        scenario = make_scenario(**good)
    except InputError as err:
        scenario, note = _drop_until_valid(good, err)
        warnings.append(note)
    return ParsedQuery(scenario, tuple(warnings))


def _invalid(key: str, value: str, err: InputError) -> Decision:
    """A link value refused: what it expects, and what is used instead."""
    default = getattr(DEFAULT_SCENARIO, err.field, None)
    then = LINK_ENGINE() if default is None else LINK_DEFAULT(value=Name(echo(str(default))))
    return LINK_INVALID(key=Name(key), value=Name(echo(value)), expected=err.expects, then=then)


def _drop_until_valid(good: dict[str, Any], err: InputError) -> tuple[Scenario, Decision]:
    """Cross-field failures (a pinned layout larger than the GPUs, a hub id that is not one,
    a file link): drop what the error names, else the whole layout, else everything."""
    if err.field in PIN_SIZES:
        for k in LAYOUT_PINS:
            good.pop(k, None)
        note = LINK_LAYOUT(expected=err.expects)
    else:
        value = good.pop(err.field, None)
        if err.field == "model":
            good.pop("source", None)
        note = _invalid(FIELD_TO_QUERY.get(err.field, err.field), str(value), err)
    try:
        return make_scenario(**good), note
    except InputError:
        return DEFAULT_SCENARIO, note


def to_query(s: Scenario) -> dict[str, str]:
    """Every set field as a string, so a link stays exact even if defaults change later.
    Uploaded bytes cannot travel in a link: for a config the link names the source and the
    file's name, for a calibration its digest, so whoever opens it is told what was dropped."""
    out: dict[str, str] = {}
    for row in fields():
        value = getattr(s, row.name)
        if row.name == "digest":  # the config's bytes: the link says src=file instead
            continue
        text = value_text(row, value)
        if text is not None:
            out[row.spec.query] = text
    return out


def value_text(row: FieldRow, value: Any) -> str | None:
    """A field's value as a link or a command line writes it (None: left out, the default)."""
    if value is None:
        return AUTO if row.spec.auto else None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):  # fields keep at most 4 decimals: 6 write them exactly
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def scenario_argv(s: Scenario) -> list[str]:
    """The CLI flags that give ``s`` back (engine/cli.py reads them with the same table): every
    field that has a flag and a value, so the line stays exact if a default changes later. The
    model is the CLI's positional SOURCE and is not among them."""
    argv: list[str] = []
    for row in fields():
        value = getattr(s, row.name)
        if row.spec.cli is None or row.spec.held:  # a file the line cannot name
            continue
        if row.kind is bool:
            if value is not None and (value or row.optional):
                argv.append(row.spec.cli if value else "--no-" + row.spec.cli.removeprefix("--"))
            continue
        text = value_text(row, value)
        if text is not None:
            argv += [row.spec.cli, text]
    return argv


def cli_line(s: Scenario) -> str | None:
    """The CLI command that prints the Study of ``s`` as JSON (None for an uploaded config,
    which the command line names by its path): the reproduce line."""
    if s.source == "file":
        return None
    # a hub id is spelled as the hub's: a bundled config of the same id would win otherwise
    model = HUB_PREFIX + s.model if s.source == "hub" else s.model
    argv = ["python", "-m", "engine", "study", model, *scenario_argv(s)]
    return " ".join(shlex.quote(a) for a in argv) + " --json"
