"""The serving scenario a command describes: the model it names, its parallel layout (TP × DP ×
PP × nodes, expert parallelism, attention data parallelism), context, KV dtype, memory
fraction, speculative decoding, text-only use and config overrides, each read with the engine's
own flag spelling and checked to be a number the engine can use. Which flag carries which
scenario field is the scenario table's lint source (``Spec.setting``) in the adapter's
spelling (``field_flags``); nothing here spells a flag."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from engine.decision import Decision
from engine.engines import Engine, Setting, adapter
from engine.lint import codes as C
from engine.lint.arguments import Arg, Parsed
from engine.lint.rule_data import lint_rules
from engine.scenario import fields

_HUMAN_INT = re.compile(r"([0-9]{1,12})(?:\.([0-9]{1,6}))?([kKmMgG]?)")
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def flag_for(setting: Setting, engine: Engine) -> str:
    """The engine's spelling of a setting (the one settings table, engine.engines)."""
    return adapter(engine).flag(setting)


def field_flags(engine: Engine) -> dict[str, str]:
    """Scenario field -> the option that carries it in ``engine``'s command: each field's lint
    source in the scenario table, spelled by the engine's adapter (a field whose setting the
    engine has no option for is absent)."""
    eng = adapter(engine)
    return {
        r.name: eng.flag(r.spec.setting)
        for r in fields()
        if r.spec.setting is not None and eng.has(r.spec.setting)
    }


def shown(value: str, limit: int = 24) -> str:
    """A value short enough to quote in a message."""
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters)"


def token_count(text: str) -> int | None:
    """A token count as the engines' ``human_readable_int`` reads it: 32k = 32,000 and 32K =
    32,768; None when it is not one."""
    m = _HUMAN_INT.fullmatch(text.strip()) if len(text) <= 64 else None
    if m is None:
        return None
    number = int(m.group(1)) + (int(m.group(2)) / 10 ** len(m.group(2)) if m.group(2) else 0)
    return int(number * _SCALE[m.group(3)])


@dataclass(frozen=True)
class ValueProblem:
    arg: Arg
    expected: Decision  # what the engine takes there


@dataclass(frozen=True)
class Settings:
    """What the command sets, in the engine-neutral terms of a Scenario."""

    engine: Engine
    model_id: str | None
    model_index: int | None  # where the model word is in the arguments
    tp: int  # --tensor-parallel-size / --tp-size (SGLang: the whole TP group)
    dp: int  # --data-parallel-size / --dp-size
    dp_local: int | None  # vLLM --data-parallel-size-local
    pp: int
    attention_dp: int  # SGLang --attn-dp-size, or --dp-size with --enable-dp-attention
    ep: bool  # vLLM --enable-expert-parallel; SGLang --ep-size > 1
    ep_size: int  # SGLang --ep-size
    nnodes: int | None
    context: int | None
    context_auto: bool  # --max-model-len auto / -1: the engine fits it itself
    kv_dtype: str | None
    memory_fraction: float | None
    max_num_seqs: int | None  # --max-num-seqs / --max-running-requests
    speculative: bool
    language_model_only: bool
    quantization: str | None
    overrides: dict[str, Any] | None  # --hf-overrides / --json-model-override-args

    @property
    def world(self) -> int:
        """GPUs over all nodes: vLLM TP × PP × DP; SGLang TP × PP × (DP replicas)."""
        return self.tp * self.pp * adapter(self.engine).replicas(self.dp, self.attention_dp)

    @property
    def nodes(self) -> int:
        if self.nnodes is not None:
            return self.nnodes
        if self.dp_local and self.dp % self.dp_local == 0:
            return self.dp // self.dp_local
        if adapter(self.engine).pp_spans_ray_nodes and self.pp > 1:
            return self.pp  # a Ray cluster: TP inside a node, one pipeline stage per node
        return 1

    def layout(self, moe: bool) -> dict[str, Any]:
        """The Scenario's pinned layout fields: attention TP, attention-DP ranks (MoE only),
        PP, EP and replicas."""
        if adapter(self.engine).tp_spans_attention_dp:
            attn_dp = self.attention_dp if moe else 1
            tp = self.tp // attn_dp if attn_dp > 1 and self.tp % attn_dp == 0 else self.tp
            replicas = 1 if self.attention_dp > 1 else self.dp
            dp = attn_dp
        else:
            tp = self.tp
            dp = self.dp if moe else 1
            replicas = 1 if moe else self.dp
        ep = self.ep if moe and tp * dp > 1 else None
        return {"tp": tp, "dp": dp, "pp": self.pp, "ep": ep, "replicas": replicas}


def _whole(arg: Arg | None, limit: int, problems: list[ValueProblem], default: int) -> int:
    if arg is None or arg.value is None:
        return default
    text = arg.value.strip()
    if re.fullmatch(r"[0-9]{1,9}", text) and 1 <= int(text) <= limit:
        return int(text)
    problems.append(ValueProblem(arg, C.EXPECT_WHOLE(most=limit)))
    return default


