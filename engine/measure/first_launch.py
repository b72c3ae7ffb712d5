"""The minimal first launch (playbook: short context, conservative memory) for a layout, and
the /metrics lines to read afterwards: the numbers from ``data/measure.yaml``, every flag in the
engine adapter's spelling (the one settings table over the pinned flag tables)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Protocol

from engine.engines import ENGINES, Engine, adapter
from engine.errors import InputError
from engine.launch.plan import PARALLEL_FLAGS, LaunchPlan
from engine.measure.measure_data import measure_facts


class ParallelLayout(Protocol):
    """How the GPUs are split, as ``engine.launch.plan.Layout`` says it (read-only)."""

    @property
    def tp(self) -> int: ...

    @property
    def dp(self) -> int: ...

    @property
    def attn_dp(self) -> int: ...

    @property
    def ep(self) -> bool: ...


@dataclass(frozen=True)
class FirstLayout:
    """A layout for the first launch: TP, data-parallel ranks, attention-DP, expert parallel."""

    tp: int = 1
    dp: int = 1
    attn_dp: int = 1
    ep: bool = False


def check_engine(engine: str) -> Engine:
    for known in ENGINES:
        if engine == known:
            return known
    raise InputError("engine", f"one of {', '.join(ENGINES)}; got {engine!r}")


def _check_layout(layout: ParallelLayout) -> None:
    limit = measure_facts().limits.max_parallel
    for name, value in (("tp", layout.tp), ("dp", layout.dp), ("attn_dp", layout.attn_dp)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise InputError(name, f"a parallel size from 1 to {limit:,}; got {value!r}")


def first_launch(
    engine: str, model_id: str, layout: ParallelLayout, max_model_len: int | None = None
) -> list[str]:
    """The argv of the playbook's first launch for ``layout``: its short context and memory
    fraction, the layout's parallel flags, and nothing else.

    The engine then picks KV dtype, attention backend and block size, and its startup log says
    what it picked. Every flag is the adapter's, as ``engine.launch.plan`` spells them.
    """
    eng = adapter(check_engine(engine))
    if not model_id.strip() or any(c.isspace() for c in model_id):
        raise InputError("model_id", "a Hugging Face id or local path without spaces")
    _check_layout(layout)
    facts = measure_facts().first_launch
    length = facts.max_model_len if max_model_len is None else max_model_len
    if isinstance(length, bool) or length < 1:
        raise InputError("max_model_len", "a positive number of tokens, e.g. 8192")
    argv = eng.program(model_id)
    if not eng.model_positional:
        argv += [eng.flag("model"), model_id]
    argv += [eng.flag("tp"), str(layout.tp)]
    if layout.attn_dp > 1 and eng.has("attention_dp"):
        argv += [eng.flag("attention_dp"), str(layout.attn_dp)]
    elif layout.dp > 1:
        argv += [eng.flag("dp"), str(layout.dp)]
    if layout.ep:  # a switch over TP x DP, or a size over the TP group
        argv += (
            [eng.flag("ep")] if eng.expert_parallel_is_switch else [eng.flag("ep"), str(layout.tp)]
        )
    return argv + _short_and_metered(eng.name, length)


def _short_and_metered(engine: Engine, length: int) -> list[str]:
    """The playbook's short context and conservative memory fraction, and the switch the engine
    needs to export /metrics (none: it serves them by default)."""
    eng = adapter(engine)
    fraction = measure_facts().first_launch.memory_fraction
    argv = [eng.flag("context"), str(length), eng.flag("memory_fraction"), f"{fraction:g}"]
    return argv + ([eng.flag("metrics")] if eng.has("metrics") else [])


def first_launch_for(plan: LaunchPlan) -> list[str]:
    """The first launch of a planned layout: the plan's program and its parallel flags (the
    Study's layout, spelled once in engine.launch.plan), then the playbook's short context and
    conservative memory fraction, and the metrics switch the engine needs."""
    facts = measure_facts().first_launch
    argv = list(plan.program)
    eng = adapter(plan.engine)
    if not eng.model_positional:
        argv += [eng.flag("model"), plan.model_id]
    for f in plan.flags:
        if f.flag in PARALLEL_FLAGS:
            argv += f.tokens
    length = min(facts.max_model_len, plan.context) if plan.context else facts.max_model_len
    return argv + _short_and_metered(plan.engine, length)


def minimal_launch(
    engine: str,
    model_id: str,
    tp: int = 1,
    max_model_len: int | None = None,
    *,
    dp: int = 1,
    attn_dp: int = 1,
    expert_parallel: bool = False,
) -> list[str]:
    """``first_launch`` with the layout given as numbers (TP alone by default)."""
    return first_launch(
        engine, model_id, FirstLayout(tp, dp, attn_dp, expert_parallel), max_model_len
    )


def default_port(engine: Engine) -> int:
    """The port the engine listens on when its port option is not given, from its pinned flag
    table (vLLM 8000, SGLang 30000)."""
    eng = adapter(engine)
    info = eng.lookup(eng.flag("port"))
    if info is None or not isinstance(info.default, int):  # pragma: no cover - data error
        raise ValueError(f"{engine} flag table: {eng.flag('port')} without an integer default")
    return info.default


def metrics_commands(engine: str, port: int | None = None) -> list[str]:
    """Shell lines that read the KV pool numbers from a running engine's /metrics."""
    known = check_engine(engine)
    if port is None:
        port = default_port(known)
    if isinstance(port, bool) or not 1 <= port <= 65535:
        raise InputError("port", "a TCP port between 1 and 65535")
    curl = f"curl -s localhost:{port}/metrics"
    lines = []
    for names in adapter(known).measure.metrics.grep:
        pattern = f"^{names[0]}" if len(names) == 1 else f"^({'|'.join(names)})"
        lines.append(f"{curl} | grep -E {shlex.quote(pattern)}")
    return lines
