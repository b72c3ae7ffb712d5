"""The troubleshooting table, ``data/troubleshoot.yaml``: symptoms, their causes, how each cause
is rated and fixed, and the named GPU-generation and architecture sets the ratings read."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.engines import Engine
from engine.rules import DATA_DIR, load_data

TABLE_YAML = DATA_DIR / "troubleshoot.yaml"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FixRow(_Frozen):
    text: str = Field(min_length=1)  # troubleshoot.cause.<cause>.fix.<text>
    flags: dict[Engine, tuple[str, ...]] = {}  # the flags the text names, per engine

    @property
    def key(self) -> str:
        return f"fix.{self.text}"


class CauseRow(_Frozen):
    id: str = Field(min_length=1)
    rate: str = Field(min_length=1)  # a scoring function in scoring.SCORERS
    base: float = Field(ge=0, le=1)
    adjust: dict[str, float] = {}  # fact -> move while it holds
    fixes: tuple[FixRow, ...] = Field(min_length=1)
    variants: dict[str, dict[str, str]] = {}  # text -> {condition: other text}
    source: str = Field(min_length=1)

    @property
    def text_keys(self) -> tuple[str, ...]:
        """The cause's own texts (``title``, ``why``, ``check``, ``fix.<text>``)."""
        return ("title", "why", "check", *(fix.key for fix in self.fixes))

    @model_validator(mode="after")
    def _variants_replace_own_texts(self) -> CauseRow:
        for text in self.variants:
            if text not in self.text_keys:
                raise ValueError(f"{self.id}: variant of {text!r}, which is not one of its texts")
        return self


class SymptomRow(_Frozen):
    id: str = Field(min_length=1)
    causes: tuple[CauseRow, ...] = Field(min_length=1)


class GenerationSet(_Frozen):
    generations: frozenset[str] = Field(min_length=1)
    source: str = Field(min_length=1)


class ArchitectureSet(_Frozen):
    architectures: frozenset[str] = Field(min_length=1)
    source: str = Field(min_length=1)


class Table(_Frozen):
    generation_sets: dict[str, GenerationSet]
    architecture_sets: dict[str, ArchitectureSet]
    symptoms: tuple[SymptomRow, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Table:
        for kind, ids in (
            ("symptom", [s.id for s in self.symptoms]),
            ("cause", [c.id for s in self.symptoms for c in s.causes]),
        ):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            if twice:
                raise ValueError(f"{kind} ids must be unique; repeated: {', '.join(twice)}")
        return self

    def symptom(self, symptom_id: str) -> SymptomRow:
        return next(s for s in self.symptoms if s.id == symptom_id)

    @property
    def causes(self) -> tuple[CauseRow, ...]:
        return tuple(c for s in self.symptoms for c in s.causes)


@cache
def troubleshoot_table() -> Table:
    """``data/troubleshoot.yaml``, read and validated once."""
    return load_data(Table, TABLE_YAML.name)
