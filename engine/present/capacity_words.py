"""The capacity and cost of a traffic in words: the CLI's text lines, the Markdown report's
section and the pages' rows (each figure with its formula), in the reader's language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.capacity import Capacity, Fleet, Option
from engine.capacity.compare import Column
from engine.capacity.shortlist import Shortlist
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.present.messages import layout_name
from engine.scenario import DEFAULT_CONTEXT, Scenario
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


# --- models × GPUs -------------------------------------------------------------------------------

COMPARE_COLUMNS = ("model", "gpu", "gpus", "nodes", "layout", "per_million", "ttft", "tpot",
                   "context")  # fmt: skip


def compare_rows(columns: tuple[Column, ...], lang: Lang = DEFAULT_LANG) -> list[dict[str, Any]]:
    """One row per model and GPU: the pick's GPUs, nodes, layout, $/M tokens, TTFT and TPOT at
    the load and the longest context a copy holds; a GPU that cannot serve the rate says why."""
    out: list[dict[str, Any]] = []
    for col in columns:
        if col.capacity is None:
            why = say(col.problem, lang) if col.problem else ""
            out.append({"model": col.model, "gpu": None, "why": why})
            continue
        for f in col.capacity.fleets:
            o = f.pick
            row: dict[str, Any] = {"model": col.model, "gpu": f.gpu}
            if o is None:
                row["why"] = say(f.problem, lang) if f.problem else ""
            else:
                sp = o.load.speed
                row |= {
                    "gpus": o.gpus,
                    "nodes": o.nodes,
                    "layout": layout_name(o.layout, lang),
                    "per_million": o.cost_per_million_tokens,
                    "ttft": sp.ttft_ms,
                    "tpot": sp.tpot_ms,
                    "context": o.longest_context,
                    "why": None,
                }
            out.append(row)
    return out


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if key == "per_million":
        return money(value, 3)
    if key in ("ttft", "tpot"):
        return f"{value:,.1f}" if key == "tpot" else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in [header, *rows]]  # fmt: skip


def compare_text(columns: tuple[Column, ...], s: Scenario, lang: Lang = DEFAULT_LANG) -> str:
    """The comparison as a terminal table, then each row that cannot serve and why."""
    rows = compare_rows(columns, lang)
    isl, osl = s.workload(s.context or DEFAULT_CONTEXT)
    head = t("capacity.heading", lang, rate=f"{s.request_rate or 0:,g}", isl=f"{isl:,}",
             osl=f"{osl:,}")  # fmt: skip
    header = [t(f"capacity.col.{k}", lang) for k in COMPARE_COLUMNS]
    served = [[_cell(k, r.get(k)) for k in COMPARE_COLUMNS] for r in rows if r.get("why") is None]
    lines = [head, *text_table(header, served)]
    for r in rows:
        if r.get("why"):
            lines.append(t("capacity.unserved", lang, model=r["model"], gpu=r["gpu"] or "—",
                           why=r["why"]))  # fmt: skip
    return "\n".join(lines)


# --- the shortlist -------------------------------------------------------------------------------


def checkpoint_words(kind: str, lang: Lang = DEFAULT_LANG) -> str:
    """A checkpoint kind as the reader reads it (a format keeps its name: FP8, NVFP4, AWQ)."""
    if kind in ("own", "online_fp8"):
        return t(f"shortlist.kind.{kind}", lang)
    return kind.upper().replace("_", "-")


def shortlist_text(sl: Shortlist, lang: Lang = DEFAULT_LANG) -> str:
    s = sl.scenario
    lines = [t("shortlist.heading", lang, n=s.total_gpus, gpu=s.gpu, users=s.users,
               context=f"{s.context or 0:,}")]  # fmt: skip
    header = [t(f"shortlist.col.{k}", lang) for k in ("model", "checkpoint", "repo", "layout",
                                                       "users", "tpot", "tps_user")]  # fmt: skip
    rows: list[list[str]] = []
    for e in sl.running:
        v = e.pick
        if v is None or v.study is None:
            continue
        sp = v.study.fit.speed
        rows.append([
            e.model, checkpoint_words(v.kind, lang), v.repo, layout_name(v.study.layout, lang),
            f"{v.users:,}", f"{sp.tpot_ms:,.1f}" if sp else "—",
            f"{sp.output_tokens_per_s_per_user:,.0f}" if sp else "—",
        ])  # fmt: skip
    lines += text_table(header, rows)
    lines.append(t("shortlist.gated", lang))
    lines += [f"  {e.model}: {say(e.problem, lang) if e.problem else ''}" for e in sl.gated]
    return "\n".join(lines)
