"""Plotly figures from engine series. Layout only: every value plotted comes in computed.

One template for every chart (fonts with Hangul, one colour cycle, light grid), log axes where
the values span decades, tick labels thinned so they never overlap, and a caption under each
chart that says what to read from it (``draw``).

Figures are plain plotly dicts (``{"data": [...], "layout": {...}}``), built in one pass:
plotly's object API validates on every ``update_*`` call, which cost a page more time than
the rest of its script. ``st.plotly_chart`` validates a dict it is given on every rerun (about
3 ms a chart); ``draw`` hands it a figure validated once per distinct chart instead.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import streamlit as st

from engine.present.bench_report import BenchSeries
from engine.present.capacity_words import CostSeries
from engine.present.charts_data import (
    LayerStrip,
    MemoryBreakdown,
    Series,
    SpeedCurve,
    context_ticks,
    in_gib,
    tokens,
)
from engine.present.learn import GrowthSeries, Intensity
from engine.text.safe import plain
from ui.lang import T

Figure = dict[str, Any]  # a plotly figure as a dict: "data" (traces) and "layout"
FONT = "'Source Sans 3', 'Source Sans Pro', 'Noto Sans CJK KR', 'Noto Sans KR', sans-serif"
COLORWAY = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#17becf")
_AXIS = {"gridcolor": "#e6e6e6", "zeroline": False, "linecolor": "#999", "automargin": True}
TEMPLATE: dict[str, Any] = {
    "layout": {
        "font": {"family": FONT, "size": 13, "color": "#31333f"},
        "colorway": list(COLORWAY),
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "hoverlabel": {"font": {"family": FONT}},
        "separators": ".,",
    }
}


@lru_cache(maxsize=256)
def _validated(spec: str) -> Any:
    """The plotly Figure of a chart's JSON, validated once: the same chart (same study, same
    slider values) in any session is not validated again."""
    from plotly.graph_objs import Figure as PlotlyFigure

    return PlotlyFigure(json.loads(spec))


def draw(fig: Figure, caption: str, key: str | None = None, titled: bool = True) -> None:
    """A chart with the app's template (not Streamlit's theme, so every chart looks the same):
    its title as a heading above it (a plotly title cannot wrap, and two charts side by side
    would run their titles together), then the caption that says what to read from it.
    ``titled=False``: the page's own heading above already names the chart."""
    title = fig["layout"].get("meta", {}).get("title")
    if title and titled:
        st.markdown(f"**{title}**")
    figure = _validated(json.dumps(fig, sort_keys=True))
    st.plotly_chart(figure, width="stretch", theme=None, key=key, config={"displaylogo": False})
    st.caption(caption)


# keyed by the label's decision code, so a layer keeps its colour in every language
PALETTE = {
    "mixer.full": "#1f77b4",
    "mixer.sliding": "#9ecae1",
    "mixer.chunked": "#6baed6",
    "mixer.mla": "#2ca02c",
    "mixer.dsa": "#98df8a",
    "mixer.compressed": "#17becf",
    "mixer.gdn": "#ff7f0e",
    "mixer.mamba2": "#ffbb78",
    "mixer.mamba1": "#e6550d",
    "mixer.lightning": "#fdae6b",
    "mixer.none": "#d9d9d9",
    "layer.ffn.dense": "#9467bd",
    "layer.ffn.moe": "#d62728",
    "layer.ffn.moe_dense": "#e377c2",
    "layer.ffn.none": "#eeeeee",
}
FALLBACK = ("#8c564b", "#7f7f7f", "#bcbd22", "#393b79")
ROWS = ("mixer", "FFN")


def _label(text: str) -> str:
    """A series name as plotly text: plotly renders a few HTML tags (``<a href>`` among them) in
    names and hover text, so ``<``, ``>`` and ``&`` are escaped and control characters shown."""
    return html.escape(plain(str(text)), quote=False)


def _figure(title: str, height: int = 420) -> Figure:
    """An empty figure with the template, the title kept for ``draw`` (shown above the chart),
    and the legend in a row above the plot, where it cannot collide with the x axis."""
    return {
        "data": [],
        "layout": {
            "template": TEMPLATE,
            "meta": {"title": title},
            "height": height,
            "margin": {"l": 10, "r": 20, "t": 10, "b": 10},
            "legend": {
                "orientation": "h",
                "yanchor": "bottom",
                "y": 1.02,
                "x": 0,
                "xanchor": "left",
            },
            "xaxis": {},
            "yaxis": {},
            "shapes": [],
        },
    }


