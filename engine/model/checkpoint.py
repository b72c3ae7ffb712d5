"""The checkpoint's storage format, read from config.json: ``quantization_config`` first, then the
model id's suffix (``-FP8``, ``-NVFP4``, ``-AWQ`` ...), then the config dtype.

The format rows live in ``data/software.yaml`` (``checkpoint_formats``, ``model_id_hints``,
``unquantized_dtypes``, each with its source); what each engine's ``--quantization`` makes of a
format is the software report's (``engine.software.software_report``). The weights report sizes
the weights in the dtype found here, and the software report and the linter read the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.rules import Loose, Strict, load_data
from engine.text.words import as_json, say

ARCHITECTURES_EXPECTED = 'a non-empty list of model class names, e.g. ["LlamaForCausalLM"]'

FieldValue = str | int | float | bool
# A note written in data/software.yaml: an id whose wording is code.software.note.<id>.
NoteId = Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
OptionalNote = Annotated[str, Field(pattern=r"^([a-z0-9_]+)?$")]


def note(note_id: str) -> Decision:
    """The decision that words a note of software.yaml."""
    return Code(f"software.note.{note_id}")()


# --- data/software.yaml's format rows -------------------------------------------------------


class FormatEngine(Strict):
    resolves_to: str | None
    note: OptionalNote = ""


class FormatWhen(Strict):
    present: list[str] | None = None
    fields: dict[str, FieldValue] | None = None


class FormatRow(Strict):
    quant_method: str
    when: FormatWhen | None = None
    name: str
    weight_dtype: str
    detail: NoteId
    vllm: FormatEngine
    sglang: FormatEngine
    source: str = Field(min_length=1)
    notes: tuple[NoteId, ...] = ()


class IdHint(Strict):
    token: str = Field(pattern=r"^[a-z0-9]+$")
    format: str
    weight_dtype: str
    note: OptionalNote = ""


class FormatsData(Loose):
    """The sections of ``data/software.yaml`` that name checkpoint formats."""

    checkpoint_formats: list[FormatRow]
    model_id_hints: list[IdHint]
    unquantized_dtypes: dict[str, str]


@cache
def formats_data() -> FormatsData:
    return load_data(FormatsData, "software.yaml")


# --- config.json at the boundary ------------------------------------------------------------


class ConfigView(BaseModel):
    """The config.json fields these rules read; everything else is kept and ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)

    architectures: list[str] | None = None
    model_type: str | None = None
    text_config: dict[str, Any] | None = None
    quantization_config: dict[str, Any] | None = None
    compression_config: dict[str, Any] | None = None  # older llm-compressor checkpoints
    auto_map: dict[str, Any] | None = None
    torch_dtype: str | None = None
    dtype: str | None = None
    vision_config: dict[str, Any] | None = None
    audio_config: dict[str, Any] | None = None


def parse_config_view(config: Mapping[str, Any]) -> ConfigView:
    if not isinstance(config, Mapping):
        raise InputError("config", "a config.json object (a JSON mapping)")
    try:
        view = ConfigView.model_validate(dict(config))
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "config"
        if name == "architectures":
            raise InputError("architectures", ARCHITECTURES_EXPECTED) from err
        raise InputError(name, f"a valid value ({first['msg']})") from err
    if not view.architectures or not view.architectures[0].strip():
        raise InputError("architectures", ARCHITECTURES_EXPECTED)
    return view


# --- the format ------------------------------------------------------------------------------


FMT_UNKNOWN_METHOD = Code("software.format.unknown_method", "method")
FMT_SCHEME = Code("software.format.scheme", "scheme")
FMT_BITS = Code("software.format.bits", "bits")
FMT_GROUP = Code("software.format.group", "group")
FMT_BLOCK = Code("software.format.block", "block")
FMT_SCALE = Code("software.format.scale_fmt", "scale_fmt")
FMT_NAMED = Code("software.format.named", "format")
FMT_UNQUANTIZED = Code("software.format.unquantized", "dtype")
FMT_NO_DTYPE = Code("software.format.no_dtype")
FMT_NO_DTYPE_NOTE = Code("software.format.no_dtype_note")
FMT_ID_CONFLICT = Code("software.format.id_conflict", "hint", "format")
FMT_FROM_ID = Code("software.format.from_id")


def _english(decisions: tuple[Decision, ...], sep: str) -> str:
    """The English wording, for readers that take text (the launch plan, the weights report)."""

    return sep.join(say(d) for d in decisions)


