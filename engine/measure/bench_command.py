"""The benchmark that tests a plan, decided: ``vllm bench serve`` or ``python3 -m
sglang.bench_serving`` against the plan's own server, at the scenario's prompt and output tokens,
swept over the clients at once up to the requests the plan's KV holds, each run saved as the
tool's result file (``engine.present.bench_script`` writes it as a script).

The sweep doubles from one client (data/bench.yaml sweep; the speed chart's own ladder), with the
scenario's users and the top added; each run sends ``prompts_per_client`` prompts per client
(data/perf.yaml benchmark: the convention the speed model's TTFT assumes) after one warm-up
request per client. Every word passed to a tool is a flag of that tool's table in
data/bench.yaml (read from its source), with a value exactly where the flag takes one and one of
its choices where the tool enforces them; a miss is a bug here and raises ``BenchError``.

A run's argv holds its words as data: text, or ``Expand``, one of the script's own variables
(``"${HOST}"``, ``"${PORT}"``, ``"${RESULT_DIR}"``), which the script sets itself with a default.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, cast

from engine.engines import Engine
from engine.launch.plan import LaunchPlan
from engine.measure.bench_data import Tool, bench_facts
from engine.perf.factors import perf_facts
from engine.study import Study

Var = Literal["HOST", "PORT", "RESULT_DIR"]


class BenchError(RuntimeError):
    """A generated word is not in the benchmark tool's table: a bug here, not bad input."""


@dataclass(frozen=True)
class Expand:
    """A word made of one of this script's own variables and a literal tail: ``"${VAR}"tail``."""

    var: Var
    tail: str = ""

    def __str__(self) -> str:
        return f"${{{self.var}}}{self.tail}"


Token = str | Expand


@dataclass(frozen=True)
class SweepRun:
    """One run of the sweep: ``concurrency`` clients, ``num_prompts`` prompts, the tool's argv
    and the result file it writes (relative to ``$RESULT_DIR``)."""

    concurrency: int
    num_prompts: int
    warmups: int
    argv: tuple[Token, ...]
    result_file: str


@dataclass(frozen=True)
class BenchPlan:
    """The sweep against one endpoint of the plan: ``servers`` endpoints serve the layout alike
    (the first is driven, with its share of the load), ``top`` clients at most."""

    engine: Engine
    tool: Tool
    model_id: str
    port: int
    servers: int
    gpus: int  # GPUs behind the endpoint driven
    isl: int
    osl: int
    users: int
    top: int
    runs: tuple[SweepRun, ...]
    plan: LaunchPlan


def ladder(top: int, users: int) -> tuple[int, ...]:
    """1, 2, 4, ... below ``top``, with ``users`` and ``top`` themselves; at most the sweep's
    points (every other step dropped until it fits, 1, users and top kept)."""
    facts = bench_facts().sweep
    steps: list[int] = []
    n = 1
    while n < top:
        steps.append(n)
        n *= facts.ratio
    keep = {1, top, min(users, top)}
    while len(set(steps) | keep) > facts.max_points:
        steps = steps[::2]
    return tuple(sorted(set(steps) | keep))


@dataclass(frozen=True)
class _Run:
    """What one run's flags say: the model, the workload, the load and the result file."""

    model: str
    isl: int
    osl: int
    concurrency: int
    num_prompts: int
    warmups: int
    result_file: str


_VAR = re.compile(r"^\$\{(HOST|PORT|RESULT_DIR)\}(.*)$")


def _token(template: str, values: dict[str, object]) -> Token:
    """A value template of the tool's run: ``${VAR}tail`` is the script's variable (the tail
    filled in), anything else text with the run's values filled in."""
    m = _VAR.match(template)
    if m:
        return Expand(cast(Var, m.group(1)), m.group(2).format_map(values))
    return template.format_map(values)


def _pairs(tool: Tool, run: _Run) -> list[tuple[str, Token | None]]:
    """The flags of one run, as the tool's run in data/bench.yaml lists them."""
    values: dict[str, object] = {
        "backend": tool.backend, "model": run.model, "isl": run.isl, "osl": run.osl,
        "range_ratio": tool.fixed_range_ratio, "prompts": run.num_prompts,
        "clients": run.concurrency, "warmups": run.warmups, "result_file": run.result_file,
    }  # fmt: skip
    return [(flag, _token(rest[0], values) if rest else None) for flag, *rest in tool.run]


def checked(tool: Tool, pairs: list[tuple[str, Token | None]]) -> tuple[Token, ...]:
    """``pairs`` as argv after checking each flag against the tool's table."""
    argv: list[Token] = list(tool.program)
    for flag, value in pairs:
        row = tool.flags.get(flag)
        if row is None:
            raise BenchError(f"{' '.join(tool.program)} has no flag {flag}")
        if row.value != (value is not None):
            raise BenchError(f"{flag}: takes a value is {row.value}, got {value!r}")
        if row.choices is not None and str(value) not in row.choices:
            raise BenchError(f"{flag}: {value!r} is not one of {row.choices}")
        argv += [flag] if value is None else [flag, value]
    return tuple(argv)


def bench_plan(st: Study, engine: Engine | None = None) -> BenchPlan | None:
    """The sweep that tests ``engine``'s plan (default: the scenario's); None when that engine
    has no plan for the Study's layout."""
    view = st.engines[engine or st.scenario.engine]
    plan = view.plan
    if plan is None or view.fit is None:
        return None
    tool = bench_facts().tools[view.engine]
    served = [c for c in plan.commands if c.port is not None]
    servers = max(1, len(served))
    port = served[0].port if served and served[0].port is not None else plan.port
    top = max(1, view.fit.running // servers)
    users = max(1, math.ceil(st.scenario.users / servers))
    isl, osl = st.scenario.workload(st.context)
    per_client = perf_facts().benchmark.prompts_per_client
    warm = bench_facts().sweep.warmups_per_client
    runs = []
    for c in ladder(top, users):
        run = _Run(
            plan.model_id, isl, osl, c, math.ceil(per_client * c), warm * c,
            f"{view.engine}-c{c}.{tool.extension}",
        )  # fmt: skip
        argv = checked(tool, _pairs(tool, run))
        runs.append(SweepRun(c, run.num_prompts, run.warmups, argv, run.result_file))
    gpus = max(1, plan.layout.gpus // servers)
    return BenchPlan(
        view.engine, tool, plan.model_id, port, servers, gpus, isl, osl, users, top,
        tuple(runs), plan,
    )  # fmt: skip
