"""The answer first: does the pick run on these GPUs as asked — its gates, its memory and the
scenario's speed targets — and the one reason.

A target is part of the verdict: each one asked is checked against the pick's figure and that
figure's range (``TargetCheck``); when one is missed the status says so (``misses_targets``, a
plan that runs but not as fast as asked) and names the layout of these GPUs nearest to meeting
them, with its figures. What to change is the alternatives' business (engine/alternatives.py),
each re-checked through the Study.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engine.decision import Bytes, Code, Decimal, Decision, Name, Param, Tokens
from engine.gates import GateReport
from engine.launch.candidate import Candidate, Layout, LayoutSearch
from engine.launch.ranking import figure, figure_range
from engine.perf import Speed
from engine.scenario import Scenario

VerdictStatus = Literal[
    "runs", "misses_targets", "fewer_users", "shorter_context", "does_not_fit", "blocked"
]
TargetMetric = Literal["ttft", "tpot"]

RUNS = Code("verdict.runs", "layout", "users", "context")
RUNS_TARGETS = Code("verdict.runs_targets", "layout", "users", "context", "met")
MISSES_TARGETS = Code("verdict.misses_targets", "layout", "users", "context", "missed", "nearest")
FEWER_USERS = Code("verdict.fewer_users", "users", "asked", "context", "layout")
SHORTER_CONTEXT = Code("verdict.shorter_context", "fits", "asked", "layout")
DOES_NOT_FIT = Code("verdict.does_not_fit", "weights", "layout", "usable", "times")
BLOCKED = Code("verdict.blocked", "gate", "reason")
# one target against the pick's figure and its range
TARGET_MISSED = Code("verdict.target.missed", "metric", "value", "low", "high", "target")
TARGET_MET = Code("verdict.target.met", "metric", "value", "low", "high", "target")
NEAREST_PICK = Code("verdict.nearest.pick")
NEAREST = Code("verdict.nearest.other", "layout", "ttft", "tpot", "users")
METRIC_NAME: dict[TargetMetric, Name] = {"ttft": Name("TTFT"), "tpot": Name("TPOT")}
DIGITS: dict[TargetMetric, int] = {"ttft": 0, "tpot": 1}


@dataclass(frozen=True)
class TargetCheck:
    """One speed target against the pick's figure: met when the figure is within it, met for
    sure when the figure's whole range is (the alternatives keep only those)."""

    metric: TargetMetric
    target_ms: float
    value_ms: float
    low_ms: float
    high_ms: float

    @property
    def met(self) -> bool:
        return self.value_ms <= self.target_ms

    @property
    def sure(self) -> bool:
        return self.high_ms <= self.target_ms

    def decision(self) -> Decision:
        digits = DIGITS[self.metric]
        code = TARGET_MET if self.met else TARGET_MISSED
        return code(
            metric=METRIC_NAME[self.metric],
            value=Decimal(self.value_ms, digits, "ms"),
            low=Decimal(self.low_ms, digits),
            high=Decimal(self.high_ms, digits),
            target=Decimal(self.target_ms, digits, "ms"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "target_ms": self.target_ms,
            "value_ms": self.value_ms,
            "range_ms": [self.low_ms, self.high_ms],
            "met": self.met,
            "met_within_range": self.sure,
        }


@dataclass(frozen=True)
class Verdict:
    """The status, the one reason, a failed gate's own fix, each target's check and, when a
    target is missed, the layout nearest to meeting them (the pick itself when none is
    nearer)."""

    status: VerdictStatus
    reason: Decision
    fix: Decision | None = None
    targets: tuple[TargetCheck, ...] = ()
    nearest: Layout | None = None
    nearest_speed: Speed | None = None

    @property
    def runs(self) -> bool:
        return self.status in ("runs", "misses_targets", "fewer_users", "shorter_context")

    @property
    def targets_met(self) -> bool:
        return all(t.met for t in self.targets)


def checks(scenario: Scenario, speed: Speed | None) -> tuple[TargetCheck, ...]:
    """Each target the scenario asks for, against ``speed`` (none without a speed)."""
    if speed is None:
        return ()
    asked: list[tuple[TargetMetric, float | None]] = [
        ("ttft", scenario.ttft_ms),
        ("tpot", scenario.tpot_ms),
    ]
    out = []
    for metric, target in asked:
        if target is None:
            continue
        low, high = figure_range(speed, metric)
        out.append(TargetCheck(metric, target, figure(speed, metric), low, high))
    return tuple(out)


def _shortfall(scenario: Scenario, c: Candidate) -> float:
    """How far ``c`` is from its targets: its worst figure over its target (1 or less: met)."""
    return max((t.value_ms / t.target_ms for t in checks(scenario, c.speed)), default=0.0)


def nearest(scenario: Scenario, search: LayoutSearch) -> Candidate:
    """The layout nearest to the missed targets among those that hold as many users and as long
    a context as the pick (the pick when none is nearer)."""
    pick = search.pick
    same = [
        c
        for c in search.candidates
        if c.speed is not None
        and (c.weights_fit, c.context_fits, c.users_fit)
        == (pick.weights_fit, pick.context_fits, pick.users_fit)
    ]
    best = min(same, key=lambda c: _shortfall(scenario, c), default=pick)
    return best if _shortfall(scenario, best) < _shortfall(scenario, pick) else pick


def _misses(scenario: Scenario, search: LayoutSearch, targets: tuple[TargetCheck, ...]) -> Verdict:
    pick = search.pick
    near = nearest(scenario, search)
    sp = near.speed
    said = (
        NEAREST_PICK()
        if near is pick or sp is None
        else NEAREST(
            layout=near.layout.name(),
            ttft=Decimal(sp.ttft_ms, 0, "ms"),
            tpot=Decimal(sp.tpot_ms, 1, "ms"),
            users=near.users,
        )
    )
    reason = MISSES_TARGETS(
        layout=pick.layout.name(),
        users=pick.users,
        context=Tokens(pick.context),
        missed=tuple(t.decision() for t in targets if not t.met),
        nearest=said,
    )
    return Verdict("misses_targets", reason, None, targets, near.layout, sp)


def verdict(s: Scenario, search: LayoutSearch, gates: GateReport, asked: int) -> Verdict:
    """The gates first, then the memory (weights, context, users), then the targets."""
    pick = search.pick
    targets = checks(s, pick.speed)
    failed = gates.failed(memory=False)
    if failed:
        g = failed[0]
        return Verdict("blocked", BLOCKED(gate=g.failure, reason=g.reason), g.fix, targets)
    lay = pick.layout.name()
    if not pick.weights_fit or (not pick.context_fits and pick.users == 0):
        times = Decimal(pick.weights_per_gpu / max(pick.usable_per_gpu, 1), 1, "×")
        reason = DOES_NOT_FIT(
            weights=Bytes(pick.weights_per_gpu),
            layout=lay,
            usable=Bytes(pick.usable_per_gpu),
            times=times,
        )
        return Verdict("does_not_fit", reason, None, targets)
    if not pick.context_fits:
        reason = SHORTER_CONTEXT(fits=Tokens(pick.context), asked=Tokens(asked), layout=lay)
        return Verdict("shorter_context", reason, None, targets)
    if not pick.users_fit:
        reason = FEWER_USERS(
            users=pick.users, asked=s.users, context=Tokens(pick.context), layout=lay
        )
        return Verdict("fewer_users", reason, None, targets)
    if not all(t.met for t in targets):
        return _misses(s, search, targets)
    said: dict[str, Param] = {"layout": lay, "users": pick.users, "context": Tokens(pick.context)}
    if targets:
        met = tuple(t.decision() for t in targets)
        return Verdict("runs", RUNS_TARGETS(**said, met=met), None, targets)
    return Verdict("runs", RUNS(**said), None, targets)
