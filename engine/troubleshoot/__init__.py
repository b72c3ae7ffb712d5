"""Symptom → ranked causes, for the model, the GPU and the plan at hand, in the user's language.

Each symptom has a handful of known causes (``data/troubleshoot.yaml``). A small scoring function
rates each cause from the model facts and the GPU (a DSA model on an RTX 4090 has a different
first suspect than a dense GQA model on the same card), then from the plan the Study made
(``plan_facts``: EP on or off, experts sliced or whole, DP-attention, the memory fraction pinned,
the parsers the command sets), and names the facts that moved its score. ``troubleshoot``
returns the causes best first, each with the mechanism, how to confirm it, the fixes, the source
of the claim and why it ranks where it does. A cause whose fix would undo one of the plan's own
choices says what that costs, in the Study's figures, and ranks after every cause that does not.
Every text comes from the message catalogs (``data/i18n/<lang>.yaml``, keys ``troubleshoot.*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from engine import errors as E
from engine.decision import Code, Name
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.i18n import DEFAULT_LANG, LANGS, Lang, t
from engine.text.words import say
from engine.troubleshoot.cause_table import CauseRow, Table, troubleshoot_table
from engine.troubleshoot.facts import ModelFacts
from engine.troubleshoot.plan_facts import PLAN_FACTS, PlanFacts, plan_facts
from engine.troubleshoot.scoring import BASE, CONDITIONS, problems, score, undone

__all__ = ["SYMPTOMS", "Cause", "PlanFacts", "Symptom", "plan_facts", "symptoms", "troubleshoot"]

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
    # the plan's own choice its fix would undo (a plan fact) and what undoing it costs, worded
    undoes: str | None = None
    cost: str | None = None


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
# what the troubleshooter is asked about
SYMPTOM = Code("error.troubleshoot.symptom", "ids", "got")
FACTS = Code("error.troubleshoot.facts")


def _lang(lang: object) -> Lang:
    if lang not in LANGS:
        choices = tuple(Name(x) for x in LANGS)
        raise InputError("lang", E.ONE_OF_GOT(choices=choices, got=E.got(lang)))
    return lang


def _symptom_id(symptom: object) -> str:
    """The id of a symptom given by id or by its label in any language."""
    if isinstance(symptom, str):
        wanted = symptom.strip().casefold()
        for lang in LANGS:
            for s in symptoms(lang):
                if wanted in (s.id, s.label.casefold()):
                    return s.id
    ids = tuple(Name(s.id) for s in SYMPTOMS)
    raise InputError("symptom", SYMPTOM(ids=ids, got=E.got(symptom)))


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


def _holds(condition: str, f: ModelFacts, gpu: Gpu | None, plan: PlanFacts | None) -> bool:
    """A variant's condition: a fact of the plan the Study made, or a condition on the model
    and GPU."""
    if condition in PLAN_FACTS:
        return plan is not None and condition in plan.holding
    return CONDITIONS[condition](f, gpu)


def _text(row: CauseRow, name: str, f: ModelFacts, gpu: Gpu | None, lang: Lang,
          params: dict[str, Any], plan: PlanFacts | None) -> str:  # fmt: skip
    """The cause's text ``name`` (or the variant whose condition holds), filled in."""
    for condition, other in row.variants.get(name, {}).items():
        if _holds(condition, f, gpu, plan):
            name = other
            break
    return t(f"troubleshoot.cause.{row.id}.{name}", lang, **params)


def _reason(fact: str, lang: Lang, params: dict[str, Any]) -> str:
    key = "troubleshoot.score.base" if fact == BASE else f"troubleshoot.fact.{fact}"
    return t(key, lang, **params)


def _cause(
    row: CauseRow, f: ModelFacts, gpu: Gpu | None, lang: Lang, plan: PlanFacts | None
) -> Cause:
    params = _params(f, gpu)
    rated = score(row, f, gpu, plan)
    undoes = undone(row, plan)
    cost = plan.costs.get(undoes) if plan is not None and undoes is not None else None
    reasons = tuple((_reason(fact, lang, params), move) for fact, move in rated.moves)
    return Cause(
        id=row.id,
        title=_text(row, "title", f, gpu, lang, params, plan),
        why=_text(row, "why", f, gpu, lang, params, plan),
        check=_text(row, "check", f, gpu, lang, params, plan),
        fixes=tuple(_text(row, fix.key, f, gpu, lang, params, plan) for fix in row.fixes),
        score=rated.value,
        score_reasons=reasons,
        facts=tuple(fact for fact, _ in rated.moves[1:]),
        source=row.source,
        undoes=undoes,
        cost=say(cost, lang) if cost is not None else None,
    )


def troubleshoot(
    symptom: str,
    facts: ModelFacts,
    gpu: Gpu | None,
    lang: str = DEFAULT_LANG,
    plan: PlanFacts | None = None,
) -> list[Cause]:
    """The known causes of ``symptom`` (an id or label from ``SYMPTOMS``), most likely first
    for this model, GPU and plan (``plan_facts`` of the Study; None: the model and GPU alone),
    with their texts in ``lang``. A cause whose fix undoes the plan's own choice ranks after
    every one that does not."""
    if not isinstance(facts, ModelFacts):
        raise InputError("model", FACTS())
    language = _lang(lang)
    row = _table().symptom(_symptom_id(symptom))
    causes = [_cause(c, facts, gpu, language, plan) for c in row.causes]
    return sorted(causes, key=lambda c: (c.undoes is not None, -c.score))
