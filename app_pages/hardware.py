"""Step 3 — Hardware: the GPU's facts, the gates the model must pass on it at the chosen layout,
and whether the checkpoint fits."""

import streamlit as st

from engine.gates import kernel_gates
from engine.hardware.gpus import gpu_note
from engine.present import charts_data as C
from engine.present import messages as M
from engine.text.units import gib, tb_per_s
from engine.text.words import say
from ui import show, tables
from ui import state as S
from ui.lang import T, current

st.title(T("nav.hardware"))
d = S.study_or_stop()
g = d.gpu
lang = current()
st.caption(
    T(
        "hardware.caption",
        model=d.model.name,
        per_node=d.scenario.gpus_per_node,
        gpu=g.name,
        nodes=d.scenario.nodes,
        layout=M.layout_name(d.layout, lang),
    )
)
cc = f"{g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else "—"


def tflops(value: float | None, supported: bool) -> str:
    if value:
        return T("hardware.tflops", n=f"{value:,.0f}")
    return T("common.yes") if supported else T("common.no")


with st.container(border=True):
    st.subheader(g.name)
    cols = st.columns(4)
    cols[0].metric(
        T("hardware.memory"),
        gib(g.device_memory_bytes),
        help=T(
            "hardware.memory_help",
            bytes=f"{g.device_memory_bytes:,}",
            vendor=g.memory_label,
        ),
    )
    cols[1].metric(T("hardware.bandwidth"), tb_per_s(g.bandwidth_bytes_per_s))
    cols[2].metric(T("hardware.arch"), g.arch, help=T("hardware.arch_help", cc=cc))
    cols[3].metric(T("hardware.bf16"), tflops(g.bf16_tflops, True))
    facts = [
        ("memory", gib(g.device_memory_bytes), T("hardware.fact.memory_note")),
        ("vendor_memory", T("hardware.vendor_value", label=g.memory_label),
         T("hardware.fact.vendor_memory_note")),
        ("bandwidth", tb_per_s(g.bandwidth_bytes_per_s), ""),
        ("arch", g.arch, ""),
        ("cc", cc, T("hardware.fact.cc_note")),
        ("generation", g.generation, ""),
        ("interconnect", g.interconnect, T("hardware.fact.interconnect_note",
                                           gbps=f"{g.interconnect_gbps:,.0f}")),
        ("bf16", tflops(g.bf16_tflops, True), T("hardware.fact.dense_note")),
        ("fp8", tflops(g.fp8_tflops, g.fp8), T("hardware.fact.dense_note")),
        ("fp4", tflops(g.fp4_tflops, g.fp4), T("hardware.fact.dense_note")),
        ("matmul", C.matmul_ceilings(g, lang), T(
            "hardware.fact.matmul_measured" if g.matmul_bf16_tflops is not None
            else "hardware.fact.matmul_median", vendor=g.vendor.upper())),
    ]  # fmt: skip
    tables.texts(
        [{"fact": T(f"hardware.fact.{k}"), "value": v, "note": n or None} for k, v, n in facts],
        {
            "fact": T("hardware.col.fact"),
            "value": T("hardware.col.value"),
            "note": T("hardware.col.note"),
        },
        key="hardware.facts",
    )

st.subheader(T("hardware.gates"))
st.caption(T("hardware.gates_caption"))
show.gates(d)
show.verdict(d)
if d.min_gpus is not None:
    st.caption(T("hardware.fewest", gpu=g.key, context=f"{d.context_asked:,}", n=d.min_gpus))

st.subheader(T("hardware.fit"))
show.numbers(C.weights_shown(d, lang))
show.numbers(C.fit_shown(d, lang))

kg = kernel_gates()
family_source = {"DSA": kg.dsa.source, "MLA": kg.mla.source}.get(d.family.attention_family, "")
note = gpu_note(g)
show.sources(
    [g.source, g.device_memory_source, g.matmul_source, family_source, kg.weights["source"]],
    notes=[say(note, lang)] if note is not None else [],
)