def _vline(fig: Figure, x: float) -> None:
    """A dotted vertical line at ``x`` over the whole plot height (plotly's ``add_vline``)."""
    fig["layout"]["shapes"].append(
        {
            "type": "line",
            "xref": "x",
            "yref": "y domain",
            "x0": x,
            "x1": x,
            "y0": 0,
            "y1": 1,
            "line": {"dash": "dot"},
        }
    )


def _log_y(fig: Figure, title: str) -> None:
    """A log y axis labelled at powers of ten only (1, 10, 100, 1,000: no 2 / 5 in between)."""
    fig["layout"]["yaxis"].update(
        type="log", title={"text": title}, dtick=1, tickformat=",d", minor={"showgrid": True}
    )


def _context_axis(fig: Figure, xs: Sequence[int]) -> None:
    """Context on a log axis, labelled K / M, no two labels close enough to overlap."""
    ticks = context_ticks(xs)
    pad = 0.06  # in decades: room for the first and last labels inside the plot
    fig["layout"]["xaxis"].update(
        type="log",
        title={"text": T("chart.axis.context")},
        tickvals=list(ticks),
        ticktext=[tokens(x) for x in ticks],
        range=[math.log10(min(xs)) - pad, math.log10(max(xs)) + pad],
    )


def layer_strip(strip: LayerStrip) -> Figure:
    """Each layer is a cell: the top row its token mixer, the bottom row its FFN."""
    fig = _figure(T("chart.strip.title"), height=280)
    extra = iter(FALLBACK * 4)
    rows = ((strip.mixers, strip.mixer_keys), (strip.ffns, strip.ffn_keys))
    for row_i, (row_name, (labels, keys)) in enumerate(zip(ROWS, rows, strict=True)):
        key_of = dict(zip(labels, keys, strict=True))
        for label in dict.fromkeys(labels):
            xs = [i for i, lab in enumerate(labels) if lab == label]
            fig["data"].append(
                {
                    "type": "bar",
                    "x": xs,
                    "y": [0.9] * len(xs),
                    "base": [1 - row_i] * len(xs),
                    "width": 0.92,
                    "name": _label(label),
                    "legendgroup": row_name,
                    "marker": {"color": PALETTE.get(key_of[label]) or next(extra)},
                    "hovertemplate": f"layer %{{x}}: {_label(label)}<extra>{_label(row_name)}"
                    "</extra>",
                }
            )
    layout = fig["layout"]
    layout["yaxis"].update(
        tickvals=[1.45, 0.45],
        ticktext=[T("chart.strip.mixer"), T("chart.strip.ffn")],
        range=[-0.1, 2.0],
        fixedrange=True,
        showgrid=False,
    )
    layout["xaxis"].update(
        title={"text": T("chart.strip.axis")}, range=[-0.6, len(strip.mixers) - 0.4]
    )
    layout.update(barmode="overlay", bargap=0)
    return fig


def _gib_lines(
    fig: Figure, series: Sequence[Series | GrowthSeries], context: int, digits: int, **trace: str
) -> Figure:
    """One line per series, bytes drawn in GiB, on the context axis with the chosen context
    marked (no annotation text: on a log axis plotly would place it at log10 coordinates)."""
    for s in series:
        fig["data"].append(
            {
                "type": "scatter",
                "x": list(s.x),
                "y": [in_gib(y) for y in s.y],
                "name": _label(s.name),
                "customdata": [[f"{int(y):,}"] for y in s.y],
                "hovertemplate": f"%{{y:,.{digits}f}} GiB (%{{customdata[0]}} B)<extra>"
                f"{_label(s.name)}</extra>",
                **trace,
            }
        )
    if series:
        _context_axis(fig, series[0].x)
    _vline(fig, context)
    return fig


def kv_stack(series: Sequence[Series], context: int) -> Figure:
    """Per-request KV on one GPU against context, stacked by layer group."""
    fig = _figure(T("chart.kv.title"))
    _gib_lines(fig, series, context, 3, stackgroup="kv", mode="lines")
    fig["layout"]["yaxis"]["title"] = {"text": T("chart.kv.axis")}
    return fig


