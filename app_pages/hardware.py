"""Step 3 — Hardware: the GPU's facts, the gates the model must pass on it, does it fit."""

import streamlit as st

from engine.hardware.gates import evaluate_gates
from engine.present import charts_data as C
from ui import show
from ui import state as S

v = S.view()
g = v.gpu
st.title("3 Hardware")
st.caption(
    f"{v.model.name} on {v.state.gpus} × {g.name} × {v.state.nodes} node(s), TP {v.state.tp}."
)

with st.container(border=True):
    st.subheader(g.name)
    cols = st.columns(4)
    cols[0].metric(
        "Memory", g.memory_label, help="As the vendor states it: GB = 10^9 B, GiB = 2^30 B"
    )
    cols[1].metric("Bandwidth", C.tb_per_s(g.bandwidth_bytes_per_s))
    cc = (
        f" (CC {g.compute_capability[0]}.{g.compute_capability[1]})" if g.compute_capability else ""
    )
    cols[2].metric("Architecture", f"{g.arch}{cc}", help=g.generation)
    cols[3].metric("Interconnect", f"{g.interconnect_gbps:,.0f} GB/s", help=g.interconnect)
    cols = st.columns(4)
    cols[0].metric("BF16 dense", f"{g.bf16_tflops:,.0f} TFLOPS")
    cols[1].metric(
        "FP8", f"{g.fp8_tflops:,.0f} TFLOPS" if g.fp8_tflops else ("yes" if g.fp8 else "no")
    )
    cols[2].metric(
        "FP4", f"{g.fp4_tflops:,.0f} TFLOPS" if g.fp4_tflops else ("yes" if g.fp4 else "no")
    )
    cols[3].metric("Generation", g.generation)
    st.caption(f"Source: {g.source}")
    if g.note:
        st.caption(g.note)

st.subheader("Gates")
MARK = {"pass": ":green[**pass**]", "warn": ":orange[**warn**]", "fail": ":red[**fail**]"}
report = show.or_error(
    evaluate_gates, v.model.config, g, v.state.tp, v.state.kv_dtype, v.state.context
)
if report is not None:
    for x in report.gates:
        fix = f"  \n  Fix: {x.fix}" if x.fix else ""
        st.markdown(f"- {MARK.get(x.status, x.status)} **{x.name}** — {x.reason}{fix}")
    if report.runs:
        st.success(f"Runs on {report.gpus} × {g.key} (one instance, TP {report.gpus}).")
    else:
        st.error("Blocked: " + "; ".join(x.name for x in report.gates if x.status == "fail"))
    if report.min_gpus is not None:
        st.caption(
            f"Fewest {g.key} GPUs for one {v.state.context:,}-token request: {report.min_gpus}."
        )

st.subheader("Does the checkpoint fit")
d = S.diagnosis_or_stop()
show.numbers(C.weights_shown(d))
show.numbers(C.fit_shown(d))
