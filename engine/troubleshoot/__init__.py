"""Symptom → ranked causes, for the model and GPU at hand, in the user's language.

Each symptom has a handful of known causes (``data/troubleshoot.yaml``). A small scoring function
rates each cause from the model facts and the GPU (a DSA model on an RTX 4090 has a different
first suspect than a dense GQA model on the same card) and names the facts that moved its score;
``troubleshoot`` returns the causes best first, each with the mechanism, how to confirm it, the
fixes, the source of the claim and why it ranks where it does. Every text comes from the message
catalogs (``data/i18n/<lang>.yaml``, keys ``troubleshoot.*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.i18n import DEFAULT_LANG, LANGS, Lang, t
from engine.troubleshoot.cause_table import CauseRow, Table, troubleshoot_table
from engine.troubleshoot.facts import ModelFacts
from engine.troubleshoot.scoring import BASE, CONDITIONS, problems, score

__all__ = ["SYMPTOMS", "Cause", "Symptom", "symptoms", "troubleshoot"]

# A parser name the facts lack, as it stands in a command for the user to fill in.
UNNAMED = "NAME"


@dataclass(frozen=True)
class Symptom:
    id: str
    label: str


@dataclass(frozen=True)
class Cause:
    id: str
    title: str
    why: str  # the mechanism
    check: str  # how to confirm it on the running system
    fixes: tuple[str, ...]
    score: float  # 0-1: how well it fits this model and GPU
    # Why it ranks here: (text, amount) for the base, then for every fact that moved the score;
    # the amounts add up to ``score`` before clamping to 0-1.
    score_reasons: tuple[tuple[str, float], ...]
    facts: tuple[str, ...]  # the ids of those facts, in the same order after the base
    source: str


@cache
def _table() -> Table:
    table = troubleshoot_table()
    found = problems(table)
    if found:
        raise ValueError("data/troubleshoot.yaml: " + "; ".join(found))
    return table


@cache
def symptoms(lang: Lang = DEFAULT_LANG) -> tuple[Symptom, ...]:
    """Every symptom in the app's order, labelled in ``lang``."""
    return tuple(Symptom(s.id, t(f"troubleshoot.symptom.{s.id}", lang)) for s in _table().symptoms)


SYMPTOMS: tuple[Symptom, ...] = symptoms()


def _lang(lang: object) -> Lang:
    if lang not in LANGS:
        raise InputError("lang", f"one of {', '.join(LANGS)}, got {lang!r}")
    return lang


def _symptom_id(symptom: object) -> str:
    """The id of a symptom given by id or by its label in any language."""
    if isinstance(symptom, str):
        wanted = symptom.strip().casefold()
        for lang in LANGS:
            for s in symptoms(lang):
                if wanted in (s.id, s.label.casefold()):
                    return s.id
    ids = ", ".join(s.id for s in SYMPTOMS)
    raise InputError("symptom", f"one of {ids} (or its label), got {symptom!r}")


def _params(f: ModelFacts, gpu: Gpu | None) -> dict[str, Any]:
    """The named parameters every troubleshooting text may use."""
    params: dict[str, Any] = {
        "family": f.attention_family,
        "heads": f.num_attention_heads,
        "kv_heads": f.num_kv_heads,
        "tool_parser_vllm": f.tool_call_parser.vllm or UNNAMED,
        "tool_parser_sglang": f.tool_call_parser.sglang or UNNAMED,
        "reasoning_parser_vllm": f.reasoning_parser.vllm or UNNAMED,
        "reasoning_parser_sglang": f.reasoning_parser.sglang or UNNAMED,
    }
    if f.attention_block_tokens is not None:
        params["block_tokens"] = f.attention_block_tokens
    if gpu is not None:
        params.update(gpu=gpu.key, arch=gpu.arch, generation=gpu.generation)
    return params


def _text(
    row: CauseRow, name: str, f: ModelFacts, gpu: Gpu | None, lang: Lang, params: dict[str, Any]
) -> str:
    """The cause's text ``name`` (or the variant whose condition holds), filled in."""
    for condition, other in row.variants.get(name, {}).items():
        if CONDITIONS[condition](f, gpu):
            name = other
            break
    return t(f"troubleshoot.cause.{row.id}.{name}", lang, **params)


def _reason(fact: str, lang: Lang, params: dict[str, Any]) -> str:
    key = "troubleshoot.score.base" if fact == BASE else f"troubleshoot.fact.{fact}"
    return t(key, lang, **params)


def _cause(row: CauseRow, f: ModelFacts, gpu: Gpu | None, lang: Lang) -> Cause:
    params = _params(f, gpu)
    rated = score(row, f, gpu)
    reasons = tuple((_reason(fact, lang, params), move) for fact, move in rated.moves)
    return Cause(
        id=row.id,
        title=_text(row, "title", f, gpu, lang, params),
        why=_text(row, "why", f, gpu, lang, params),
        check=_text(row, "check", f, gpu, lang, params),
        fixes=tuple(_text(row, fix.key, f, gpu, lang, params) for fix in row.fixes),
        score=rated.value,
        score_reasons=reasons,
        facts=tuple(fact for fact, _ in rated.moves[1:]),
        source=row.source,
    )


def troubleshoot(
    symptom: str, facts: ModelFacts, gpu: Gpu | None, lang: str = DEFAULT_LANG
) -> list[Cause]:
    """The known causes of ``symptom`` (an id or label from ``SYMPTOMS``), most likely first
    for this model and GPU, with their texts in ``lang``."""
    if not isinstance(facts, ModelFacts):
        raise InputError("model", "the model's facts (ModelFacts)")
    language = _lang(lang)
    row = _table().symptom(_symptom_id(symptom))
    causes = [_cause(c, facts, gpu, language) for c in row.causes]
    return sorted(causes, key=lambda c: -c.score)
