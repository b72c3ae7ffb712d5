"""The vocabulary of a launch plan: a flag with its reason, a flag left to the engine, an
environment variable, one node's command; and the checks that every flag and choice exists in the
engine's pinned table (a miss is a bug here, not bad input)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.scenario import Engine
from engine.software.tables import engine_version, lookup_flag

PLACEHOLDER_MODEL = "/path/to/model"
LEADER = "${LEADER_ADDR}"  # shell variable the user sets to the first node's address


class PlanError(RuntimeError):
    """A generated flag or value is not in the engine's pinned table: a bug here, not bad input."""


# --- the pieces of a plan --------------------------------------------------------------------


@dataclass(frozen=True)
class PlanFlag:
    """One option on the command line; ``value`` is None for a switch."""

    flag: str
    value: str | None
    reason: str

    @property
    def tokens(self) -> list[str]:
        return [self.flag] if self.value is None else [self.flag, self.value]

    def to_json(self) -> dict[str, str | None]:
        return {"flag": self.flag, "value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class LeftOut:
    """An option deliberately not set: the engine's own choice is the better one."""

    flag: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"flag": self.flag, "reason": self.reason}


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the engine reads at start, with why the plan sets it."""

    name: str
    value: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "reason": self.reason}


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


def checked(engine: Engine, flag: str, value: str | None, reason: str) -> PlanFlag:
    """A PlanFlag after checking the spelling is the canonical, non-deprecated option in the
    pinned table, that it takes a value exactly when one is given, and the value is a listed
    choice where the engine enforces its choices."""
    info = lookup_flag(engine, flag)
    if info is None or info.flag != flag:
        raise PlanError(f"{engine} {engine_version(engine)} has no option {flag}")
    if info.deprecated:
        raise PlanError(f"{engine} {flag} is deprecated in {engine_version(engine)}")
    if info.takes_value != (value is not None):
        raise PlanError(f"{engine} {flag}: takes_value is {info.takes_value}, got {value!r}")
    enforced = info.choices if info.choices_enforced else None
    if value is not None and enforced is not None and value not in enforced:
        raise PlanError(f"{engine} {flag} has no choice {value!r}")
    return PlanFlag(flag, value, reason)


def as_spelled(engine: Engine, flag: str, value: str | None, reason: str) -> PlanFlag:
    """A flag as an official recipe spells it (``--config.key`` forms included), after checking
    the pinned table knows it and does not mark it deprecated."""
    info = lookup_flag(engine, flag)
    if info is None or info.deprecated:
        raise PlanError(f"{engine} {engine_version(engine)} has no current option {flag}")
    return PlanFlag(flag, value, reason)


# Flags whose values the Study decides (sizing, layout, context): a recipe's value for one of
# them becomes a note rather than a second, conflicting setting.
STUDY_DECIDED = frozenset(
    {
        "--kv-cache-dtype",
        "--gpu-memory-utilization",
        "--mem-fraction-static",
        "--max-num-batched-tokens",
        "--chunked-prefill-size",
        "--block-size",
        "--max-model-len",
        "--context-length",
        "--tensor-parallel-size",
        "--tp-size",
        "--data-parallel-size",
        "--dp-size",
        "--enable-expert-parallel",
        "--ep-size",
    }
)


def split_token(token: str) -> tuple[str, str | None]:
    flag, sep, value = token.partition("=")
    return flag, (value if sep else None)
