"""Step 4, software: engine release, parsers, checkpoint format and special flags for a config.

The facts live in ``data/software.yaml`` (per architecture, per parser family, per quantization
method, each with its source) and in the pinned engine tables of ``data/engines/``. This module
holds the rules that pick a row from config.json fields only (``architectures[0]``, ``model_type``,
the fields a family row names), never from a model's display name, and checks every name it emits
against the engine's own registries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import InputError
from engine.rules import DATA_DIR, load_data
from engine.software.tables import (
    ENGINES,
    ENGINES_DIR,
    Engine,
    engine_version,
    lookup_flag,
    quantization_methods,
    reasoning_parsers,
    supported_architectures,
    table_path,
    tool_call_parsers,
)
from engine.software.versions import latest, version_key

SOFTWARE_YAML = DATA_DIR / "software.yaml"

ARCHITECTURES_EXPECTED = 'a non-empty list of model class names, e.g. ["LlamaForCausalLM"]'

FieldValue = str | int | float | bool


# ---------------------------------------------------------------------------------------------
# data/software.yaml, validated once
# ---------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _FlagEntry(_Strict):
    flag: str = Field(pattern=r"^--?[A-Za-z0-9][\w.-]*(=\S+)?$")
    reason: str = Field(min_length=1)
    source: str = ""


class _EngineMeta(_Strict):
    tool_parser_companion_flags: list[_FlagEntry]
    unknown_architecture_hint: str


class _EngineArch(_Strict):
    min_version: str | None
    source: str = Field(min_length=1)
    note: str = ""
    native: bool = True

    @field_validator("min_version")
    @classmethod
    def _parses(cls, v: str | None) -> str | None:
        if v is not None:
            version_key(v)
        return v


class _ArchRow(_Strict):
    vllm: _EngineArch | None = None
    sglang: _EngineArch | None = None
    fusion: Literal["early"] | None = None
    fusion_source: str | None = None


class _Match(_Strict):
    architectures: list[str] = Field(min_length=1)
    model_types: list[str] | None = None
    fields: dict[str, FieldValue] | None = None
    present: list[str] | None = None
    at_least: dict[str, float] | None = None
    # Repository-name tokens that tell apart checkpoints whose config.json files are identical
    # (DeepSeek-R1 and -V3): the row applies only to a model id carrying one of them.
    model_id_tokens: list[str] | None = None


class _EngineParsers(_Strict):
    tool_call_parser: str | None
    reasoning_parser: str | None
    flags: list[_FlagEntry] = []
    min_version: str | None = None
    min_version_source: str | None = None


class _TrustRemoteCode(_Strict):
    engines: list[Engine]
    reason: str
    source: str


class _Family(_Strict):
    name: str
    match: _Match
    vllm: _EngineParsers
    sglang: _EngineParsers
    trust_remote_code: _TrustRemoteCode | None = None
    source: str = Field(min_length=1)
    notes: list[str] = []


class _FormatEngine(_Strict):
    resolves_to: str | None
    note: str = ""


class _When(_Strict):
    present: list[str] | None = None
    fields: dict[str, FieldValue] | None = None


class _Format(_Strict):
    quant_method: str
    when: _When | None = None
    name: str
    weight_dtype: str
    detail: str
    vllm: _FormatEngine
    sglang: _FormatEngine
    source: str = Field(min_length=1)
    notes: list[str] = []


class _Hint(_Strict):
    token: str = Field(pattern=r"^[a-z0-9]+$")
    format: str
    weight_dtype: str
    note: str = ""


class _SoftwareFile(_Strict):
    engines: dict[Engine, _EngineMeta]
    architectures: dict[str, _ArchRow]
    parser_families: list[_Family]
    checkpoint_formats: list[_Format]
    model_id_hints: list[_Hint]
    unquantized_dtypes: dict[str, str]


def data_problems(data: _SoftwareFile | None = None) -> list[str]:
    """Names in software.yaml that the pinned engine tables do not know (should be empty)."""
    data = data if data is not None else _data()
    problems: list[str] = []
    for engine in ENGINES:
        tools, reasons, quants = (
            tool_call_parsers(engine),
            reasoning_parsers(engine),
            quantization_methods(engine),
        )
        meta = data.engines[engine]
        flags = [f.flag for f in meta.tool_parser_companion_flags]
        for fam in data.parser_families:
            p: _EngineParsers = getattr(fam, engine)
            if p.tool_call_parser is not None and p.tool_call_parser not in tools:
                problems.append(f"{fam.name}: {engine} tool parser {p.tool_call_parser!r}")
            if p.reasoning_parser is not None and p.reasoning_parser not in reasons:
                problems.append(f"{fam.name}: {engine} reasoning parser {p.reasoning_parser!r}")
            flags += [f.flag for f in p.flags]
        for flag in flags:
            if lookup_flag(engine, flag) is None:
                problems.append(f"{engine} flag {flag!r} is not in the pinned table")
        for fmt in data.checkpoint_formats:
            resolved = getattr(fmt, engine).resolves_to
            if resolved is not None and resolved not in quants:
                problems.append(f"{fmt.name}: {engine} quantization {resolved!r}")
    for needed in ("--trust-remote-code", "--language-model-only"):
        for engine in ENGINES:
            if lookup_flag(engine, needed) is None:
                problems.append(f"{engine} flag {needed!r} is not in the pinned table")
    return problems


@cache
def _data() -> _SoftwareFile:
    data = load_data(_SoftwareFile, SOFTWARE_YAML.name)
    problems = data_problems(data)
    if problems:
        raise ValueError(f"{SOFTWARE_YAML.name} disagrees with data/engines/: {problems}")
    return data


# ---------------------------------------------------------------------------------------------
# config.json at the boundary
# ---------------------------------------------------------------------------------------------


class _ConfigView(BaseModel):
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


def _parse_config(config: Mapping[str, Any]) -> _ConfigView:
    if not isinstance(config, Mapping):
        raise InputError("config", "a config.json object (a JSON mapping)")
    try:
        view = _ConfigView.model_validate(dict(config))
    except ValidationError as err:
        first = err.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "config"
        if name == "architectures":
            raise InputError("architectures", ARCHITECTURES_EXPECTED) from err
        raise InputError(name, f"a valid value ({first['msg']})") from err
    if not view.architectures or not view.architectures[0].strip():
        raise InputError("architectures", ARCHITECTURES_EXPECTED)
    return view


_MISSING = object()


def _get(config: Mapping[str, Any], path: str) -> Any:
    """A dotted config field; a top-level key missing at the root is looked up in text_config,
    where multimodal configs keep the language model's fields."""
    head, *rest = path.split(".")
    node: Any = config.get(head, _MISSING)
    if node is _MISSING:
        text = config.get("text_config")
        node = text.get(head, _MISSING) if isinstance(text, Mapping) else _MISSING
    for part in rest:
        if not isinstance(node, Mapping):
            return _MISSING
        node = node.get(part, _MISSING)
    return node


