"""Overview: the model on the chosen hardware in a few numbers, and the way through the steps."""

import streamlit as st

from engine.present import charts_data as C
from engine.present.share import ENGINE_LABELS
from ui import show
from ui import state as S

v = S.view()
st.title("Serving Playbook")
st.caption(
    f"**{v.model.name}** ({v.model.source}) on {v.state.gpus} × {v.gpu.key} ({v.gpu.memory_label}) "
    f"× {v.state.nodes} node{'s' if v.state.nodes > 1 else ''}, {ENGINE_LABELS[v.state.engine]}, "
    f"{v.state.users:,} users at {v.state.context:,} tokens. "
    "Units: GiB = 2^30 bytes, GB = 10^9 bytes."
)
d = S.diagnosis_or_stop()
st.subheader(d.family.summary())
show.numbers(C.kv_headline(d))
show.numbers(C.weights_shown(d))
show.numbers(C.fit_shown(d))

st.subheader("The six steps")
steps = [
    (
        "app_pages/family.py",
        "1 Family",
        "what attention and FFN the model uses, and the config fields that say so",
    ),
    (
        "app_pages/kv_cache.py",
        "2 KV cache",
        "bytes per token and per request, how many users fit; sliders and plots",
    ),
    (
        "app_pages/hardware.py",
        "3 Hardware",
        "compute-capability gates, FP8 / FP4, does the checkpoint fit",
    ),
    ("app_pages/software.py", "4 Software", "minimum engine versions, parsers, checkpoint formats"),
    (
        "app_pages/flags.py",
        "5 Flags",
        "the launch command with a reason for every flag, and a linter",
    ),
    (
        "app_pages/measure.py",
        "6 Measure",
        "a minimal first launch, then back-calculate real KV use",
    ),
]
for path, label, what in steps:
    st.page_link(path, label=f"{label} — {what}")
