"""Capacity and cost: the fewest GPUs and nodes that serve the sidebar's request rate on each
GPU compared, what an hour and a million tokens cost, every layout on one chart; without a rate,
what the sidebar's GPUs cost per million tokens at the asked load."""

import streamlit as st

from engine.capacity import capacity, given, price_for
from engine.errors import InputError
from engine.present import capacity_words as W
from engine.present import messages as M
from ui import charts, show, tables
from ui import state as S
from ui.lang import T, current

st.title(T("nav.capacity"))
d = S.study_or_stop()
s = d.scenario
lang = current()
price = price_for(s.gpu, s.gpu_price)
st.caption(T("capacity.caption", model=d.model.name, gpu=s.gpu, isl=f"{s.workload(d.context)[0]:,}",
             osl=f"{s.workload(d.context)[1]:,}"))  # fmt: skip


def _price_note() -> None:
    if price is None:
        st.warning(T("capacity.page.no_price", gpu=s.gpu), icon=":material/payments:")
    elif price.own:
        st.caption(T("capacity.page.own_price", gpu=s.gpu, usd=f"{price.usd_per_hour:g}"))
    else:
        st.caption(T("capacity.page.price", gpu=s.gpu, usd=f"{price.usd_per_hour:g}",
                     date=price.date or "", source=price.source or ""))  # fmt: skip


def _costs_at_load() -> None:
    """No traffic: the Study's own layouts at the asked users, priced."""
    st.info(T("capacity.page.no_rate"), icon=":material/info:")
    rows = W.layout_costs(d, price, lang)
    if not rows:
        return
    st.subheader(T("capacity.page.at_load", users=f"{s.users:,}", n=s.total_gpus, gpu=s.gpu))
    tables.show(
        tables.frame(
            [vars(r) for r in rows],
            ["layout", "gpus", "cost_per_hour", "per_million", "per_million_output",
             "tokens_per_s_per_user", "tokens_per_s", "formula"],
        ),
        {
            "layout": tables.text(T("capacity.col.layout"), pinned=True),
            "gpus": tables.count(T("capacity.col.gpus")),
            "cost_per_hour": tables.decimal(T("capacity.col.cost_per_hour"), 2),
            "per_million": tables.decimal(T("capacity.col.per_million"), 3),
            "per_million_output": tables.decimal(T("capacity.col.per_million_output"), 3),
            "tokens_per_s_per_user": tables.decimal(T("capacity.col.tps_user"), 1),
            "tokens_per_s": tables.decimal(T("capacity.col.tps"), 0),
            "formula": tables.text(T("common.formula")),
        },
        key="capacity.at_load",
    )  # fmt: skip


def _fleets() -> None:
    try:
        cap = capacity(s)
    except InputError as err:
        show.problem(err)
        return
    assert cap is not None
    pick = cap.primary.pick
    if pick is not None:
        st.subheader(T("capacity.page.pick", gpu=s.gpu, rate=f"{cap.rate:,g}"))
        cols = st.columns(5)
        cols[0].metric(T("capacity.col.gpus"), f"{pick.gpus:,}", help=pick.formula)
        cols[1].metric(T("capacity.col.nodes"), f"{pick.nodes:,}")
        cols[2].metric(T("capacity.col.replicas"), f"{pick.replicas:,}")
        cols[3].metric(T("capacity.col.headroom"), W.percent(1 - pick.utilization))
        cols[4].metric(T("capacity.col.per_million"), W.money(pick.cost_per_million_tokens, 3))
    mine = given(d, cap.rate)
    if mine is not None:
        st.markdown(W.given_line(mine, lang))
    for f in cap.fleets:
        st.markdown("- " + W.fleet_line(f, lang))
    every = st.toggle(T("capacity.page.every"), key="capacity.every")
    rows = [vars(r) for r in W.rows(cap, lang, every=every)]
    tables.show(
        tables.frame(rows, ["gpu", "layout", "gpus", "nodes", "per_million", "cost_per_hour",
                            "utilization", "replicas", "per_replica", "ttft_ms", "tpot_ms",
                            "limit"]),
        {
            "gpu": tables.text(T("capacity.col.gpu"), pinned=True),
            "layout": tables.text(T("capacity.col.layout")),
            "gpus": tables.count(T("capacity.col.gpus")),
            "nodes": tables.count(T("capacity.col.nodes")),
            "per_million": tables.decimal(T("capacity.col.per_million"), 3),
            "cost_per_hour": tables.decimal(T("capacity.col.cost_per_hour"), 2),
            "utilization": tables.share(T("capacity.col.utilization")),
            "replicas": tables.count(T("capacity.col.replicas")),
            "per_replica": tables.decimal(T("capacity.col.per_replica"), 2),
            "ttft_ms": tables.decimal(T("capacity.col.ttft"), 0),
            "tpot_ms": tables.decimal(T("capacity.col.tpot"), 1),
            "limit": tables.text(T("capacity.col.limit")),
        },
        key="capacity.table",
    )  # fmt: skip
    if pick is not None:
        with st.expander(T("common.formula")):
            st.code(pick.formula.replace(" ; ", "\n"), language=None)
    series = W.cost_series(cap, lang)
    if series:
        charts.draw(charts.cost_speed(series), T("chart.cost.caption"), key="capacity.chart")


def _reuse() -> None:
    """What each request finds in the prefix cache at the Study's own layout and load."""
    r = d.fit.reuse
    if r is None:
        return
    st.subheader(T("reuse.title", layout=M.layout_name(d.layout, lang)))
    kind = T(f"reuse.kind.{s.prefix_kind}")
    st.caption(T("reuse.caption", share=W.percent(s.prefix_overlap / 100), kind=kind))
    show.numbers(W.reuse_shown(r, d.fit.kv_bytes_per_token_per_gpu, lang), per_row=5)


_price_note()
if s.request_rate is None:
    _costs_at_load()
else:
    _fleets()
_reuse()