def users_fit(series: Sequence[Series], context: int, users: int) -> Figure:
    """Users that fit against context on log-log axes (16 users and 1,200 both readable); the
    users asked are a dashed line of their own, named in the legend."""
    fig = _figure(T("chart.users.title"))
    unit = T("chart.users.unit")
    for s in series:
        fig["data"].append(
            {
                "type": "scatter",
                "x": list(s.x),
                "y": [y if y > 0 else None for y in s.y],  # none fit: a gap, not a log of 0
                "name": _label(s.name),
                "mode": "lines+markers",
                "hovertemplate": f"%{{y:,.0f}} {unit}<extra>{_label(s.name)}</extra>",
            }
        )
    if series:
        xs = series[0].x
        _context_axis(fig, xs)
        fig["data"].append(
            {
                "type": "scatter",
                "x": [min(xs), max(xs)],
                "y": [users, users],
                "name": T("chart.users.asked", users=f"{users:,}"),
                "mode": "lines",
                "line": {"dash": "dash", "color": "#555"},
                "hoverinfo": "skip",
            }
        )
    _vline(fig, context)
    _log_y(fig, T("chart.users.axis"))
    return fig


def memory(b: MemoryBreakdown) -> Figure:
    """The busiest GPU's memory as one stacked bar, in GiB (exact bytes on hover)."""
    title = T("chart.memory.title", total=f"{in_gib(b.memory_per_gpu):,.2f}")
    fig = _figure(title, height=250)
    colors = ["#9467bd", "#1f77b4", "#c6dbef", "#fdd0a2", "#d9d9d9"]
    where = T("chart.memory.gpu")
    for seg, color in zip(b.segments, colors * 2, strict=False):
        fig["data"].append(
            {
                "type": "bar",
                "y": [where],
                "x": [in_gib(seg.bytes)],
                "name": _label(seg.name),
                "orientation": "h",
                "marker": {"color": color},
                "customdata": [[f"{seg.bytes:,}"]],
                "hovertemplate": "%{x:,.2f} GiB (%{customdata[0]} B)<extra>" + _label(seg.name)
                + "</extra>",
            }
        )  # fmt: skip
    layout = fig["layout"]
    layout["barmode"] = "stack"
    layout["xaxis"].update(range=[0, in_gib(b.total)], title={"text": T("chart.memory.axis")})
    layout["yaxis"]["showticklabels"] = False
    if b.overflow:  # the weights run past the GPU: mark where its usable memory ends
        x = in_gib(b.usable_per_gpu)
        layout["shapes"] = [
            {"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1, "yref": "paper",
             "line": {"color": "#d62728", "width": 2, "dash": "dash"}}
        ]  # fmt: skip
        layout["annotations"] = [
            {"x": x, "y": 1, "yref": "paper", "showarrow": False, "xanchor": "left",
             "text": html.escape(T("chart.memory.usable", times=f"{b.overflow:,.1f}"))}
        ]  # fmt: skip
    return fig


def kv_growth(series: Sequence[GrowthSeries], context: int) -> Figure:
    fig = _gib_lines(_figure(T("chart.growth.title")), series, context, 2, mode="lines+markers")
    fig["layout"]["yaxis"].update(type="log", title={"text": T("chart.growth.axis")}, dtick=1)
    return fig


def intensity(i: Intensity) -> Figure:
    fig = _figure(T("chart.intensity.title"), height=400)
    xs = [p.tokens for p in (*i.decode, *i.prefill)]
    fig["data"] += [
        {
            "type": "scatter",
            "x": [p.tokens for p in i.decode],
            "y": [p.intensity for p in i.decode],
            "name": T("chart.intensity.decode", context=tokens(i.context)),
            "mode": "lines+markers",
        },
        {
            "type": "scatter",
            "x": [p.tokens for p in i.prefill],
            "y": [p.intensity for p in i.prefill],
            "name": T("chart.intensity.prefill"),
            "mode": "lines+markers",
        },
        {
            "type": "scatter",
            "x": [min(xs), max(xs)],
            "y": [i.ridge, i.ridge],
            "name": T("chart.intensity.ridge", ridge=f"{i.ridge:,.0f}"),
            "mode": "lines",
            "line": {"dash": "dash", "color": "black"},
        },
    ]
    fig["layout"]["xaxis"].update(
        type="log", title={"text": T("chart.intensity.xaxis")}, dtick=1, tickformat=",d"
    )
    _log_y(fig, T("chart.intensity.yaxis"))
    return fig


