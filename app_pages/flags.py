"""Step 5 — Flags: the launch plan of each engine with a reason for every flag, what is left to
the engine, the layouts the search compared, the manifests and the advisors."""

import streamlit as st

from engine.launch.advisors import engine_advice, moe_comm_advice
from engine.launch.k8s import kubernetes_yaml, manifest_name
from engine.launch.render import docker, script, shell
from engine.present import charts_data as C
from engine.present.report import candidate_json
from engine.scenario import ENGINE_LABELS
from ui import show
from ui import state as S

d = S.study_or_stop()
s = d.scenario
st.title("5 Flags")
st.caption(
    f"{d.model.name} on {s.total_gpus} × {d.gpu.key}, {s.users:,} users at {d.context_asked:,} "
    f"tokens, prefix overlap {s.prefix_overlap} %, {s.latency} priority."
)
show.verdict(d)

order = [s.engine] + [e for e in ("vllm", "sglang") if e != s.engine]
for tab, engine in zip(st.tabs([ENGINE_LABELS[e] for e in order]), order, strict=True):
    with tab:
        view = d.engines[engine]
        p = view.plan
        if p is None:
            st.error(f"{ENGINE_LABELS[engine]} cannot run {d.layout.describe()}: {view.problem}")
            continue
        if not p.runnable:
            st.error("Blocked: " + "; ".join(p.blocked_by))
        st.code(shell(p), language="bash")
        st.download_button(
            "Download launch script (.sh)",
            script(p),
            file_name=f"launch-{engine}.sh",
            mime="text/x-shellscript",
            key=f"flags.dl.{engine}",
        )
        st.markdown(f"**Layout:** {p.layout.describe()}")
        for reason in d.search.reasons:
            st.markdown(f"- {reason}")
        st.markdown("**Why each flag is there**")
        for f in p.flags:
            st.markdown(f"- `{' '.join(f.tokens)}` — {f.reason}")
        if p.env:
            st.markdown("**Environment**")
            for e in p.env:
                st.markdown(f"- `{e.name}={e.value}` — {e.reason}")
        with st.expander("Left to the engine on purpose"):
            for x in p.left_to_engine:
                st.markdown(f"- `{x.flag}` — {x.reason}")
        with st.expander("Notes"):
            for n in p.notes:
                st.markdown(f"- {n}")
        with st.expander("docker run"):
            st.code(docker(p), language="bash")
        with st.expander("Kubernetes manifest"):
            st.code(kubernetes_yaml(p, manifest_name(p.model_name)), language="yaml")

st.subheader("Layouts compared")
show.table(
    [
        {
            "layout": c["layout"],
            "weights per GPU (GiB)": round(c["weights_per_gpu"] / 2**30, 1),
            "KV space per GPU (GiB)": round(c["kv_space_per_gpu"] / 2**30, 1),
            "context": c["context"],
            "users": c["users"],
            "why not first": "; ".join(c["why_not"]),
        }
        for c in (candidate_json(x) for x in d.search.candidates[:12])
    ]
)

st.subheader("Advisors")
left, right = st.columns(2)
with left:
    advice = engine_advice(s.prefix_overlap, replicas=C.instances(d))
    st.markdown(
        f"**Engine at {s.prefix_overlap} % prefix overlap: "
        f"{ENGINE_LABELS.get(advice.engine, advice.engine)}**"
    )
    for r in advice.reasoning:
        st.markdown(f"- {r}")
    st.caption(f"Routing: {advice.routing}")
with right:
    if d.family.moe:
        c = moe_comm_advice(s.nodes, "mixed")
        st.markdown(f"**MoE all-to-all on {s.nodes} node(s)**")
        for r in c.reasoning:
            st.markdown(f"- {r}")
