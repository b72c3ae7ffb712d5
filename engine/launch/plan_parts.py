"""The vocabulary of a launch plan: a flag with its reason, a flag left to the engine, an
environment variable, one node's command; and the checks that every flag and choice exists in the
engine's pinned table (a miss is a bug here, not bad input)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.decision import Decision
from engine.engines import ENGINES, Engine, Setting, adapter

PLACEHOLDER_MODEL = "/path/to/model"
LEADER = "${LEADER_ADDR}"  # shell variable the user sets to the first node's address


class PlanError(RuntimeError):
    """A generated flag or value is not in the engine's pinned table: a bug here, not bad input."""


# --- the pieces of a plan --------------------------------------------------------------------


@dataclass(frozen=True)
class PlanFlag:
    """One option on the command line; ``value`` is None for a switch. ``why`` is the decision
    that puts it there (worded by ``engine.text.words.say`` in the reader's language)."""

    flag: str
    value: str | None
    why: Decision

    @property
    def tokens(self) -> list[str]:
        return [self.flag] if self.value is None else [self.flag, self.value]


@dataclass(frozen=True)
class LeftOut:
    """An option deliberately not set: the engine's own choice is the better one."""

    flag: str
    why: Decision


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the engine reads at start, with why the plan sets it."""

    name: str
    value: str
    why: Decision


Role = Literal["server", "leader", "worker"]


@dataclass(frozen=True)
class NodeCommand:
    """The command one node runs. ``role``: a whole server (the copy fits one node), or the
    leader / a worker of a copy that spans nodes. ``devices``: the GPUs of this node it uses
    when several servers share a node (CUDA_VISIBLE_DEVICES)."""

    node: int
    role: Role
    rank: int  # node rank inside the copy (0 for a server)
    argv: tuple[str, ...]
    devices: tuple[int, ...] | None
    port: int | None
    multi_node_from: int | None = None  # where the multi-node words begin in argv


def checked(engine: Engine, flag: str, value: str | None, why: Decision) -> PlanFlag:
    """A PlanFlag after checking the spelling is the canonical, non-deprecated option in the
    pinned table, that it takes a value exactly when one is given, and the value is a listed
    choice where the engine enforces its choices."""
    eng = adapter(engine)
    info = eng.lookup(flag)
    if info is None or info.flag != flag:
        raise PlanError(f"{engine} {eng.version} has no option {flag}")
    if info.deprecated:
        raise PlanError(f"{engine} {flag} is deprecated in {eng.version}")
    if info.takes_value != (value is not None):
        raise PlanError(f"{engine} {flag}: takes_value is {info.takes_value}, got {value!r}")
    enforced = info.choices if info.choices_enforced else None
    if value is not None and enforced is not None and value not in enforced:
        raise PlanError(f"{engine} {flag} has no choice {value!r}")
    return PlanFlag(flag, value, why)


def as_spelled(engine: Engine, flag: str, value: str | None, why: Decision) -> PlanFlag:
    """A flag as an official recipe spells it (``--config.key`` forms included), after checking
    the pinned table knows it and does not mark it deprecated."""
    eng = adapter(engine)
    info = eng.lookup(flag)
    if info is None or info.deprecated:
        raise PlanError(f"{engine} {eng.version} has no current option {flag}")
    return PlanFlag(flag, value, why)


# Flags whose values the Study decides (sizing, layout, context): a recipe's value for one of
# them becomes a note rather than a second, conflicting setting.
STUDY_DECIDED_SETTINGS: tuple[Setting, ...] = (
    "kv_dtype",
    "memory_fraction",
    "prefill_chunk",
    "block",
    "context",
    "tp",
    "dp",
    "attention_dp",
    "ep",
)
STUDY_DECIDED = frozenset(
    adapter(e).flag(setting)
    for e in ENGINES
    for setting in STUDY_DECIDED_SETTINGS
    if adapter(e).has(setting)
)


def split_token(token: str) -> tuple[str, str | None]:
    flag, sep, value = token.partition("=")
    return flag, (value if sep else None)
