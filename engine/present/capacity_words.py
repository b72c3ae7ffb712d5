"""The capacity and cost of a traffic in words: the CLI's text lines, the Markdown report's
section and the pages' rows (each figure with its formula), in the reader's language."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.capacity import Capacity, Fleet, Option, Price
from engine.capacity.compare import Column
from engine.capacity.shortlist import Shortlist
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.present.charts_data import Shown
from engine.present.messages import layout_name
from engine.reuse import Reuse
from engine.scenario import DEFAULT_CONTEXT, Scenario
from engine.study import Study
from engine.text.units import gib
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


def given_line(o: Option, lang: Lang = DEFAULT_LANG) -> str:
    """The scenario's own GPUs at the rate: what they hold and the share the rate uses."""
    key = "capacity.given" if o.utilization <= 1 else "capacity.given_over"
    return t(
        key,
        lang,
        gpus=o.gpus,
        gpu=o.gpu,
        layout=layout_name(o.layout, lang),
        replicas=o.replicas,
        rate=f"{o.replicas * o.requests_per_s_per_replica:,.2f}",
        utilization=percent(o.utilization),
        concurrency=f"{o.load.concurrency * o.replicas:,.1f}",
    )


def capacity_lines(
    cap: Capacity, isl: int, osl: int, lang: Lang = DEFAULT_LANG, mine: Option | None = None
) -> list[str]:
    """The capacity as the CLI's text: a heading, the scenario's own GPUs at the rate, one line
    per GPU compared, the cheapest."""
    lines = [t("capacity.heading", lang, rate=f"{cap.rate:,g}", isl=f"{isl:,}", osl=f"{osl:,}")]
    if mine is not None:
        lines.append("  " + given_line(mine, lang))
    lines += ["  " + fleet_line(f, lang) for f in cap.fleets]
    best = cap.best
    if best is not None and len(cap.fleets) > 1:
        lines.append("  " + t("capacity.best", lang, gpu=best.gpu))
    return lines


# --- models × GPUs -------------------------------------------------------------------------------

COMPARE_COLUMNS = ("model", "gpu", "gpus", "nodes", "layout", "per_million", "ttft",
                   "ttft_likely", "tpot", "tpot_likely", "context")  # fmt: skip


def likely(bounds: tuple[float, float], fmt: str, lang: Lang = DEFAULT_LANG) -> str:
    """Where the measurement likely falls, as the speed pages word it ("likely 21–33")."""
    return t("speed.likely", lang, low=format(bounds[0], fmt), high=format(bounds[1], fmt))


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
                    "ttft_likely": likely(sp.ttft_ms_range, ",.0f", lang),
                    "tpot": sp.tpot_ms,
                    "tpot_likely": likely(sp.tpot_ms_range, ",.1f", lang),
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


SHORTLIST_COLUMNS = ("model", "checkpoint", "users", "tps_user", "tpot", "layout", "repo")


def shortlist_rows(sl: Shortlist, lang: Lang = DEFAULT_LANG) -> list[dict[str, Any]]:
    """Each model that runs, with its pick: the checkpoint, what a launch loads, the layout,
    the users that fit and the speed at the asked load."""
    out: list[dict[str, Any]] = []
    for e in sl.running:
        v = e.pick
        if v is None or v.study is None:
            continue
        sp = v.study.fit.speed
        out.append(
            {
                "model": e.model,
                "checkpoint": checkpoint_words(v.kind, lang),
                "repo": v.repo,
                "layout": layout_name(v.study.layout, lang),
                "users": v.users,
                "tpot": sp.tpot_ms if sp else None,
                "tps_user": sp.output_tokens_per_s_per_user if sp else None,
            }
        )
    return out


def gated_rows(sl: Shortlist, lang: Lang = DEFAULT_LANG) -> list[dict[str, Any]]:
    return [{"model": e.model, "why": say(e.problem, lang) if e.problem else ""} for e in sl.gated]


def shortlist_text(sl: Shortlist, lang: Lang = DEFAULT_LANG) -> str:
    s = sl.scenario
    lines = [t("shortlist.heading", lang, n=s.total_gpus, gpu=s.gpu, users=s.users,
               context=f"{s.context or 0:,}")]  # fmt: skip
    header = [t(f"shortlist.col.{k}", lang) for k in SHORTLIST_COLUMNS]
    cells = {"tpot": lambda v: f"{v:,.1f}", "tps_user": lambda v: f"{v:,.0f}",
             "users": lambda v: f"{v:,}"}  # fmt: skip
    rows = [
        [("—" if r[k] is None else cells.get(k, str)(r[k])) for k in SHORTLIST_COLUMNS]
        for r in shortlist_rows(sl, lang)
    ]
    lines += text_table(header, rows)
    lines.append(t("shortlist.gated", lang))
    lines += [f"  {r['model']}: {r['why']}" for r in gated_rows(sl, lang)]
    return "\n".join(lines)


