"""The recipes' known issues (``data/known_issues.yaml``): a condition on the config's fields,
the layout and the GPU, and the fix the recipe gives. The layout search sizes a candidate with
the fixes that apply to it (so the plan sets the flags it assumed); the linter checks a command
against the same rows."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from pydantic import Field

from engine.decision import Code, Decision
from engine.engines import Engine
from engine.engines.memory import GIB, Split, device_memory
from engine.hardware.gpus import Gpu
from engine.launch.recipes import Match
from engine.launch.topology import over_network
from engine.model.config import ModelConfig
from engine.rules import Strict, load_data


class _When(Strict):
    tp: int | None = None
    dp_attention: bool | None = None
    ep: bool | None = None
    multi_node: bool | None = None
    network: bool | None = None  # the copy's GPUs are joined by a network (past one NVLink domain)
    generations: list[str] | None = None
    max_device_gib: float | None = None
    min_weights_share: float | None = Field(default=None, ge=0, le=1)
    memory_fraction_default: bool | None = None
    min_pp: int | None = Field(default=None, ge=2)


class _Fix(Strict):
    memory_fraction: float | None = Field(default=None, gt=0, le=1)
    prefill_chunk: int | None = Field(default=None, ge=1)


class _Limit(Strict):
    max_memory_fraction: float = Field(gt=0, le=1)


class KnownIssue(Strict):
    id: str = Field(pattern=r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
    engine: Engine
    match: Match | None = None
    when: _When
    fix: _Fix | None = None
    limit: _Limit | None = None
    avoid: bool = False
    lint: bool = True  # the linter checks commands against it (False: a planner default only)
    symptom: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    source: str = Field(min_length=1)
    note: str | None = None


class _File(Strict):
    issues: list[KnownIssue]


@cache
def known_issues() -> tuple[KnownIssue, ...]:
    return tuple(load_data(_File, "known_issues.yaml").issues)


# Each issue's symptom as a decision, worded in the catalogs (code.known_issue.<id>; the
# English one is the data's own ``symptom``, a test keeps them equal): declared on import, so
# the catalogs test sees every one.
SYMPTOMS: dict[str, Code] = {
    issue.id: Code("known_issue." + issue.id.replace("-", "_")) for issue in known_issues()
}


def symptom(issue: KnownIssue) -> Decision:
    """What goes wrong without the issue's fix, in the reader's language."""
    return SYMPTOMS[issue.id]()


@dataclass(frozen=True)
class Where:
    """What a known issue's condition reads: the model, the layout, the GPU and the weights."""

    cfg: ModelConfig
    split: Split
    gpu: Gpu
    per_node: int
    weights_per_gpu: int
    fraction_default: bool  # the memory fraction is the engine's own default


def applies(issue: KnownIssue, engine: Engine, where: Where) -> bool:
    w = issue.when
    s = where.split
    if issue.engine != engine:
        return False
    if issue.match is not None and not issue.match.matches(where.cfg):
        return False
    memory = device_memory(where.gpu)
    checks = (
        w.tp is None or s.tp == w.tp,
        w.dp_attention is None or (s.dp > 1) == w.dp_attention,
        w.ep is None or s.ep == w.ep,
        w.multi_node is None or (s.gpus > where.per_node) == w.multi_node,
        w.network is None or over_network(where.gpu, s.gpus, where.per_node) == w.network,
        w.generations is None or where.gpu.generation in w.generations,
        w.max_device_gib is None or memory / GIB <= w.max_device_gib,
        w.min_weights_share is None or where.weights_per_gpu >= w.min_weights_share * memory,
        w.memory_fraction_default is None or where.fraction_default == w.memory_fraction_default,
        w.min_pp is None or s.pp >= w.min_pp,
    )
    return all(checks)


def avoided(engine: Engine, cfg: ModelConfig, split: Split) -> KnownIssue | None:
    """An issue that makes the engine fail on this split whatever the GPU (the layout search
    leaves the split out and says why)."""
    for issue in known_issues():
        if not issue.avoid or issue.engine != engine:
            continue
        if issue.match is not None and not issue.match.matches(cfg):
            continue
        w = issue.when
        if w.dp_attention is not None and (split.dp > 1) != w.dp_attention:
            continue
        if w.min_pp is not None and split.pp < w.min_pp:
            continue
        if w.ep is not None and split.ep != w.ep:
            continue
        if w.tp is not None and split.tp != w.tp:
            continue
        return issue
    return None


def fixes_for(engine: Engine, where: Where) -> tuple[KnownIssue, ...]:
    """The issues with a fix that apply to this candidate, in the file's order."""
    return tuple(i for i in known_issues() if i.fix is not None and applies(i, engine, where))
