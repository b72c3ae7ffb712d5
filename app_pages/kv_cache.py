"""Step 2 — KV cache: bytes per token and per request by layer group, and how many users fit."""

import streamlit as st

from engine.present import charts_data as C
from engine.scenario import ENGINE_LABELS
from engine.software.tables import engine_version
from ui import charts, show
from ui import state as S

AUTO = "auto"

st.title("2 KV cache")
s = S.scenario()
st.caption(
    f"{s.model} on {s.total_gpus} × {s.gpu}. Bytes are per GPU (one attention TP rank). "
    "GiB = 2^30 B."
)


def _auto(v: object) -> object:
    return AUTO if v is None else v


def _unauto(v: object) -> object:
    return None if v == AUTO else v


def _pin_options(total: int, current: int | None) -> tuple[object, ...]:
    return (AUTO, *C.parallel_options(total, current or 1))


d0 = S.view().study
cfg = d0.config if d0 is not None else None
c1, c2, c3 = st.columns(3)
with c1:
    S.bound(
        st.select_slider,
        "Context (tokens)",
        "context",
        "kv.context",
        options=C.context_options(d0.limit.tokens if d0 else None, s.context or 32_768),
        format_func=C.tokens,
        to_widget=lambda v: 32_768 if v is None else v,
    )
    S.bound(
        st.select_slider, "Concurrent users", "users", "kv.users", options=C.users_options(s.users)
    )
with c2:
    dtypes = C.kv_dtype_options(cfg, d0.gpu.arch) if cfg is not None and d0 else ("auto",)
    S.bound(
        st.selectbox,
        "KV cache dtype (--kv-cache-dtype)",
        "kv_dtype",
        "kv.dtype",
        options=dtypes if s.kv_dtype in dtypes else (*dtypes, s.kv_dtype),
    )
    S.bound(
        st.select_slider,
        "Memory fraction",
        "memory_fraction",
        "kv.mem",
        options=(AUTO, *(round(0.5 + 0.01 * i, 2) for i in range(50))),
        to_widget=_auto,
        from_widget=_unauto,
        help="vLLM --gpu-memory-utilization / SGLang --mem-fraction-static; auto = the engine's",
    )
with c3:
    total = s.total_gpus
    S.bound(
        st.select_slider,
        "Tensor parallel (TP)",
        "tp",
        "kv.tp",
        options=_pin_options(total, s.tp),
        to_widget=_auto,
        from_widget=_unauto,
    )
    S.bound(
        st.select_slider,
        "DP-attention ranks (DP)",
        "dp",
        "kv.dp",
        options=_pin_options(total, s.dp),
        to_widget=_auto,
        from_widget=_unauto,
    )
    S.bound(
        st.selectbox,
        "Expert parallel (EP)",
        "ep",
        "kv.ep",
        options=(AUTO, True, False),
        to_widget=_auto,
        from_widget=_unauto,
        format_func=lambda v: {AUTO: "auto", True: "on", False: "off"}[v],
    )

d = S.study_or_stop()
st.divider()
show.verdict(d)
show.numbers(C.kv_headline(d))
show.numbers(C.fit_shown(d))

st.subheader("By layer group")
rows = C.group_rows(d.kv, max(d.context, 1))
show.table(
    [
        {
            "layer group": r.label,
            "layers": r.layers,
            "B/token per layer": round(r.per_layer_bytes_per_token, 2),
            "B/token (all its layers)": round(r.bytes_per_token, 2),
            "constant state B/request": r.state_bytes,
            f"B per request at {C.tokens(d.context)}": r.bytes_at_context,
        }
        for r in rows
    ],
)
with st.expander("Formulas by layer group"):
    for r in rows:
        st.markdown(f"**{r.label}**")
        st.code(r.formula, language=None, wrap_lines=True)
    if d.kv.hybrid is not None:
        st.markdown("**Hybrid page alignment (vLLM)**")
        st.code(d.kv.hybrid.formula(), language=None, wrap_lines=True)

grid = C.context_grid(C.chart_limit(d))
left, right = st.columns(2)
with left:
    st.plotly_chart(charts.kv_stack(C.kv_vs_context(d.kv, grid), d.context), width="stretch")
with right:
    users = C.users_vs_context(d, dtypes, grid)
    st.plotly_chart(charts.users_fit(users, d.context, s.users), width="stretch")

breakdown = C.memory_breakdown(d)
st.plotly_chart(charts.memory(breakdown), width="stretch")
with st.expander("Formula: memory of one GPU"):
    for seg in breakdown.segments:
        st.code(f"{seg.name}: {seg.formula}", language=None, wrap_lines=True)

st.subheader("vLLM and SGLang")
compare = C.engine_comparison(d)
if C.sglang_differs(d):
    st.warning("SGLang sizes this model differently from vLLM; the rows marked ≠ differ.")
else:
    st.caption("SGLang stores the same bytes per token as vLLM here.")
show.table(
    [
        {
            "": "≠" if r.differs else "",
            "metric": r.metric,
            f"{ENGINE_LABELS['vllm']} {engine_version('vllm')}": r.vllm,
            f"{ENGINE_LABELS['sglang']} {engine_version('sglang')}": r.sglang,
        }
        for r in compare
    ],
)
notes = [
    f"{ENGINE_LABELS[eng]}: {v.kv_dtype.note}" for eng, v in d.engines.items() if v.kv_dtype.note
]
if notes:
    st.caption(" · ".join(notes))