# --- cost without a traffic: the Study's own GPUs at the asked load ------------------------------


@dataclass(frozen=True)
class LayoutCost:
    """One candidate layout of the Study at its load: what an hour costs and a million tokens."""

    layout: str
    pick: bool
    gpus: int
    tokens_per_s: float  # output tokens/s over every copy
    tokens_per_s_per_user: float
    cost_per_hour: float
    per_million_output: float
    per_million: float
    formula: str


def layout_costs(st: Study, price: Price | None, lang: Lang = DEFAULT_LANG) -> list[LayoutCost]:
    """$/hour and $/M tokens of every candidate that has a speed, at the Study's asked users:
    the hour's price over the output tokens an hour brings (input + output tokens for $/M
    tokens, in the proportion of the workload)."""
    if price is None:
        return []
    isl, osl = st.scenario.workload(st.context)
    out: list[LayoutCost] = []
    for c in st.search.candidates:
        sp = c.speed
        if sp is None or sp.output_tokens_per_s <= 0:
            continue
        hourly = c.layout.gpus * price.usd_per_hour
        per_output = hourly / (sp.output_tokens_per_s * 3600) * 1e6
        per_all = per_output * osl / (isl + osl)
        formula = (
            f"{c.layout.gpus} × {price.usd_per_hour:g} $/h = {hourly:.4g} $/h ; "
            f"{hourly:.4g} / ({sp.output_tokens_per_s:,.1f} tok/s × 3600) × 10^6 = "
            f"{per_output:.4g} $/M output ; × {osl} / ({isl} + {osl}) = {per_all:.4g} $/M"
        )
        out.append(
            LayoutCost(layout_name(c.layout, lang), c is st.fit, c.layout.gpus,
                       sp.output_tokens_per_s, sp.output_tokens_per_s_per_user, hourly,
                       per_output, per_all, formula)
        )  # fmt: skip
    return out


# --- the chart: $/M tokens against tokens/s per user ---------------------------------------------


@dataclass(frozen=True)
class CostSeries:
    """One GPU's options as chart points (the pick first)."""

    gpu: str
    layouts: tuple[str, ...]
    per_user: tuple[float, ...]
    per_million: tuple[float, ...]
    gpus: tuple[int, ...]


def cost_series(cap: Capacity, lang: Lang = DEFAULT_LANG) -> list[CostSeries]:
    """Every option of every GPU that has a cost, one series per GPU."""
    out: list[CostSeries] = []
    for f in cap.fleets:
        opts = [o for o in f.options if o.cost_per_million_tokens is not None]
        if not opts:
            continue
        out.append(
            CostSeries(
                f.gpu,
                tuple(layout_name(o.layout, lang) for o in opts),
                tuple(o.load.speed.output_tokens_per_s_per_user for o in opts),
                tuple(o.cost_per_million_tokens or 0.0 for o in opts),
                tuple(o.gpus for o in opts),
            )
        )
    return out


# --- prefix reuse -------------------------------------------------------------------------------


def reuse_shown(r: Reuse, kv_bytes_per_token: int, lang: Lang = DEFAULT_LANG) -> list[Shown]:
    """What a request finds cached, each figure with its formula: the hit rate, the tokens not
    prefilled (from the GPU's cache and from the CPU tier), where a hit lands, and the KV a
    system prompt takes once per instance."""
    shared = r.shared_tokens * kv_bytes_per_token
    return [
        Shown(t("reuse.hit_rate", lang), percent(r.hit_rate), r.hit_rate, r.formula),
        Shown(t("reuse.gpu", lang), f"{r.gpu_tokens:,.0f}", r.gpu_tokens,
              f"{r.affinity:.3g} × {r.resident:.3g} × {r.cacheable:,} = {r.gpu_tokens:,.0f}"),
        Shown(t("reuse.host", lang), f"{r.host_tokens:,.0f}", r.host_tokens,
              f"{r.affinity:.3g} × {r.in_host:.3g} × {r.cacheable:,} = {r.host_tokens:,.0f}"),
        Shown(t("reuse.unit", lang), f"{r.unit:,}", r.unit,
              f"floor({r.repeated:,} / {r.unit}) × {r.unit} = {r.cacheable:,}"),
        Shown(t("reuse.shared", lang), gib(shared), shared,
              f"{r.shared_tokens:,} × {kv_bytes_per_token:,} B = {shared:,} B"),
    ]  # fmt: skip