def _model_type(view: _ConfigView) -> str | None:
    text_type = (view.text_config or {}).get("model_type")
    return view.model_type or (text_type if isinstance(text_type, str) else None)


def _model_types(view: _ConfigView) -> set[str]:
    types = {view.model_type} if view.model_type else set()
    text_type = (view.text_config or {}).get("model_type")
    if isinstance(text_type, str):
        types.add(text_type)
    return types


def _id_tokens(model_id: str | None) -> set[str]:
    if not model_id:
        return set()
    return set(re.split(r"[-_.]+", model_id.rsplit("/", 1)[-1].lower()))


def _matches(
    m: _Match,
    arch: str,
    view: _ConfigView,
    config: Mapping[str, Any],
    model_id: str | None = None,
) -> bool:
    if arch not in m.architectures:
        return False
    if m.model_id_tokens is not None and not _id_tokens(model_id) & set(m.model_id_tokens):
        return False
    if m.model_types is not None and not _model_types(view) & set(m.model_types):
        return False
    for path, want in (m.fields or {}).items():
        if _get(config, path) != want:
            return False
    for path in m.present or []:
        if _get(config, path) in (_MISSING, None):
            return False
    for path, floor in (m.at_least or {}).items():
        got = _get(config, path)
        if isinstance(got, bool) or not isinstance(got, int | float) or got < floor:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Checkpoint format
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckpointFormat:
    """How the weights are stored, read from ``quantization_config`` (or the model id, or dtype).

    ``weight_dtype`` is what hardware gates care about: "bf16", "fp16", "fp32", "fp8", "nvfp4",
    "mxfp4", "int4", "int8", "nf4", "bnb-fp4", "mixed" or "unknown".
    """

    name: str
    weight_dtype: str
    quant_method: str | None
    bits: int | None
    group_size: int | None
    detail: str
    from_model_id: bool
    source: str
    notes: tuple[str, ...] = ()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _quant_config(view: _ConfigView) -> dict[str, Any] | None:
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


