"""Compare: models × GPUs for the sidebar's traffic — GPUs and nodes needed, $/M tokens, TTFT
and TPOT at the load, the longest context a copy holds — so the same traffic on another model
(a small-active MoE, say) or another GPU is one table."""

import streamlit as st

from engine.capacity.compare import compare
from engine.model.loader import catalog_names
from engine.present import capacity_words as W
from ui import state as S
from ui import tables
from ui.lang import T, current

st.title(T("nav.compare"))
d = S.study_or_stop()
s = d.scenario
lang = current()
st.caption(T("compare_page.caption", gpus=", ".join(s.compared)))
names = catalog_names()
if "compare.models" not in st.session_state:
    st.session_state["compare.models"] = [s.model] if s.model in names else names[:1]
models = st.multiselect(T("compare_page.models"), names, key="compare.models", max_selections=8)
if s.request_rate is None:
    st.info(T("capacity.page.no_rate"), icon=":material/info:")
    st.stop()
if not models:
    st.stop()
scenarios = [s.replace(source="catalog", model=m, digest=None) for m in models]
columns = compare(scenarios, s.request_rate)
rows = W.compare_rows(columns, lang)
served = [r for r in rows if r.get("why") is None]
tables.show(
    tables.frame(served, list(W.COMPARE_COLUMNS)),
    {
        "model": tables.text(T("capacity.col.model"), pinned=True),
        "gpu": tables.text(T("capacity.col.gpu")),
        "gpus": tables.count(T("capacity.col.gpus")),
        "nodes": tables.count(T("capacity.col.nodes")),
        "layout": tables.text(T("capacity.col.layout")),
        "per_million": tables.decimal(T("capacity.col.per_million"), 3),
        "ttft": tables.decimal(T("capacity.col.ttft"), 0),
        "ttft_likely": tables.text(T("capacity.col.ttft_likely")),
        "tpot": tables.decimal(T("capacity.col.tpot"), 1),
        "tpot_likely": tables.text(T("capacity.col.tpot_likely")),
        "context": tables.count(T("capacity.col.context")),
    },
    key="compare.table",
)
for r in rows:
    if r.get("why"):
        st.warning(T("capacity.unserved", model=r["model"], gpu=r["gpu"] or "—", why=r["why"]))
