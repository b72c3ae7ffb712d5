"""Plotly figures from engine series. Layout only: every value plotted comes in computed."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from engine.present.charts_data import LayerStrip, MemoryBreakdown, Series, in_gb, in_gib, tokens
from engine.present.learn import GrowthSeries, Intensity

PALETTE = {
    "full attention": "#1f77b4",
    "sliding window": "#9ecae1",
    "chunked local": "#6baed6",
    "MLA": "#2ca02c",
    "DSA (MLA + indexer)": "#98df8a",
    "compressed + DSA (V4)": "#17becf",
    "linear: Gated DeltaNet": "#ff7f0e",
    "linear: Mamba-2": "#ffbb78",
    "linear: Mamba-1": "#e6550d",
    "linear: lightning": "#fdae6b",
    "no mixer (FFN block)": "#d9d9d9",
    "dense FFN": "#9467bd",
    "MoE": "#d62728",
    "MoE + dense": "#e377c2",
    "no FFN": "#eeeeee",
}
FALLBACK = ("#8c564b", "#7f7f7f", "#bcbd22", "#393b79")
ROWS = ("mixer", "FFN")


def _layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        height=height,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        # below the plot: long series names must not run into the title
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0},
    )
    return fig


def _context_axis(fig: go.Figure, xs: Sequence[int]) -> None:
    fig.update_xaxes(
        type="log",
        title="context (tokens, log scale)",
        tickvals=list(xs),
        ticktext=[tokens(x) for x in xs],
    )


def layer_strip(strip: LayerStrip) -> go.Figure:
    """Each layer is a cell: the top row its token mixer, the bottom row its FFN."""
    fig = go.Figure()
    extra = iter(FALLBACK * 4)
    for row_i, (row_name, labels) in enumerate(zip(ROWS, (strip.mixers, strip.ffns), strict=True)):
        for label in dict.fromkeys(labels):
            xs = [i for i, lab in enumerate(labels) if lab == label]
            fig.add_trace(
                go.Bar(
                    x=xs,
                    y=[0.9] * len(xs),
                    base=[1 - row_i] * len(xs),
                    width=0.92,
                    name=label,
                    legendgroup=row_name,
                    marker_color=PALETTE.get(label) or next(extra),
                    hovertemplate=f"layer %{{x}}: {label}<extra>{row_name}</extra>",
                )
            )
    fig.update_yaxes(
        tickvals=[1.45, 0.45], ticktext=["mixer", "FFN"], range=[-0.1, 2.0], fixedrange=True
    )
    fig.update_xaxes(title="layer index", range=[-0.6, len(strip.mixers) - 0.4])
    fig.update_layout(barmode="overlay", bargap=0)
    return _layout(fig, "Layer pattern", height=260)


def _gib_lines(
    series: Sequence[Series | GrowthSeries], context: int, digits: int, **trace: str
) -> go.Figure:
    """One line per series, bytes drawn in GiB, on the context axis with the chosen context
    marked (no annotation text: on a log axis plotly would place it at log10 coordinates)."""
    fig = go.Figure()
    for s in series:
        fig.add_trace(
            go.Scatter(
                x=list(s.x),
                y=[in_gib(y) for y in s.y],
                name=s.name,
                hovertemplate=f"%{{y:,.{digits}f}} GiB<extra>{s.name}</extra>",
                **trace,
            )
        )
    if series:
        _context_axis(fig, series[0].x)
    fig.add_vline(x=context, line_dash="dot")
    return fig


def kv_stack(series: Sequence[Series], context: int) -> go.Figure:
    """Per-request KV on one GPU against context, stacked by layer group."""
    fig = _gib_lines(series, context, 3, stackgroup="kv", mode="lines")
    fig.update_yaxes(title="GiB per request (2^30 B)")
    return _layout(fig, "KV per request vs context (one GPU, stacked by layer group)")


def users_fit(series: Sequence[Series], context: int, users: int) -> go.Figure:
    fig = go.Figure()
    for s in series:
        fig.add_trace(
            go.Scatter(
                x=list(s.x),
                y=list(s.y),
                name=s.name,
                mode="lines+markers",
                hovertemplate="%{y:,.0f} users<extra>" + s.name + "</extra>",
            )
        )
    if series:
        _context_axis(fig, series[0].x)
    fig.add_vline(x=context, line_dash="dot")
    fig.add_hline(y=users, line_dash="dash", annotation_text=f"{users:,} users asked")
    fig.update_yaxes(title="concurrent requests that fit (all instances)", rangemode="tozero")
    return _layout(fig, "Users that fit vs context, per KV dtype")


def memory(b: MemoryBreakdown) -> go.Figure:
    fig = go.Figure()
    colors = ["#9467bd", "#1f77b4", "#c6dbef", "#fdd0a2", "#d9d9d9"]
    for seg, color in zip(b.segments, colors * 2, strict=False):
        fig.add_trace(
            go.Bar(
                y=["one GPU"],
                x=[in_gb(seg.bytes)],
                name=seg.name,
                orientation="h",
                marker_color=color,
                customdata=[[in_gib(seg.bytes)]],
                hovertemplate="%{x:,.1f} GB (%{customdata[0]:,.2f} GiB)<extra>"
                + seg.name
                + "</extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_xaxes(range=[0, in_gb(b.memory_per_gpu)])
    title = f"Memory of one GPU: {in_gb(b.memory_per_gpu):,.0f} GB (GB = 10^9 B; hover for GiB)"
    return _layout(fig, title, height=230)


def kv_growth(series: Sequence[GrowthSeries], context: int) -> go.Figure:
    fig = _gib_lines(series, context, 2, mode="lines+markers")
    fig.update_yaxes(title="GiB per request (2^30 B), log scale", type="log")
    return _layout(
        fig, "KV per request vs context, same dimensions, six attention designs", height=420
    )


def intensity(i: Intensity) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[p.tokens for p in i.decode],
            y=[p.intensity for p in i.decode],
            name=f"decode (batch B, {tokens(i.context)} context)",
            mode="lines+markers",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[p.tokens for p in i.prefill],
            y=[p.intensity for p in i.prefill],
            name="prefill (one prompt of T tokens)",
            mode="lines+markers",
        )
    )
    xs = [p.tokens for p in (*i.decode, *i.prefill)]
    fig.add_trace(
        go.Scatter(
            x=[min(xs), max(xs)],
            y=[i.ridge, i.ridge],
            name=f"ridge point {i.ridge:,.0f} FLOP/B: above it compute-bound",
            mode="lines",
            line={"dash": "dash", "color": "black"},
        )
    )
    fig.update_xaxes(type="log", title="tokens per forward pass (B for decode, T for prefill)")
    fig.update_yaxes(type="log", title="FLOPs per byte moved")
    return _layout(fig, "Arithmetic intensity vs the GPU's ridge point", height=400)