def _from_quant_config(qc: dict[str, Any], data: _SoftwareFile) -> CheckpointFormat:
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
            detail=f"quant_method {method!r} is not described in data/software.yaml",
            from_model_id=False,
            source="config.json quantization_config",
        )
    bits = _int(view.get("bits")) or _int(view.get("w_bit"))
    group = _int(view.get("group_size")) or _int(view.get("q_group_size"))
    detail, dtype = row.detail, row.weight_dtype
    if method == "compressed-tensors":
        dtype, bits, group, scheme = _compressed_tensors_scheme(view)
        detail = f"{row.detail}: {scheme}"
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
        detail += f", {bits}-bit" + (f", group size {group}" if group else "")
    block = view.get("weight_block_size")
    if isinstance(block, list) and block:
        detail += f", block {'x'.join(str(b) for b in block)}"
    if view.get("scale_fmt"):
        detail += f", scale format {view['scale_fmt']}"
    return CheckpointFormat(
        name=row.name,
        weight_dtype=dtype,
        quant_method=method,
        bits=bits,
        group_size=group,
        detail=detail,
        from_model_id=False,
        source=row.source,
        notes=tuple(row.notes),
    )


def _when(when: _When, view: Mapping[str, Any]) -> bool:
    present = all(view.get(p) is not None for p in when.present or [])
    fields = all(view.get(k) == v for k, v in (when.fields or {}).items())
    return present and fields


def _hint(model_id: str, data: _SoftwareFile) -> _Hint | None:
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
    view = _parse_config(config)
    return _detect(view, model_id, _data())


def _detect(view: _ConfigView, model_id: str | None, data: _SoftwareFile) -> CheckpointFormat:
    qc = _quant_config(view)
    hint = _hint(model_id, data) if model_id else None
    if qc is not None:
        fmt = _from_quant_config(qc, data)
        if hint is not None and hint.format != fmt.name and hint.weight_dtype != fmt.weight_dtype:
            note = (
                f"The model id suggests {hint.format}, but config.json's quantization_config "
                f"says {fmt.name}; the config wins."
            )
            fmt = CheckpointFormat(**{**asdict(fmt), "notes": (*fmt.notes, note)})
        return fmt
    if hint is not None:
        row = next((f for f in data.checkpoint_formats if f.name == hint.format), None)
        bits = _bits_in_id(model_id or "")
        hint_dtype = hint.weight_dtype
        if hint_dtype == "int":
            hint_dtype = f"int{bits}" if bits else "unknown"
        elif hint_dtype == "from-config":
            hint_dtype = "unknown"
        notes = [
            "config.json has no quantization_config (a base model's config?); the format comes "
            "from the model id. The real checkpoint's config.json should carry it."
        ]
        if hint.note:
            notes.append(hint.note)
        return CheckpointFormat(
            name=hint.format,
            weight_dtype=hint_dtype,
            quant_method=row.quant_method if row else None,
            bits=bits,
            group_size=None,
            detail=row.detail if row else hint.format,
            from_model_id=True,
            source=f"model id token {hint.token!r} (data/software.yaml model_id_hints)",
            notes=tuple(notes),
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
            detail=f"unquantized {dtype} weights",
            from_model_id=False,
            source="config.json torch_dtype",
        )
    return CheckpointFormat(
        name="bf16",
        weight_dtype="bf16",
        quant_method=None,
        bits=None,
        group_size=None,
        detail="no torch_dtype in config.json; with --dtype auto the engines serve it in bfloat16",
        from_model_id=False,
        source="config.json (no torch_dtype, no quantization_config)",
        notes=("The weights' dtype is not stated in config.json: check the safetensors header.",),
    )


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftwareReport:
    """What step 4 tells the user for one engine; ``notes`` carry the why, ``sources`` the where.

    ``quantization`` is the ``--quantization`` value to pass, and None when the engine reads
    quant_method from config.json itself (the note names what it resolves to).
    ``extra_flags`` are single tokens (``--flag`` or ``--flag=value``) that the engine's pinned
    table accepts; ``flag_reasons`` gives each one's reason.
    """

    engine: Engine
    architecture: str
    min_version: str | None
    tool_call_parser: str | None
    reasoning_parser: str | None
    checkpoint_format: str
    quantization: str | None
    extra_flags: list[str]
    notes: list[str]
    sources: list[str]
    engine_version: str
    model_type: str | None
    family: str | None
    natively_supported: bool
    multimodal: Literal["early-fusion", "multimodal"] | None
    checkpoint: CheckpointFormat
    flag_reasons: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["checkpoint"]["notes"] = list(self.checkpoint.notes)
        return out


