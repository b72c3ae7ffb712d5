"""The layouts of the official launch commands and of the serving playbook's commands
(``data/reference_layouts.yaml``, written by ``python -m tools.reference_layouts``), and which
of a search's candidates they are for a model on given hardware."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import Field

from engine.launch.candidate import Candidate
from engine.launch.recipes import checkpoints_of
from engine.rules import Strict, load_data

Kind = Literal["official", "playbook"]


class ReferenceLayout(Strict):
    kind: Kind
    model: str = Field(min_length=1)
    engine: str
    gpu: str | None  # None: the source names no GPU
    gpus_per_node: int = Field(ge=1)
    nodes: int = Field(ge=1)
    tp: int = Field(ge=1)
    dp: int = Field(ge=1)
    pp: int = Field(ge=1)
    ep: bool | None  # None: a dense model
    replicas: int = Field(ge=1)
    source: str = Field(min_length=1)

    def names(self, c: Candidate) -> bool:
        s = c.layout.split
        return (s.tp, s.dp, s.pp, bool(s.ep), c.layout.replicas) == (
            self.tp,
            self.dp,
            self.pp,
            bool(self.ep),
            self.replicas,
        )


class _File(Strict):
    layouts: tuple[ReferenceLayout, ...]


@cache
def reference_layouts() -> tuple[ReferenceLayout, ...]:
    return load_data(_File, "reference_layouts.yaml").layouts


def references_for(
    model: str, gpu: str, gpus_per_node: int, nodes: int
) -> tuple[ReferenceLayout, ...]:
    """The official and playbook layouts written for ``model`` (or an official checkpoint of it,
    data/recipes.yaml) on this hardware (a row that names no GPU matches any GPU with its GPU
    count)."""
    names = {model.lower(), *(repo.lower() for _, repo, _ in checkpoints_of(model))}
    return tuple(
        r
        for r in reference_layouts()
        if r.model.lower() in names
        and (r.gpu is None or r.gpu == gpu)
        and (r.gpus_per_node, r.nodes) == (gpus_per_node, nodes)
    )


def marks(
    candidates: tuple[Candidate, ...], refs: tuple[ReferenceLayout, ...]
) -> dict[int, frozenset[Kind]]:
    """Per candidate (by index): which reference layouts it is."""
    out: dict[int, frozenset[Kind]] = {}
    for i, c in enumerate(candidates):
        kinds = frozenset(r.kind for r in refs if r.names(c))
        if kinds:
            out[i] = kinds
    return out
