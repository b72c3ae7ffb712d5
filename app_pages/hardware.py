"""Step 3 — Hardware: the GPU's facts, the gates the model must pass on it at the chosen layout,
and whether the checkpoint fits."""

import streamlit as st

from engine.present import charts_data as C
from ui import show
from ui import state as S

d = S.study_or_stop()
g = d.gpu
st.title("3 Hardware")
st.caption(
    f"{d.model.name} on {d.scenario.gpus_per_node} × {g.name} × {d.scenario.nodes} node(s), "
    f"layout {d.layout.describe()}."
)

with st.container(border=True):
    st.subheader(g.name)
    cols = st.columns(4)
    cols[0].metric(
        "Memory",
        C.gib(g.device_memory_bytes),
        help=f"as the device reports it; the vendor states {g.memory_label}",
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
report = d.gates
for x in report.gates:
    fix = f"  \n  Fix: {x.fix}" if x.fix else ""
    st.markdown(f"- {MARK.get(x.status, x.status)} **{x.name}** — {x.reason}{fix}")
show.verdict(d)
if d.min_gpus is not None:
    st.caption(f"Fewest {g.key} GPUs for one {d.context_asked:,}-token request: {d.min_gpus}.")

st.subheader("Does the checkpoint fit")
show.numbers(C.weights_shown(d))
show.numbers(C.fit_shown(d))
