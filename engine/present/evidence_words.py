"""The family's evidence and the KV cache's accounting lines in words: one row per evidence
line (field, value, rule) and one line per layer group, for the pages, the CLI text and the
JSON (which keeps the English sentence and adds the decision's code and parameters)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.decision import Decision
from engine.i18n import DEFAULT_LANG, Lang
from engine.kv.sizing import KvSizing, LayerGroup
from engine.model.evidence import Evidence
from engine.text.words import say


@dataclass(frozen=True)
class EvidenceRow:
    field: str
    value: str
    rule: str


def _text(part: str | Decision, lang: Lang) -> str:
    return part if isinstance(part, str) else say(part, lang)


def evidence_rows(evidence: Iterable[Evidence], lang: Lang = DEFAULT_LANG) -> list[EvidenceRow]:
    return [
        EvidenceRow(_text(e.field, lang), _text(e.value, lang), say(e.rule, lang)) for e in evidence
    ]


def evidence_json(evidence: Iterable[Evidence]) -> list[dict[str, Any]]:
    """``{field, value, rule}`` in English, as before, plus the rule's ``code`` and ``params``."""
    return [
        {
            "field": _text(e.field, DEFAULT_LANG),
            "value": _text(e.value, DEFAULT_LANG),
            "rule": say(e.rule, DEFAULT_LANG),
            **e.rule.to_json(),
        }
        for e in evidence
    ]


def group_labels(kv: KvSizing, lang: Lang = DEFAULT_LANG) -> list[str]:
    """One label per layer group, unique within the sizing (two sliding groups with different
    head sizes exist: the second is numbered)."""
    labels = [say(g.label(), lang) for g in kv.groups]
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def formula(g: LayerGroup, lang: Lang = DEFAULT_LANG) -> str:
    """How a layer group's bytes are counted, worded."""
    return say(g.formula(), lang)


def formulas(kv: KvSizing, lang: Lang = DEFAULT_LANG) -> list[str]:
    return [formula(g, lang) for g in kv.groups]


def group_json(g: LayerGroup) -> dict[str, Any]:
    """The accounting line of a group for the JSON: the English formula, its code, params."""
    line = g.formula()
    return {
        "formula": say(line, DEFAULT_LANG),
        "code": line.code,
        "params": line.to_json()["params"],
    }
