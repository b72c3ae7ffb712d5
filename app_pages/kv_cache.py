"""Step 2 — KV cache: bytes per token and per request by layer group, and how many users fit."""

import streamlit as st

from engine.present import charts_data as C
from engine.present.share import ENGINE_LABELS
from engine.software.tables import engine_version
from ui import charts, show
from ui import state as S

v = S.view()
s = v.state
st.title("2 KV cache")
st.caption(
    f"{v.model.name} on {s.total_gpus} × {v.gpu.key}. Bytes are per GPU (one TP rank). GiB = 2^30 "
    "B, GB = 10^9 B."
)

cfg = v.model.config
c1, c2, c3 = st.columns(3)
with c1:
    S.bound(
        st.select_slider,
        "Context (tokens)",
        "context",
        "kv.context",
        options=C.context_options(cfg.max_position_embeddings, s.context),
        format_func=C.tokens,
    )
    S.bound(
        st.select_slider, "Concurrent users", "users", "kv.users", options=C.users_options(s.users)
    )
with c2:
    dtypes = C.kv_dtype_options(cfg, v.gpu.arch)
    S.bound(
        st.selectbox,
        "KV cache dtype (--kv-cache-dtype)",
        "kv_dtype",
        "kv.dtype",
        options=dtypes if s.kv_dtype in dtypes else (*dtypes, s.kv_dtype),
    )
    S.bound(
        st.slider,
        "Memory fraction",
        "memory_fraction",
        "kv.mem",
        min_value=0.05,
        max_value=1.0,
        step=0.01,
        help="vLLM --gpu-memory-utilization / SGLang --mem-fraction-static",
    )
with c3:
    S.bound(
        st.select_slider,
        "Tensor parallel (TP)",
        "tp",
        "kv.tp",
        options=C.parallel_options(s.total_gpus, s.tp),
    )
    S.bound(
        st.select_slider,
        "Data parallel (DP)",
        "dp",
        "kv.dp",
        options=C.parallel_options(s.total_gpus, s.dp),
    )
    S.bound(st.checkbox, "Expert parallel (EP)", "ep", "kv.ep")

d = S.diagnosis_or_stop()
st.divider()
show.numbers(C.kv_headline(d))
show.numbers(C.fit_shown(d))

st.subheader("By layer group")
rows = C.group_rows(d.kv, d.context)
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
    users = C.users_vs_context(cfg, v.options, dtypes, grid)
    st.plotly_chart(charts.users_fit(users, d.context, s.users), width="stretch")

if d.fit is not None:
    breakdown = C.memory_breakdown(d.fit, v.options)
    st.plotly_chart(charts.memory(breakdown), width="stretch")
    if not breakdown.fits:
        st.error(
            "The weights do not fit in the usable memory of one GPU: raise TP, add GPUs or pick a "
            "smaller checkpoint."
        )
    with st.expander("Formula: memory of one GPU"):
        for seg in breakdown.segments:
            st.code(f"{seg.name}: {seg.formula}", language=None, wrap_lines=True)

st.subheader("vLLM and SGLang")
compare = C.engine_comparison(d)
if d.sglang_differs():
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
    f"{ENGINE_LABELS[eng]}: {kv.kv_dtype.note}"
    for eng, kv in (("vllm", d.kv), ("sglang", d.sglang))
    if kv.kv_dtype.note
]
if notes:
    st.caption(" · ".join(notes))
