"""Choose a model: every bundled config side by side, searchable; pick one to diagnose. The
search and its table are a fragment (typing a filter reruns only the table), and so is the
picker (choosing reruns only it; "Use this model" reruns the page)."""

import streamlit as st

from engine.capacity.shortlist import shortlist
from engine.present import capacity_words as W
from engine.present import charts_data as C
from ui import state as S
from ui import tables
from ui.lang import T
from ui.lang import current as reading_lang


@st.fragment(key="choose.catalog")
def catalog() -> None:
    rows = C.catalog_rows()
    lang = reading_lang()
    query = st.text_input(
        T("choose.search"),
        key="choose.search",
        placeholder=T("choose.search_placeholder"),
        max_chars=100,
    ).strip()
    words = query.lower().split()
    # the family matches as the reader reads it and as it is spelled in English ("MoE", "sliding")
    hits = [
        r
        for r in rows
        if all(w in f"{r.name} {r.family} {r.family_in(lang)}".lower() for w in words)
    ]
    st.caption(T("choose.count", shown=len(hits), total=len(rows)))
    table = tables.frame(
        [
            {
                "model": r.name,
                "family": r.family_in(lang),
                "layers": r.layers,
                "params_b": r.params_b,
                "active_b": r.active_b,
                "weights_gib": r.weights_gib,
                "kv_bytes_per_token": r.kv_bytes_per_token,
                "kv_bytes_per_token_32k": r.kv_bytes_per_token_at_32k,
                "kv_gib_32k": r.kv_gib_at_32k,
                "max_context": r.max_context,
                "note": r.note or None,
                "card": f"https://huggingface.co/{r.name}",
            }
            for r in hits
        ],
        [
            "model",
            "family",
            "layers",
            "params_b",
            "active_b",
            "weights_gib",
            "kv_bytes_per_token",
            "kv_bytes_per_token_32k",
            "kv_gib_32k",
            "max_context",
            "note",
            "card",
        ],
    )
    # the caption's promise first (and in view at 1400 px): weights, KV per token, KV at 32K
    config = {
        "model": tables.text(T("choose.col.model")),
        "weights_gib": tables.decimal(T("choose.col.weights"), 1, T("choose.col.weights_help")),
        "kv_bytes_per_token": tables.count(T("choose.col.kv_token"), T("choose.col.kv_token_help")),
        "kv_gib_32k": tables.decimal(T("choose.col.kv_32k"), 2, T("choose.col.kv_32k_help")),
        "kv_bytes_per_token_32k": tables.count(
            T("choose.col.kv_token_32k"), T("choose.col.kv_token_32k_help")
        ),
        "family": tables.text(T("choose.col.family")),
        "params_b": tables.decimal(T("choose.col.params"), 1, T("choose.col.params_help")),
        "active_b": tables.decimal(T("choose.col.active"), 1, T("choose.col.active_help")),
        "layers": tables.count(T("choose.col.layers")),
        "max_context": tables.count(T("choose.col.context"), T("choose.col.context_help")),
    }
    if any(r.note for r in hits):
        config["note"] = tables.text(T("choose.col.note"))
    config["card"] = st.column_config.LinkColumn(
        T("choose.col.card"), help=T("choose.col.card_help"), display_text="huggingface.co"
    )
    tables.show(table, config, key="choose.table")


@st.fragment(key="choose.picker")
def picker() -> None:
    rows = C.catalog_rows()
    names = [r.name for r in rows]
    scenario = S.scenario()
    current = scenario.model if scenario.model in names else names[0]
    pick = st.selectbox(T("choose.pick"), names, index=names.index(current), key="choose.pick")
    if st.button(T("choose.go"), key="choose.go", type="primary"):
        S.set_scenario(model=pick, source="catalog", digest=None)
        st.rerun()
    st.caption(T("choose.now", model=scenario.model, source=T(f"common.source.{scenario.source}")))


@st.fragment(key="choose.shortlist")
def what_runs() -> None:
    """The bundled models the sidebar's GPUs serve, each with its best checkpoint (studied on
    demand: every model in every checkpoint it has is a Study)."""
    s = S.scenario()
    lang = reading_lang()
    st.subheader(T("choose.shortlist.title", n=s.total_gpus, gpu=s.gpu))
    st.caption(T("choose.shortlist.caption", users=f"{s.users:,}", context=f"{s.context or 0:,}"))
    if not st.toggle(T("choose.shortlist.toggle"), key="choose.shortlist.on"):
        return
    with st.spinner(T("choose.shortlist.working")):
        found = shortlist(s)
    tables.show(
        tables.frame(W.shortlist_rows(found, lang), list(W.SHORTLIST_COLUMNS)),
        {
            "model": tables.text(T("shortlist.col.model"), pinned=True),
            "checkpoint": tables.text(T("shortlist.col.checkpoint")),
            "users": tables.count(T("shortlist.col.users")),
            "tps_user": tables.decimal(T("shortlist.col.tps_user"), 0),
            "tpot": tables.decimal(T("shortlist.col.tpot"), 1),
            "layout": tables.text(T("shortlist.col.layout")),
            "repo": tables.text(T("shortlist.col.repo")),
        },
        key="choose.shortlist.table",
    )
    with st.expander(T("shortlist.gated")):
        tables.show(
            tables.frame(W.gated_rows(found, lang), ["model", "why"]),
            {
                "model": tables.text(T("shortlist.col.model"), pinned=True),
                "why": tables.text(T("choose.shortlist.why")),
            },
            key="choose.shortlist.gated",
        )


st.title(T("nav.choose_model"))
st.caption(T("choose.caption"))
what_runs()
catalog()
picker()