def _table_source(engine: Engine) -> str:
    return f"data/engines/{table_path(engine, 'flags').relative_to(ENGINES_DIR)}"


def software_report(
    config: Mapping[str, Any],
    engine: Engine,
    model_id: str | None = None,
    *,
    text_only: bool = False,
) -> SoftwareReport:
    """Minimum engine version, parsers, checkpoint format and special flags for ``config``.

    ``text_only`` says the user serves a multimodal checkpoint for text alone, which adds
    ``--language-model-only`` (the vision tower is then never loaded).
    """
    if engine not in ENGINES:
        raise InputError("engine", f"one of {', '.join(ENGINES)}")
    view = _parse_config(config)
    data = _data()
    raw = dict(config)
    arch = view.architectures[0] if view.architectures else ""
    version = engine_version(engine)
    notes: list[str] = []
    sources: list[str] = []
    flags: dict[str, str] = {}

    def add_flag(flag: str, reason: str) -> None:
        if lookup_flag(engine, flag) is None:
            notes.append(f"{flag} would be needed but is not in {engine} {version}'s flag table.")
        else:
            flags.setdefault(flag, reason)

    # Architecture: native support and the minimum release.
    row = data.architectures.get(arch)
    eng_arch: _EngineArch | None = getattr(row, engine) if row is not None else None
    registry_archs = supported_architectures(engine)
    native = (
        arch in registry_archs
        if registry_archs is not None
        else eng_arch is not None and eng_arch.native
    )
    minimums: list[str] = []
    if eng_arch is not None:
        sources.append(eng_arch.source)
        if eng_arch.min_version is not None:
            minimums.append(eng_arch.min_version)
        if eng_arch.note:
            notes.append(eng_arch.note)
    else:
        notes.append(
            f"{arch} is not in data/software.yaml for {engine}: the minimum version is not known "
            f"and native support is unconfirmed. {data.engines[engine].unknown_architecture_hint}"
        )

    # Parser family.
    family = next(
        (f for f in data.parser_families if _matches(f.match, arch, view, raw, model_id)),
        None,
    )
    tool: str | None = None
    reasoning: str | None = None
    if family is not None:
        parsers: _EngineParsers = getattr(family, engine)
        tool, reasoning = parsers.tool_call_parser, parsers.reasoning_parser
        sources.append(family.source)
        notes.extend(family.notes)
        if parsers.min_version is not None:
            minimums.append(parsers.min_version)
            if parsers.min_version_source:
                sources.append(parsers.min_version_source)
        for entry in parsers.flags:
            add_flag(entry.flag, entry.reason)
        if tool is not None:
            for entry in data.engines[engine].tool_parser_companion_flags:
                add_flag(entry.flag, entry.reason)
        if tool is None:
            notes.append(f"No {engine} tool-call parser is recorded for {family.name}.")
        trc = family.trust_remote_code
        if trc is not None and engine in trc.engines:
            add_flag("--trust-remote-code", trc.reason)
            sources.append(trc.source)
    elif eng_arch is not None:
        notes.append(
            f"No tool-call or reasoning parser is recorded for {arch}: base and older chat "
            "models emit no tool-call format these engines parse."
        )
    else:
        notes.append(
            f"Risk: parser names for {arch} are unknown. Check the model card before enabling "
            "tool calling; a wrong --tool-call-parser silently returns tool calls as plain text."
        )

    min_version = latest(minimums) if minimums else None
    if min_version is None and eng_arch is not None:
        notes.append(f"Minimum {engine} release for {arch}: not known.")
    if min_version is not None and version_key(min_version) > version_key(version):
        notes.append(
            f"{engine} >= {min_version} is newer than the pinned flag tables ({version}); "
            "flags were checked against those tables."
        )

    # Remote code: custom modeling files the engine has no native class for.
    if view.auto_map and not native:
        add_flag(
            "--trust-remote-code",
            f"config.json has auto_map (modeling code in the model repo) and {arch} is not "
            f"known to be implemented natively by {engine}.",
        )
    elif view.auto_map:
        notes.append(
            f"config.json has auto_map, but {engine} implements {arch} natively: "
            "--trust-remote-code is not needed for the model code."
        )

    # Multimodal checkpoints served for text only.
    is_mm = view.vision_config is not None or view.audio_config is not None
    early = row is not None and row.fusion == "early"
    multimodal: Literal["early-fusion", "multimodal"] | None = (
        "early-fusion" if early else "multimodal" if is_mm else None
    )
    if multimodal is not None:
        if row is not None and row.fusion_source:
            sources.append(row.fusion_source)
        if text_only:
            add_flag(
                "--language-model-only",
                "Served for text only: the multimodal encoder is never loaded, which frees its "
                "memory for KV cache.",
            )
        elif early:
            notes.append(
                f"{arch} is an early-fusion model: every checkpoint carries the vision tower and "
                "there is no text-only sibling. Serving text only? --language-model-only skips it."
            )
        else:
            notes.append("Serving text only? --language-model-only skips the multimodal encoder.")

    # Checkpoint format and what --quantization the engine wants.
    ckpt = _detect(view, model_id, data)
    sources.append(ckpt.source)
    notes.extend(ckpt.notes)
    fmt_row = next((f for f in data.checkpoint_formats if f.name == ckpt.name), None)
    if fmt_row is not None and ckpt.quant_method is not None:
        eng_fmt: _FormatEngine = getattr(fmt_row, engine)
        if eng_fmt.resolves_to is not None:
            notes.append(
                f"{engine} reads quant_method {ckpt.quant_method!r} from config.json and uses its "
                f"{eng_fmt.resolves_to!r} method: no --quantization flag needed."
            )
        if eng_fmt.note:
            notes.append(eng_fmt.note)
    elif ckpt.quant_method is not None and ckpt.quant_method not in quantization_methods(engine):
        notes.append(
            f"quant_method {ckpt.quant_method!r} is not a {engine} {version} quantization method."
        )

    sources.append(_table_source(engine))
    return SoftwareReport(
        engine=engine,
        architecture=arch,
        min_version=min_version,
        tool_call_parser=tool,
        reasoning_parser=reasoning,
        checkpoint_format=ckpt.name,
        quantization=None,
        extra_flags=list(flags),
        notes=_unique(notes),
        sources=_unique(sources),
        engine_version=version,
        model_type=_model_type(view),
        family=family.name if family is not None else None,
        natively_supported=native,
        multimodal=multimodal,
        checkpoint=ckpt,
        flag_reasons=flags,
    )


def _unique(items: list[str]) -> list[str]:
    return [s for s in dict.fromkeys(items) if s]


def known_architectures() -> frozenset[str]:
    """Architectures with a row in data/software.yaml."""
    return frozenset(_data().architectures)
