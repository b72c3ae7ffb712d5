"""Step 5 — Flags: the launch plan of each engine with a reason for every flag, what is left to
the engine, the layouts the search compared, the manifests and the advisors."""

from collections.abc import Sequence

import streamlit as st

from engine.decision import Decision
from engine.launch.advisors import engine_advice, moe_comm_advice
from engine.launch.launch_data import launch_facts
from engine.launch.plan import LaunchPlan
from engine.present import charts_data as C
from engine.present import messages as M
from engine.present.artifacts import Artifact
from engine.present.bench_script import bench_artifact
from engine.present.k8s import KubeOptions, kubernetes_yaml, manifest_name
from engine.present.render import docker, shell
from engine.present.speed_chart import load_caption
from engine.present.study_report import candidate_json
from engine.scenario import ENGINE_LABELS
from engine.text.safe import inert
from engine.text.sources import clean
from engine.text.words import say, say_all, sources
from ui import charts, disagg, memo, show, tables
from ui import state as S
from ui.lang import T, current


@st.fragment
def set_with_reasons(
    rows: Sequence[tuple[str, str | None, Decision]], column: str, header: str, key: str
) -> None:
    """What the plan sets (flags or environment variables): each name, its value and why."""
    lang = current()
    tables.texts(
        [{column: name, "value": value, "reason": say(why, lang)} for name, value, why in rows],
        {column: header, "value": T("flags.col.value"), "reason": T("flags.col.reason")},
        key=key,
    )


def cluster_manifests(p: LaunchPlan) -> None:
    """The manifests with the names the cluster decides (the model-cache claim, the token
    Secret and, across nodes, the pods' network): typing one reruns only this part; each is
    checked as the name it must be, and nothing typed leaves this session."""
    key = f"flags.kube.{p.engine}"
    left, right = st.columns(2)
    claim = left.text_input(
        T("flags.kube.claim"), key=f"{key}.claim", max_chars=63, help=T("flags.kube.claim_help")
    )
    secret = right.text_input(
        T("flags.kube.secret"), key=f"{key}.secret", max_chars=63, help=T("flags.kube.secret_help")
    )
    host: bool | None = None
    default: bool | None = None
    nic, rdma = "", ""
    if p.nodes_per_copy > 1:
        a, b, c = st.columns(3)
        default = launch_facts().kubernetes.multi_node_network.host_network
        host = a.checkbox(T("flags.kube.host_network"), key=f"{key}.host", value=default)
        nic = b.text_input(T("flags.kube.nic"), key=f"{key}.nic", max_chars=15)
        rdma = c.text_input(T("flags.kube.rdma"), key=f"{key}.rdma", max_chars=63)
    options = KubeOptions(
        model_cache_claim=claim.strip() or None,
        hf_token_secret=secret.strip() or None,
        host_network=host,
        rdma_resource=rdma.strip() or None,
        nic=nic.strip() or None,
    )
    name = manifest_name(p.model_name)
    text = show.or_error(kubernetes_yaml, p, name, options=options, lang=current())
    if text is None:
        return
    st.code(text, language="yaml")
    if options != KubeOptions(host_network=default):  # the download above has the defaults
        yaml_file = Artifact("kubernetes", f"{name}-{p.engine}.yaml", "application/yaml", text)
        show.download(yaml_file, f"{key}.download", not p.runnable)


st.title(T("nav.flags"))
d = S.study_or_stop()
s = d.scenario
lang = current()
st.caption(
    T(
        "flags.caption",
        model=d.model.name,
        n=s.total_gpus,
        gpu=d.gpu.key,
        users=f"{s.users:,}",
        context=f"{d.context_asked:,}",
        prefix=s.prefix_overlap,
        latency=T(f"sidebar.priority.{s.latency}"),
    )
)
show.verdict(d)

