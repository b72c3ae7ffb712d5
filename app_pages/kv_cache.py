"""Step 2 — KV cache: bytes per token and per request by layer group, and how many users fit.

The sliders and the views they drive are one fragment (``FRAGMENT``): moving a slider reruns it,
and the sidebar where that shows the same value (context, users) or else only the sidebar's
share link; not the rest of the page.
"""

import streamlit as st

from engine.engines import adapter
from engine.present import charts_data as C
from engine.present import messages as M
from engine.scenario import DEFAULT_CONTEXT, ENGINE_LABELS, Scenario
from engine.study import Study
from engine.text.words import say
from ui import charts, show, tables
from ui import state as S
from ui.lang import T, current

AUTO = "auto"
FRAGMENT = "kv"
IN_SIDEBAR = (S.SIDEBAR_FRAGMENT, FRAGMENT)  # the sidebar shows this value too
ON_PAGE = (S.SHARE_FRAGMENT, FRAGMENT)


def _auto(v: object) -> object:
    return AUTO if v is None else v


def _unauto(v: object) -> object:
    return None if v == AUTO else v


def _pin_options(total: int, current: int | None) -> tuple[object, ...]:
    return (AUTO, *C.parallel_options(total, current or 1))


def controls(s: Scenario, d0: Study | None) -> tuple[str, ...]:
    """The sliders; returns the KV dtypes this model accepts on this GPU."""
    auto_label = T("common.auto")  # looked up now: format_func may run outside the script

    def auto_or(v: object) -> str:
        return auto_label if v == AUTO else str(v)

    cfg = d0.config if d0 is not None else None
    limit = d0.limit.tokens if d0 else None
    on_off = {AUTO: auto_label, True: T("common.on"), False: T("common.off")}
    c1, c2, c3 = st.columns(3)
    with c1:
        S.bound(
            st.select_slider,
            T("kv.context"),
            "context",
            "kv.context",
            options=C.context_options(limit, s.context or DEFAULT_CONTEXT),
            format_func=C.tokens,
            to_widget=lambda v: DEFAULT_CONTEXT if v is None else v,
            fragments=IN_SIDEBAR,
        )
        S.bound(
            st.select_slider,
            T("sidebar.users"),
            "users",
            "kv.users",
            options=C.users_options(s.users),
            fragments=IN_SIDEBAR,
        )
    with c2:
        dtypes = (
            C.kv_dtype_options(cfg, d0.gpu.arch, s.engine) if cfg is not None and d0 else ("auto",)
        )
        S.bound(
            st.selectbox,
            T("kv.dtype"),
            "kv_dtype",
            "kv.dtype",
            options=dtypes if s.kv_dtype in dtypes else (*dtypes, s.kv_dtype),
            help=T("kv.dtype_help"),
            fragments=ON_PAGE,
        )
        S.bound(
            st.select_slider,
            T("kv.fraction"),
            "memory_fraction",
            "kv.mem",
            options=(AUTO, *(round(0.5 + 0.01 * i, 2) for i in range(50))),
            to_widget=_auto,
            from_widget=_unauto,
            format_func=auto_or,
            help=T("kv.fraction_help"),
            fragments=ON_PAGE,
        )
    with c3:
        total = s.total_gpus
        for field in ("tp", "dp"):  # pin the attention TP size / DP-attention ranks, or leave auto
            S.bound(
                st.select_slider,
                T(f"kv.{field}"),
                field,
                f"kv.{field}",
                options=_pin_options(total, getattr(s, field)),
                to_widget=_auto,
                from_widget=_unauto,
                format_func=auto_or,
                help=T(f"kv.{field}_help"),
                fragments=ON_PAGE,
            )
        S.bound(
            st.selectbox,
            T("kv.ep"),
            "ep",
            "kv.ep",
            options=(AUTO, True, False),
            to_widget=_auto,
            from_widget=_unauto,
            format_func=on_off.__getitem__,
            help=T("kv.ep_help"),
            fragments=ON_PAGE,
        )
    return dtypes


