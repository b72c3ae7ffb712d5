"""Overview: the verdict for the scenario, the chosen layout, the launch command, then numbers."""

import streamlit as st

from engine.launch.render import script, shell
from engine.present import charts_data as C
from engine.scenario import ENGINE_LABELS
from ui import show
from ui import state as S

st.title("Serving Playbook")
d = S.study_or_stop()
s = d.scenario
st.caption(
    f"**{d.model.name}** ({d.model.source}) on {s.gpus_per_node} × {d.gpu.key} "
    f"({d.gpu.memory_label}) × {s.nodes} node{'s' if s.nodes > 1 else ''}, "
    f"{ENGINE_LABELS[s.engine]}, {s.users:,} users at {d.context_asked:,} tokens. "
    "Units: GiB = 2^30 bytes."
)
show.verdict(d)
plan = d.plan
if plan is not None:
    st.subheader(f"Launch command ({ENGINE_LABELS[s.engine]} {plan.engine_version})")
    st.code(shell(plan), language="bash")
    st.download_button(
        "Download launch script (.sh)",
        script(plan),
        file_name="launch.sh",
        mime="text/x-shellscript",
        key="overview.dl_script",
    )
st.subheader(d.family.summary())
show.numbers(C.kv_headline(d))
show.numbers(C.weights_shown(d))
show.numbers(C.fit_shown(d))
