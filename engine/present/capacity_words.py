"""The capacity and cost of a traffic in words: the CLI's text lines, the Markdown report's
section and the pages' rows (each figure with its formula), in the reader's language."""

from __future__ import annotations

from dataclasses import dataclass

from engine.capacity import Capacity, Fleet, Option
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.present.messages import layout_name
from engine.text.words import say


def money(usd: float | None, digits: int = 2) -> str:
    return "—" if usd is None else f"${usd:,.{digits}f}"


def percent(share: float) -> str:
    return f"{share * 100:.0f} %"


@dataclass(frozen=True)
class Row:
    """One option of one GPU as a table row (numbers kept as numbers for sorting)."""

    gpu: str
    layout: str
    pick: bool
    gpus: int
    nodes: int
    replicas: int
    per_replica: float  # requests/s one replica holds
    utilization: float
    ttft_ms: float
    tpot_ms: float
    tokens_per_s_per_user: float
    cost_per_hour: float | None
    per_million: float | None
    per_million_output: float | None
    limit: str
    formula: str


def _row(o: Option, pick: bool, lang: Lang) -> Row:
    sp = o.load.speed
    return Row(
        gpu=o.gpu,
        layout=layout_name(o.layout, lang),
        pick=pick,
        gpus=o.gpus,
        nodes=o.nodes,
        replicas=o.replicas,
        per_replica=o.requests_per_s_per_replica,
        utilization=o.utilization,
        ttft_ms=sp.ttft_ms,
        tpot_ms=sp.tpot_ms,
        tokens_per_s_per_user=sp.output_tokens_per_s_per_user,
        cost_per_hour=o.cost_per_hour,
        per_million=o.cost_per_million_tokens,
        per_million_output=o.cost_per_million_output_tokens,
        limit=say(o.top.limit, lang),
        formula=o.formula,
    )


def rows(cap: Capacity, lang: Lang = DEFAULT_LANG, every: bool = False) -> list[Row]:
    """Each GPU's pick (and with ``every`` each of its other options), the GPUs in order."""
    out: list[Row] = []
    for f in cap.fleets:
        options = f.options if every else f.options[:1]
        out += [_row(o, i == 0, lang) for i, o in enumerate(options)]
    return out


def fleet_line(f: Fleet, lang: Lang = DEFAULT_LANG) -> str:
    """One GPU's answer in a sentence: the GPUs, nodes and layout, the headroom, the speed at
    the load and the cost; or why no count of it serves the rate."""
    o = f.pick
    if o is None:
        why = say(f.problem, lang) if f.problem else ""
        return t("capacity.none", lang, gpu=f.gpu, why=why)
    sp = o.load.speed
    cost = say(f.price_missing, lang)
    if o.cost_per_hour is not None:
        cost = t(
            "capacity.cost",
            lang,
            hour=money(o.cost_per_hour),
            million=money(o.cost_per_million_tokens, 3),
            output=money(o.cost_per_million_output_tokens, 3),
        )
    return t(
        "capacity.line",
        lang,
        gpu=f.gpu,
        gpus=o.gpus,
        nodes=o.nodes,
        layout=layout_name(o.layout, lang),
        replicas=o.replicas,
        rate=f"{o.requests_per_s_per_replica:,.2f}",
        limit=say(o.top.limit, lang),
        utilization=percent(o.utilization),
        headroom=percent(1 - o.utilization),
        ttft=f"{sp.ttft_ms:,.0f}",
        tpot=f"{sp.tpot_ms:,.1f}",
        cost=cost,
    )


def capacity_lines(cap: Capacity, isl: int, osl: int, lang: Lang = DEFAULT_LANG) -> list[str]:
    """The capacity as the CLI's text: a heading, one line per GPU, the cheapest."""
    lines = [t("capacity.heading", lang, rate=f"{cap.rate:,g}", isl=f"{isl:,}", osl=f"{osl:,}")]
    lines += ["  " + fleet_line(f, lang) for f in cap.fleets]
    best = cap.best
    if best is not None and len(cap.fleets) > 1:
        lines.append("  " + t("capacity.best", lang, gpu=best.gpu))
    return lines