def speed(curves: Sequence[SpeedCurve], targets: Sequence[tuple[str, float]]) -> Figure:
    """Tokens/s per GPU against tokens/s per user for each layout as its load grows (one point
    per number of requests at once), the pick drawn bold; each target is a vertical line at the
    per-user speed it asks for."""
    fig = _figure(T("chart.speed.title"))
    unit = T("chart.speed.unit")
    for c in curves:
        fig["data"].append(
            {
                "type": "scatter",
                "x": list(c.per_user),
                "y": list(c.per_gpu),
                "customdata": [[n] for n in c.concurrency],
                "name": _label(c.name + (T("chart.speed.picked") if c.pick else "")),
                "mode": "lines+markers",
                "line": {"width": 4 if c.pick else 1.5},
                "hovertemplate": "%{y:,.0f} " + unit + " · %{x:,.1f} /user · %{customdata[0]} "
                + _label(T("chart.speed.requests")) + "<extra>" + _label(c.name) + "</extra>",
            }
        )  # fmt: skip
    for label, x in targets:
        _vline(fig, x)
        fig["layout"].setdefault("annotations", []).append(
            {"x": x, "y": 1, "yref": "paper", "showarrow": False, "xanchor": "left",
             "text": html.escape(label)}
        )  # fmt: skip
    fig["layout"]["xaxis"].update(type="log", title={"text": T("chart.speed.x")})
    fig["layout"]["yaxis"].update(title={"text": T("chart.speed.y")})
    return fig


def bench(series: BenchSeries) -> Figure:
    """One figure of the user's benchmark against the number of clients at once: the runs as
    points, the speed model at each run's load as a line (data/perf.yaml's factors) and a
    dashed line (refitted on the runs)."""
    fig = _figure(series.title, height=340)
    x = list(series.clients)
    for name, y, style in (
        (T("bench.chart.measured"), series.measured, {"mode": "markers", "marker": {"size": 9}}),
        (T("bench.chart.predicted"), series.predicted, {"mode": "lines"}),
        (T("bench.chart.calibrated"), series.calibrated,
         {"mode": "lines", "line": {"dash": "dash"}}),
    ):  # fmt: skip
        fig["data"].append(
            {"type": "scatter", "x": x, "y": list(y), "name": _label(name),
             "hovertemplate": "%{y:,.4g} · %{x:,d}<extra>" + _label(name) + "</extra>", **style}
        )  # fmt: skip
    fig["layout"]["xaxis"].update(
        type="log", title={"text": T("bench.chart.x")}, dtick=math.log10(2), tickformat=",d"
    )
    fig["layout"]["yaxis"].update(title={"text": series.title}, rangemode="tozero")
    return fig


def cost_speed(series: Sequence[CostSeries]) -> Figure:
    """$/M tokens against output tokens/s per user for every layout that serves the traffic,
    one colour per GPU, the pick of each GPU drawn larger (left and down: cheaper and faster is
    right and down). Log axes where the points span more than a decade."""
    fig = _figure(T("chart.cost.title"))
    for s in series:
        fig["data"].append(
            {
                "type": "scatter",
                "x": list(s.per_user),
                "y": list(s.per_million),
                "customdata": [
                    [_label(name), n] for name, n in zip(s.layouts, s.gpus, strict=True)
                ],
                "name": _label(s.gpu),
                "mode": "markers",
                "marker": {"size": [14] + [8] * (len(s.per_user) - 1)},
                "hovertemplate": "%{customdata[0]} · %{customdata[1]} GPU · $%{y:,.3f}/M · "
                "%{x:,.1f} tok/s/user<extra>" + _label(s.gpu) + "</extra>",
            }
        )
    xs = [x for s in series for x in s.per_user if x > 0]
    ys = [y for s in series for y in s.per_million if y > 0]
    # a log axis (labelled at 1, 2, 5 of each decade) where the points span more than one
    x_log = bool(xs) and max(xs) > 10 * min(xs)
    y_log = bool(ys) and max(ys) > 10 * min(ys)
    fig["layout"]["xaxis"].update(title={"text": T("chart.cost.x")}, tickformat=",.0f",
                                  **(_decades(xs) if x_log else {}))  # fmt: skip
    fig["layout"]["yaxis"].update(
        title={"text": T("chart.cost.y")}, tickprefix="$", tickformat=",.3~f",
        **(_decades(ys) if y_log else {}),
    )  # fmt: skip
    return fig


def _decades(values: Sequence[float]) -> dict[str, Any]:
    """A log axis over ``values`` labelled at 1, 2 and 5 of each decade they cross."""
    lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    ticks = [m * 10.0**e for e in range(lo, hi + 1) for m in (1, 2, 5)]
    ticks = [v for v in ticks if min(values) / 1.5 <= v <= max(values) * 1.5]
    return {"type": "log", "tickvals": ticks}