def groups(d: Study) -> None:
    st.subheader(T("kv.groups"))
    rows = C.group_rows(d.kv, max(d.context, 1), current())
    at = C.tokens(d.context)
    tables.show(
        tables.frame(
            [
                {
                    "group": r.label,
                    "layers": r.layers,
                    "per_layer": r.per_layer_bytes_per_token,
                    "per_token": r.bytes_per_token,
                    "state": r.state_bytes,
                    "at_context": r.bytes_at_context,
                    "at_context_gib": C.in_gib(r.bytes_at_context),
                }
                for r in rows
            ],
            ["group", "layers", "per_layer", "per_token", "state", "at_context", "at_context_gib"],
        ),
        {
            "group": tables.text(T("kv.col.group")),
            "layers": tables.count(T("kv.col.layers")),
            "per_layer": tables.count(T("kv.col.per_layer"), T("kv.col.per_layer_help")),
            "per_token": tables.count(T("kv.col.per_token"), T("kv.col.per_token_help")),
            "state": tables.count(T("kv.col.state"), T("kv.col.state_help")),
            "at_context": tables.count(
                T("kv.col.at_context", context=at), T("kv.col.at_context_help")
            ),
            "at_context_gib": tables.decimal(T("kv.col.at_context_gib", context=at), 3),
        },
        key="kv.groups",
    )
    with st.expander(T("kv.group_formulas")):
        for r in rows:
            st.markdown(f"**{r.label}**")
            st.code(r.formula, language=None, wrap_lines=True)
        if d.kv.hybrid is not None:
            st.markdown(T("kv.hybrid_alignment"))
            st.code(say(d.kv.hybrid.formula(), current()), language=None, wrap_lines=True)


def memory(d: Study, dtypes: tuple[str, ...], users_asked: int) -> None:
    lang = current()
    at = C.tokens(d.context)
    grid = C.context_grid(C.chart_limit(d))
    left, right = st.columns(2)
    with left:
        charts.draw(
            charts.kv_stack(C.kv_vs_context(d.kv, grid), d.context),
            T("kv.chart_stack_caption", context=at),
        )
    with right:
        series = C.users_vs_context(d, dtypes, grid)
        if C.nothing_fits(series):  # an empty chart says why it is empty
            st.info(T("kv.chart_users_empty", reason=M.verdict(d, lang).reason))
        else:
            charts.draw(
                charts.users_fit(series, d.context, users_asked),
                T("kv.chart_users_caption", users=f"{users_asked:,}"),
            )
    breakdown = C.memory_breakdown(d, lang)
    charts.draw(charts.memory(breakdown), T("kv.chart_memory_caption"))
    tables.show(
        tables.frame(
            [
                {
                    "part": seg.name,
                    "gib": C.in_gib(seg.bytes),
                    "bytes": seg.bytes,
                    "share": breakdown.share(seg),
                    "formula": seg.formula,
                }
                for seg in breakdown.segments
            ],
            ["part", "gib", "bytes", "share", "formula"],
        ),
        {  # "How it is counted" beside the part it counts, in view at 1400 px
            "part": tables.text(T("kv.col.part")),
            "formula": tables.text(T("kv.col.formula")),
            "gib": tables.decimal(T("kv.col.gib"), 2),
            "share": tables.share(T("kv.col.share"), T("kv.col.share_help")),
            "bytes": tables.count(T("kv.col.bytes")),
        },
        key="kv.memory",
    )


def engines(d: Study) -> None:
    st.subheader(T("kv.engines"))
    compare = C.engine_comparison(d, current())
    if C.sglang_differs(d):
        st.warning(T("kv.sglang_differs"))
    else:
        st.caption(T("kv.sglang_same"))
    tables.show(
        tables.frame(
            [
                {
                    "differs": "≠" if r.differs else "",
                    "metric": r.metric,
                    "vllm": r.vllm,
                    "sglang": r.sglang,
                }
                for r in compare
            ],
            ["differs", "metric", "vllm", "sglang"],
        ),
        {
            "differs": tables.text("", T("kv.col.differs_help")),
            "metric": tables.text(T("kv.col.metric")),
            "vllm": tables.text(f"{ENGINE_LABELS['vllm']} {adapter('vllm').version}"),
            "sglang": tables.text(
                f"{ENGINE_LABELS['sglang']} {adapter('sglang').version}", width="medium"
            ),
        },
        key="kv.compare",
    )
    lang = current()
    notes = [  # each engine's reason, worded with its names already made inert
        T("kv.dtype_note", engine=ENGINE_LABELS[eng], note=say(v.kv_dtype.why, lang))
        for eng, v in d.engines.items()
        if v.kv_dtype.why is not None
    ]
    if notes:
        st.caption(" · ".join(notes))


@st.fragment(key=FRAGMENT)
def page() -> None:
    """The sliders and everything they drive. A fragment reruns with the arguments of the
    whole-page run that drew it: it reads the scenario itself."""
    S.sync_query_params()
    s = S.scenario()
    st.caption(T("kv.caption", model=s.model, n=s.total_gpus, gpu=s.gpu))
    controls(s, S.view().study)
    d = S.study_or_stop()
    st.divider()
    show.verdict(d)
    show.numbers(C.kv_headline(d, current()))
    show.numbers(C.fit_shown(d, current()))
    groups(d)
    memory(d, C.kv_dtype_options(d.config, d.gpu.arch, s.engine), s.users)
    engines(d)


st.title(T("nav.kv_cache"))
page()