@dataclass(frozen=True)
class CheckpointFormat:
    """How the weights are stored, read from ``quantization_config`` (or the model id, or dtype).

    ``weight_dtype`` is what hardware gates care about: "bf16", "fp16", "fp32", "fp8", "nvfp4",
    "mxfp4", "int4", "int8", "nf4", "bnb-fp4", "mixed" or "unknown". ``details`` word the format
    (a head and its clauses, joined without a separator) and ``reasons`` the notes on it;
    ``detail`` and ``notes`` are their English wording.
    """

    name: str
    weight_dtype: str
    quant_method: str | None
    bits: int | None
    group_size: int | None
    details: tuple[Decision, ...]
    from_model_id: bool
    source: str
    reasons: tuple[Decision, ...] = ()

    @property
    def detail(self) -> str:
        return _english(self.details, "")

    @property
    def notes(self) -> tuple[str, ...]:

        return tuple(say(d) for d in self.reasons)

    def to_json(self) -> dict[str, Any]:

        return {
            "name": self.name,
            "weight_dtype": self.weight_dtype,
            "quant_method": self.quant_method,
            "bits": self.bits,
            "group_size": self.group_size,
            "detail": self.detail,
            "from_model_id": self.from_model_id,
            "source": self.source,
            "notes": list(self.notes),
            "detail_codes": [as_json(d) for d in self.details],
            "note_codes": [as_json(d) for d in self.reasons],
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _quant_config(view: ConfigView) -> dict[str, Any] | None:
    text_qc = (view.text_config or {}).get("quantization_config")
    for qc in (view.quantization_config, view.compression_config, text_qc):
        if isinstance(qc, dict) and qc:
            return qc
    return None


def _compressed_tensors_scheme(qc: Mapping[str, Any]) -> tuple[str, int | None, int | None, str]:
    """weight dtype, bits, group size and a one-line scheme from config_groups."""
    fmt = str(qc.get("format") or "")
    groups = qc.get("config_groups")
    weights: Mapping[str, Any] = {}
    acts: Mapping[str, Any] = {}
    if isinstance(groups, Mapping) and groups:
        first = next(iter(groups.values()))
        if isinstance(first, Mapping):
            weights = first.get("weights") or {}
            acts = first.get("input_activations") or {}
    bits = _int(weights.get("num_bits"))
    group = _int(weights.get("group_size"))
    kind = weights.get("type")
    if "nvfp4" in fmt or (kind == "float" and bits == 4 and group == 16):
        dtype = "nvfp4"
    elif "mxfp4" in fmt or (kind == "float" and bits == 4 and group == 32):
        dtype = "mxfp4"
    elif kind == "float" and bits == 8:
        dtype = "fp8"
    elif kind == "int" and bits is not None:
        dtype = f"int{bits}"
    else:
        dtype = "unknown"
    a_bits = _int(acts.get("num_bits")) if isinstance(acts, Mapping) else None
    scheme = f"W{bits or '?'}A{a_bits or 16} {kind or '?'}"
    if weights.get("strategy"):
        scheme += f", {weights['strategy']}"
    if group:
        scheme += f" group {group}"
    if fmt:
        scheme += f" ({fmt})"
    return dtype, bits, group, scheme


def _from_quant_config(qc: dict[str, Any], data: FormatsData) -> CheckpointFormat:
    method = str(qc.get("quant_method") or "").lower()
    # ModelOpt checkpoints nest their fields under "quantization" (hf_quant_config.json shape).
    nested = qc.get("quantization")
    view = {**qc, **nested} if isinstance(nested, dict) else qc
    row = next(
        (
            f
            for f in data.checkpoint_formats
            if f.quant_method == method and (f.when is None or _when(f.when, view))
        ),
        None,
    )
    if row is None:
        return CheckpointFormat(
            name=method or "unknown",
            weight_dtype="unknown",
            quant_method=method or None,
            bits=_int(view.get("bits")),
            group_size=_int(view.get("group_size")),
            details=(FMT_UNKNOWN_METHOD(method=Name(method)),),
            from_model_id=False,
            source="config.json quantization_config",
        )
    bits = _int(view.get("bits")) or _int(view.get("w_bit"))
    group = _int(view.get("group_size")) or _int(view.get("q_group_size"))
    details = [note(row.detail)]
    dtype = row.weight_dtype
    if method == "compressed-tensors":
        dtype, bits, group, scheme = _compressed_tensors_scheme(view)
        details.append(FMT_SCHEME(scheme=Name(scheme)))
    elif method == "bitsandbytes":
        if view.get("load_in_4bit"):
            # bitsandbytes FP4 is dequantized in software: keep it apart from FP4 tensor cores.
            kind = str(view.get("bnb_4bit_quant_type") or "nf4")
            bits, dtype = 4, kind if kind == "nf4" else f"bnb-{kind}"
        elif view.get("load_in_8bit"):
            bits, dtype = 8, "int8"
    elif dtype == "int":
        dtype = f"int{bits}" if bits else "unknown"
    elif dtype == "from-config":
        dtype = "unknown"
    if bits and method in ("awq", "gptq"):
        details.append(FMT_BITS(bits=bits))
        if group:
            details.append(FMT_GROUP(group=group))
    block = view.get("weight_block_size")
    if isinstance(block, list) and block:
        details.append(FMT_BLOCK(block=Name("x".join(str(b) for b in block))))
    if view.get("scale_fmt"):
        details.append(FMT_SCALE(scale_fmt=Name(str(view["scale_fmt"]))))
    return CheckpointFormat(
        name=row.name,
        weight_dtype=dtype,
        quant_method=method,
        bits=bits,
        group_size=group,
        details=tuple(details),
        from_model_id=False,
        source=row.source,
        reasons=tuple(note(n) for n in row.notes),
    )


def _when(when: FormatWhen, view: Mapping[str, Any]) -> bool:
    present = all(view.get(p) is not None for p in when.present or [])
    fields = all(view.get(k) == v for k, v in (when.fields or {}).items())
    return present and fields


def _hint(model_id: str, data: FormatsData) -> IdHint | None:
    tokens = set(re.split(r"[-_.]+", model_id.rsplit("/", 1)[-1].lower()))
    return next((h for h in data.model_id_hints if h.token in tokens), None)


def _bits_in_id(model_id: str) -> int | None:
    """Bit width spelled in a model id ("-AWQ-INT4", "-GPTQ-Int8", "-4bit")."""
    m = re.search(
        r"(?:^|[-_.])(?:int(\d+)|(\d+)bit)(?:$|[-_.])", model_id.rsplit("/", 1)[-1].lower()
    )
    return int(m.group(1) or m.group(2)) if m else None


def detect_checkpoint_format(
    config: Mapping[str, Any], model_id: str | None = None
) -> CheckpointFormat:
    """The checkpoint's storage format: ``quantization_config`` first, then the model id's
    suffix (``-FP8``, ``-NVFP4``, ``-AWQ`` ...), then the config dtype."""
    view = parse_config_view(config)
    return detect_format(view, model_id, formats_data())


def detect_format(view: ConfigView, model_id: str | None, data: FormatsData) -> CheckpointFormat:
    qc = _quant_config(view)
    hint = _hint(model_id, data) if model_id else None
    if qc is not None:
        fmt = _from_quant_config(qc, data)
        if hint is not None and hint.format != fmt.name and hint.weight_dtype != fmt.weight_dtype:
            conflict = FMT_ID_CONFLICT(hint=Name(hint.format), format=Name(fmt.name))
            fmt = CheckpointFormat(**{**_fields(fmt), "reasons": (*fmt.reasons, conflict)})
        return fmt
    if hint is not None:
        row = next((f for f in data.checkpoint_formats if f.name == hint.format), None)
        bits = _bits_in_id(model_id or "")
        hint_dtype = hint.weight_dtype
        if hint_dtype == "int":
            hint_dtype = f"int{bits}" if bits else "unknown"
        elif hint_dtype == "from-config":
            hint_dtype = "unknown"
        reasons = [FMT_FROM_ID()]
        if hint.note:
            reasons.append(note(hint.note))
        return CheckpointFormat(
            name=hint.format,
            weight_dtype=hint_dtype,
            quant_method=row.quant_method if row else None,
            bits=bits,
            group_size=None,
            details=(note(row.detail),) if row else (FMT_NAMED(format=Name(hint.format)),),
            from_model_id=True,
            source=f"model id token {hint.token!r} (data/software.yaml model_id_hints)",
            reasons=tuple(reasons),
        )
    text = view.text_config or {}
    dtype: Any = view.torch_dtype or view.dtype or text.get("torch_dtype") or text.get("dtype")
    if isinstance(dtype, str) and dtype in data.unquantized_dtypes:
        name = data.unquantized_dtypes[dtype]
        return CheckpointFormat(
            name=name,
            weight_dtype=name,
            quant_method=None,
            bits=None,
            group_size=None,
            details=(FMT_UNQUANTIZED(dtype=Name(dtype)),),
            from_model_id=False,
            source="config.json torch_dtype",
        )
    return CheckpointFormat(
        name="bf16",
        weight_dtype="bf16",
        quant_method=None,
        bits=None,
        group_size=None,
        details=(FMT_NO_DTYPE(),),
        from_model_id=False,
        source="config.json (no torch_dtype, no quantization_config)",
        reasons=(FMT_NO_DTYPE_NOTE(),),
    )


def _fields(fmt: CheckpointFormat) -> dict[str, Any]:
    return {k: getattr(fmt, k) for k in fmt.__dataclass_fields__}
