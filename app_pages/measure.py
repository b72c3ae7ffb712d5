"""Step 6 — Measure: a minimal first launch, back-calculation of the real KV use from the
engine's startup log or /metrics, and live torch micro-kernels."""

import streamlit as st

from engine.errors import InputError
from engine.facts import kernel_dims, kernel_layer_groups
from engine.launch.render import join
from engine.measure.backcalc import metrics_commands, parse_engine_text
from engine.measure.first_launch import first_launch_for
from engine.measure.kernels import PRESETS
from engine.measure.kernels.dims import LayerGroup
from engine.present import charts_data as C
from engine.scenario import ENGINE_LABELS
from ui import show
from ui import state as S

d = S.study_or_stop()
s = d.scenario
label = ENGINE_LABELS[s.engine]
st.title("6 Measure")

st.subheader(f"1. A minimal first launch ({label})")
st.caption(
    "Nothing but TP, the context and a conservative memory fraction: the engine picks the rest "
    "and its log says what it picked."
)
if d.plan is not None:
    st.code(join(first_launch_for(d.plan)), language="bash")
st.subheader("2. Read the KV pool")
st.code("\n".join(metrics_commands(s.engine)), language="bash")

st.subheader("3. Back-calculate bytes per token")
left, right = st.columns(2)
log = left.text_area(
    "Startup log",
    key="measure.log",
    height=180,
    placeholder="… Available KV cache memory: 38.47 GiB … GPU KV cache size: 587,776 tokens",
)
metrics = right.text_area("/metrics text (optional)", key="measure.metrics", height=180)
if st.button("Back-calculate", key="measure.go"):
    try:
        m = C.measured_vs_predicted(d, parse_engine_text(log or None, metrics or None))
    except InputError as err:
        st.error(str(err))
    else:
        result = m.result
        cols = st.columns(4)
        cols[0].metric("Measured B/token per rank", f"{result.bytes_per_token_measured:,.0f} B")
        cols[1].metric("Predicted (step 2)", f"{result.bytes_per_token_predicted:,.0f} B")
        cols[2].metric("Ratio", f"{result.ratio:.3f}")
        cols[3].metric("KV pool per rank", C.gib(result.kv_bytes_available))
        st.info(result.explanation)
        with st.expander("Formula and evidence"):
            st.code(
                f"{result.kv_bytes_available:,} B ÷ {result.tokens_capacity:,} tokens = "
                f"{result.bytes_per_token_measured:,.1f} B/token; predicted "
                f"{result.bytes_per_token_predicted:,.0f} B/token at TP {m.tp}",
                language=None,
                wrap_lines=True,
            )
            for e in result.evidence:
                st.markdown(f"- {e}")

st.subheader("Micro-kernels on this machine")
st.caption(
    "Seven torch checks that test the sizing model of steps 1–2 (paged KV, MLA absorption, decode, "
    "DSA, prefix, MoE, KV concat). CPU runs use small sizes."
)
THIS_MODEL = "this model"
c1, c2 = st.columns(2)
preset = c1.selectbox("Model dimensions", [THIS_MODEL, *PRESETS], key="measure.preset")
device = c2.radio("Device", ["cpu", "cuda"], key="measure.device", horizontal=True)
if st.button("Run the checks", key="measure.kernels"):
    from engine.measure.kernels.runner import run_all  # imports torch: only when the checks run

    bar = st.progress(0.0, text="starting")

    def progress(i: int, total: int, name: str) -> None:
        bar.progress(i / max(total, 1), text=name)

    groups: list[LayerGroup] | None = None
    block: int | None = None
    if preset == THIS_MODEL:  # the paged check then allocates the engine's own groups
        groups, block = kernel_layer_groups(d.config)
        dims = kernel_dims(d.config)
    else:
        dims = PRESETS[preset]()
    rows = show.or_error(run_all, device, dims, progress, layer_groups=groups, hybrid_block=block)
    if rows is not None:
        show.table([r.as_dict() for r in rows])