def _layout(engine: Engine, parsed: Parsed, problems: list[ValueProblem]) -> dict[str, Any]:
    """The parallel sizes the command states (a value the engine could not use is a problem)."""
    limit = int(lint_rules().thresholds.max_parallel_size.value)
    last = parsed.last
    flags = field_flags(engine)
    eng = adapter(engine)

    def size(flag: str, default: int = 1) -> int:
        return _whole(last.get(flag), limit, problems, default)

    out: dict[str, Any] = {"tp": size(flags["tp"]), "dp": size(flags["dp"])}
    out["pp"] = size(flags["pp"])
    out["nnodes"] = size(flags["nodes"]) if last.get(flags["nodes"]) is not None else None
    local = eng.has("dp_local") and last.get(eng.flag("dp_local")) is not None
    out["dp_local"] = size(eng.flag("dp_local")) if local else None
    if eng.expert_parallel_is_switch:
        out["ep"], out["ep_size"] = parsed.on(flags["ep"]), 1
    else:
        out["ep_size"] = size(flags["ep"])
        out["ep"] = out["ep_size"] > 1
    attention_dp = size(eng.flag("attention_dp")) if eng.has("attention_dp") else 1
    legacy = eng.flag("attention_dp_legacy") if eng.has("attention_dp_legacy") else None
    if attention_dp == 1 and legacy is not None and parsed.on(legacy):
        attention_dp = out["dp"]
    out["attention_dp"] = attention_dp
    return out


def _context(arg: Arg | None, problems: list[ValueProblem]) -> tuple[int | None, bool]:
    """The context the command sets, and whether it asks for the model's own ("auto")."""
    if arg is None or arg.value is None:
        return None, False
    if arg.value.strip().lower() in ("auto", "-1"):
        return None, True
    count = token_count(arg.value)
    most = int(lint_rules().thresholds.max_context_tokens.value)
    if count is None or not 1 <= count <= most:
        problems.append(ValueProblem(arg, C.EXPECT_TOKENS(most=most)))
        return None, False
    return count, False


def _fraction(arg: Arg | None, problems: list[ValueProblem]) -> float | None:
    if arg is None or arg.value is None:
        return None
    try:
        fraction = float(arg.value) if len(arg.value) <= 32 else None
    except ValueError:
        fraction = None
    if fraction is None or not math.isfinite(fraction):
        problems.append(ValueProblem(arg, C.EXPECT_FRACTION()))
        return None
    return fraction


def _requests(arg: Arg | None, problems: list[ValueProblem]) -> int | None:
    if arg is None or arg.value is None:
        return None
    seqs = arg.value.strip()
    if len(seqs) <= 9 and seqs.isascii() and seqs.isdigit() and int(seqs) >= 1:
        return int(seqs)
    problems.append(ValueProblem(arg, C.EXPECT_REQUESTS()))
    return None


def _overrides(arg: Arg | None, problems: list[ValueProblem]) -> dict[str, Any] | None:
    if arg is None or arg.value is None:
        return None
    try:
        loaded = json.loads(arg.value)
    except (ValueError, RecursionError):
        loaded = None
    if isinstance(loaded, dict):
        return loaded
    if arg.value.strip() not in ("", "{}"):
        problems.append(ValueProblem(arg, C.EXPECT_JSON()))
    return None


def read_settings(engine: Engine, parsed: Parsed) -> tuple[Settings, list[ValueProblem]]:
    """The command's settings and the values the engine could not use."""
    problems: list[ValueProblem] = []
    flags = field_flags(engine)
    eng = adapter(engine)
    layout = _layout(engine, parsed, problems)
    context, context_auto = _context(parsed.last.get(flags["context"]), problems)
    fraction = _fraction(parsed.last.get(flags["memory_fraction"]), problems)
    max_num_seqs = _requests(parsed.last.get(flags["max_num_seqs"]), problems)
    overrides = _overrides(parsed.last.get(eng.flag("config_overrides")), problems)
    model_id, model_index = _model(engine, parsed)
    settings = Settings(
        engine=engine,
        model_id=model_id,
        model_index=model_index,
        **layout,
        context=context,
        context_auto=context_auto,
        kv_dtype=parsed.value(flags["kv_dtype"]),
        memory_fraction=fraction,
        max_num_seqs=max_num_seqs,
        speculative=any(a.canonical == flags["speculative"] for a in parsed.args),
        language_model_only=parsed.on(flags["images"]),  # text only: no images
        quantization=parsed.value(eng.flag("quantization")),
        overrides=overrides,
    )
    return settings, problems


def _model(engine: Engine, parsed: Parsed) -> tuple[str | None, int | None]:
    arg = parsed.last.get(flag_for("model", engine))
    if arg is not None and arg.value is not None:
        return arg.value, arg.index + (1 if arg.span == 2 else 0)
    if adapter(engine).model_positional and parsed.positionals:
        index, word = parsed.positionals[0]
        return word, index
    return None, None
