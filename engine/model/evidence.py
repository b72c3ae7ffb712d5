"""One line of the family verdict's evidence: the config field read, the value it holds and the
rule that turned it into a verdict, the rule as a decision (a code and its parameters) that
``engine/text/words.py`` words in each language."""

from __future__ import annotations

from dataclasses import dataclass

from engine.decision import Code, Decision, Name

# the field and value columns of a row that is not one config field (counts of layer kinds)
LAYER_KINDS = Code("family.field.layer_kinds")
PRESENT = Code("family.value.present")
KIND_COUNTS = Code("family.value.kind_counts", "linear", "attention")


@dataclass(frozen=True)
class Evidence:
    """``field`` and ``value`` are as the config spells them (a config field, its value,
    shortened), or a decision where the row names no single field; ``rule`` says why it
    matters."""

    field: str | Decision
    value: str | Decision
    rule: Decision


def short(v: object, limit: int = 60) -> str:
    """A config value as written, cut at ``limit`` characters."""
    s = "".join(v) if isinstance(v, str) else str(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def name(v: object) -> Name:
    """A config value as a parameter (shown as written, in every language)."""
    return Name(short(v))