reasons, reason_sources = M.layout_reasons(d, current())
plan_sources: list[str] = []  # the citations of every reason below, listed once at the end
order = [s.engine] + [e for e in ("vllm", "sglang") if e != s.engine]
for tab, engine in zip(st.tabs([ENGINE_LABELS[e] for e in order]), order, strict=True):
    with tab:
        view = d.engines[engine]
        p = view.plan
        if p is None:
            st.error(
                T(
                    "flags.cannot_run",
                    engine=ENGINE_LABELS[engine],
                    layout=M.layout_name(d.layout, lang),
                    problem=say(view.problem, lang) if view.problem else "",
                )
            )
            continue
        if not p.runnable:
            st.error(T("flags.blocked", why="; ".join(M.blocked(p, lang))))
        for warning in p.warned:
            st.warning(say(warning, lang))
        plan_sources += sources(
            [
                *(f.why for f in p.flags),
                *(e.why for e in p.env),
                *(x.why for x in p.left_to_engine),
                *p.noted,
            ]
        )
        st.code(shell(p), language="bash")
        if len(p.commands) > 1:
            with st.expander(T("flags.every_node", n=len(p.commands))):
                for c in p.commands:
                    st.markdown(T("flags.node", node=c.node, role=T(f"flags.role.{c.role}")))
                    st.code(shell(p, c), language="bash")
        artifacts = {a.kind: a for a in memo.launch(d, engine, lang)}
        show.downloads(list(artifacts.values()), f"flags.dl.{engine}", not p.runnable)
        bench_file = bench_artifact(d, engine, lang)  # the benchmark that tests this plan
        if bench_file is not None:
            show.download(bench_file, f"flags.dl.{engine}.bench", not p.runnable)
        st.markdown(T("flags.layout", layout=M.layout_name(p.layout, lang)))
        st.markdown("\n".join(f"- {inert(r)}" for r in reasons))
        st.markdown(T("flags.why_each"))
        flags = [(f.flag, f.value, f.why) for f in p.flags]
        set_with_reasons(flags, "flag", T("flags.col.flag"), f"flags.flags.{engine}")
        if p.env:
            st.markdown(T("flags.env"))
            env = [(e.name, e.value, e.why) for e in p.env]
            set_with_reasons(env, "name", T("flags.col.env"), f"flags.env.{engine}")
        with st.expander(T("flags.left")):
            tables.texts(
                [{"flag": x.flag, "reason": say(x.why, lang)} for x in p.left_to_engine],
                {"flag": T("flags.col.flag"), "reason": T("flags.col.reason")},
                key=f"flags.left.{engine}",
            )
        if p.noted:
            with st.expander(T("flags.notes")):
                st.markdown("\n".join(f"- {clean(say(n, lang))}" for n in p.noted))
        with st.expander(T("flags.docker")):
            for c in p.commands:
                st.code(docker(p, c), language="bash")
        with st.expander(T("flags.kubernetes")):
            cluster_manifests(p)

disagg.section(d, "flags")
disagg.pools(d, "flags")

st.subheader(T("flags.compared"))
st.caption(T("flags.compared_caption"))
tables.show(
    tables.frame(
        [
            {
                "layout": M.layout_name(c.layout, lang),
                "gpus": c.layout.gpus,
                "weights": C.in_gib(j["weights_per_gpu"]),
                "kv_space": C.in_gib(j["kv_space_per_gpu"]),
                "used": c.taken_before_kv,
                "context": j["context"],
                "users": j["users"],
                "why_not": "; ".join(say_all(c.why, lang)) or None,
                "tpot": c.speed.tpot_ms if c.speed else None,
                "ttft": c.speed.ttft_ms if c.speed else None,
                "tps": c.speed.output_tokens_per_s_per_gpu if c.speed else None,
            }
            for c, j in ((x, candidate_json(x)) for x in d.search.candidates[:12])
        ],
        [
            "layout",
            "users",
            "tpot",
            "ttft",
            "tps",
            "why_not",
            "context",
            "used",
            "weights",
            "kv_space",
            "gpus",
        ],
    ),
    # what a reader decides on first (all six in view at 1400 px): the layout, the users that
    # fit, its speed and why it was not chosen; the sizes behind them after
    {
        "layout": tables.text(T("flags.col.layout")),
        "users": tables.count(T("flags.col.users")),
        "tpot": tables.decimal(T("flags.col.tpot"), 1),
        "ttft": tables.decimal(T("flags.col.ttft"), 0),
        "tps": tables.decimal(T("flags.col.tps"), 0),
        "why_not": tables.text(T("flags.col.why_not")),
        "context": tables.count(T("flags.col.context")),
        "used": tables.share(T("flags.col.used"), T("flags.col.used_help")),
        "weights": tables.decimal(T("flags.col.weights"), 1),
        "kv_space": tables.decimal(T("flags.col.kv_space"), 1),
        "gpus": tables.count(T("flags.col.gpus")),
    },
    key="flags.compared",
    fit=6,
)
st.caption(C.speed_caption(d, lang) + " " + load_caption(d, lang))
charts.speed_of_every_layout(d, lang, key="flags.speed")

st.subheader(T("flags.advisors"))
left, right = st.columns(2)
advice_sources: list[str] = []
with left:
    advice = engine_advice(
        s.prefix_overlap,
        replicas=C.instances(d),
        family=str(d.family.attention_family),
        gpu_generation=d.gpu.generation,
        moe=d.family.moe,
    )
    advice_sources.append(advice.source)
    st.markdown(
        T(
            "flags.engine_advice",
            prefix=s.prefix_overlap,
            engine=ENGINE_LABELS.get(advice.engine, T("flags.either")),
        )
    )
    st.markdown("\n".join(f"- {say(w, lang)}" for w in advice.why))
    if advice.routing_why is not None:
        st.caption(T("flags.routing", routing=say(advice.routing_why, lang)))
with right:
    if d.family.moe:
        comm = moe_comm_advice(s.nodes, "mixed")
        advice_sources.append(comm.source)
        st.markdown(T("flags.moe_advice", nodes=s.nodes))
        st.markdown("\n".join(f"- {say(w, lang)}" for w in comm.why))
show.sources(list(dict.fromkeys([*reason_sources, *plan_sources, *advice_sources])))
