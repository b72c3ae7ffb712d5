"""Step 5 — Flags: the launch command with a reason for every flag, what is left to the engine,
a Kubernetes manifest, the advisors, and a linter for an inherited command."""

import streamlit as st

from engine.facts import model_facts
from engine.launch.advisors import engine_advice, moe_comm_advice, parallelism_advice
from engine.launch.plan import plan
from engine.lint import lint_command
from engine.present import charts_data as C
from engine.present.share import ENGINE_LABELS
from ui import show
from ui import state as S

v = S.view()
s = v.state
st.title("5 Flags")
st.caption(
    f"{v.model.name} on {s.total_gpus} × {v.gpu.key}, {s.users:,} users at {s.context:,} tokens, "
    f"prefix overlap {s.prefix} %, {s.latency} priority."
)

order = [s.engine] + [e for e in ("vllm", "sglang") if e != s.engine]
for tab, engine in zip(st.tabs([ENGINE_LABELS[e] for e in order]), order, strict=True):
    with tab:
        p = show.or_error(
            plan,
            v.model.config,
            engine,
            v.gpu,
            s.total_gpus,
            s.context,
            s.users,
            s.prefix / 100,
            model_id=v.model_id,
            latency_priority=s.latency,
        )
        if p is None:
            continue
        if not p.runnable:
            st.error("Blocked: " + "; ".join(p.blocked_by))
        st.code(p.shell(), language="bash")
        st.markdown(
            f"**Layout:** TP {p.layout.tp} × DP {p.layout.dp}"
            + (f", DP-attention {p.layout.attn_dp}" if p.layout.attn_dp > 1 else "")
            + (", expert parallel" if p.layout.ep else "")
            + f" — {p.layout.reason}"
        )
        st.markdown("**Why each flag is there**")
        st.markdown("\n".join(f"- `{' '.join(f.tokens)}` — {f.reason}" for f in p.flags))
        with st.expander("Left to the engine on purpose"):
            for x in p.left_to_engine:
                st.markdown(f"- `{x.flag}` — {x.reason}")
        with st.expander("Notes"):
            for n in p.notes:
                st.markdown(f"- {n}")
        with st.expander("docker run"):
            st.code(p.docker(), language="bash")
        with st.expander("Kubernetes manifest"):
            st.code(p.to_json()["kubernetes_yaml"], language="yaml")

st.subheader("Advisors")
d = S.diagnosis_or_stop()
left, right = st.columns(2)
with left:
    a = show.or_error(
        parallelism_advice,
        d.family.attention_family,
        d.family.moe,
        s.gpus,
        s.users,
        s.latency,
        num_attention_heads=d.config.num_attention_heads,
    )
    if a is not None:
        st.markdown(
            f"**Parallelism: {a.layout}** (attention TP {a.attention_tp} × DP "
            f"{a.attention_dp}, EP {a.ep})"
        )
        for r in a.reasoning:
            st.markdown(f"- {r}")
        st.caption(f"Trade-off: {a.tradeoff}")
        st.code(" ".join(a.vllm_flags if s.engine == "vllm" else a.sglang_flags), language=None)
with right:
    e = engine_advice(s.prefix, replicas=C.instances(d))
    st.markdown(
        f"**Engine at {s.prefix} % prefix overlap: {ENGINE_LABELS.get(e.engine, e.engine)}**"
    )
    for r in e.reasoning:
        st.markdown(f"- {r}")
    st.caption(f"Routing: {e.routing}")
    if d.family.moe:
        c = moe_comm_advice(s.nodes, "mixed")
        st.markdown(f"**MoE all-to-all on {s.nodes} node(s)**")
        for r in c.reasoning:
            st.markdown(f"- {r}")

st.subheader("Lint an inherited command")
SEVERITY_BOX = {"error": st.error, "warning": st.warning}
text = st.text_area(
    "vllm serve … / python -m sglang.launch_server … / a pod manifest",
    key="flags.lint",
    height=120,
)
if st.button("Lint", key="flags.lint_go") and text.strip():
    report = show.or_error(lint_command, text, model_facts(v.model), v.gpu, s.total_gpus)
    if report is not None:
        st.caption(
            f"{ENGINE_LABELS[report.engine]} {report.engine_version}, read from "
            f"{report.parsed_from}"
        )
        if not report.findings:
            st.success("No findings.")
        for f in report.findings:
            SEVERITY_BOX.get(f.severity, st.info)(f"**{f.code}** — {f.message}\n\nFix: {f.fix}")
        with st.expander("Every flag explained"):
            for ex in report.explanations:
                st.markdown(f"- `{ex.flag}` {ex.value or ''} — {ex.meaning} {ex.reason}")
