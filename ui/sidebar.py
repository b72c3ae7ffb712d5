"""The sidebar every page shares: language, model, hardware, engine, workload, the share link."""

from __future__ import annotations

import json
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from engine import scenario as SC
from engine.errors import InputError
from engine.hardware.gpus import all_gpus
from engine.model.loader import catalog_names, load_model
from engine.present.units import gib
from ui import lang
from ui import state as S
from ui.lang import T

MODES = ("catalog", "upload", "paste", "hub")


def json_error(data: str | bytes) -> str | None:
    """Where a config.json text stops being JSON, in words (None when it parses, or when what
    is wrong is not its syntax: the loader names that)."""
    try:
        json.loads(data)
    except json.JSONDecodeError as err:
        return T("error.json", line=err.lineno, column=err.colno, msg=err.msg)
    except (ValueError, RecursionError):
        return None
    return None


def _clear_error() -> None:
    st.session_state[S.MODEL_ERROR] = None


def _on_catalog() -> None:
    S.set_scenario(model=st.session_state["w.model"], source="catalog", digest=None)


def _on_upload() -> None:
    file = st.session_state.get("w.upload")
    if file is None:
        return
    data = file.getvalue()
    problem = json_error(data)
    if problem is None:
        try:
            loaded = load_model(data, name=file.name)
        except InputError as err:
            problem = str(err)
        else:
            S.use_model(loaded)
            return
    st.session_state[S.MODEL_ERROR] = T("error.upload", file=file.name, error=problem)


def _on_paste() -> None:
    from engine.model.loader import load_pasted

    text = st.session_state.get("w.paste", "")
    problem = json_error(text) if text.strip() else None
    if problem is None:
        try:
            loaded = load_pasted(text, name="pasted config.json")
        except InputError as err:
            problem = str(err)
        else:
            S.use_model(loaded)
            return
    st.session_state[S.MODEL_ERROR] = T("error.paste", error=problem)


def _on_hub() -> None:
    repo = str(st.session_state.get("w.hub", "")).strip()
    S.set_scenario(source="hub", model=repo, digest=None)


def _model_section() -> None:
    st.header(T("sidebar.model"))
    s = S.scenario()
    if "w.mode" not in st.session_state:
        st.session_state["w.mode"] = {"file": "upload"}.get(s.source, s.source)
    mode = st.radio(
        T("sidebar.source"),
        list(MODES),
        format_func=lang.labels("sidebar.mode", MODES).__getitem__,
        key="w.mode",
        horizontal=True,
        on_change=_clear_error,
    )
    if mode == "catalog":
        names = catalog_names()
        st.session_state["w.model"] = s.model if s.model in names else names[0]
        st.selectbox(T("sidebar.bundled"), names, key="w.model", on_change=_on_catalog)
    elif mode == "upload":
        st.file_uploader(T("sidebar.upload"), type=["json"], key="w.upload", on_change=_on_upload)
    elif mode == "paste":
        st.text_area(
            T("sidebar.paste"),
            key="w.paste",
            height=140,
            max_chars=2_000_000,
            placeholder='{"architectures": …}',
        )
        st.button(T("sidebar.paste_go"), key="w.paste_go", on_click=_on_paste)
    else:
        st.text_input(T("sidebar.hub"), key="w.hub", placeholder="org/name", max_chars=200)
        st.button(
            T("sidebar.hub_go"),
            key="w.hub_go",
            help=T("sidebar.hub_help"),
            on_click=_on_hub,
        )


def _hardware_section() -> None:
    st.header(T("sidebar.hardware"))
    gpus = {g.key: g for g in all_gpus()}
    S.bound(
        st.selectbox,
        T("sidebar.gpu"),
        "gpu",
        "w.gpu",
        options=list(gpus),
        format_func={
            k: T("sidebar.gpu_option", gpu=k, memory=gib(g.device_memory_bytes, 0))
            for k, g in gpus.items()
        }.__getitem__,
        help=T("sidebar.gpu_help"),
    )
    left, right = st.columns(2)
    with left:
        S.bound(
            st.number_input,
            T("sidebar.gpus"),
            "gpus_per_node",
            "w.gpus",
            min_value=1,
            max_value=SC.MAX_GPUS_PER_NODE,
            step=1,
        )
    with right:
        S.bound(
            st.number_input,
            T("sidebar.nodes"),
            "nodes",
            "w.nodes",
            min_value=1,
            max_value=SC.MAX_NODES,
            step=1,
        )
    st.header(T("sidebar.engine"))
    S.bound(
        st.radio,
        T("sidebar.engine_label"),
        "engine",
        "w.engine",
        options=list(SC.ENGINES),
        format_func=SC.ENGINE_LABELS.__getitem__,
        horizontal=True,
    )


def _workload_section() -> None:
    st.header(T("sidebar.workload"))
    S.bound(
        st.number_input,
        T("sidebar.context"),
        "context",
        "w.context",
        to_widget=lambda v: SC.DEFAULT_CONTEXT if v is None else v,
        min_value=1,
        max_value=SC.MAX_CONTEXT,
        step=1024,
        help=T("sidebar.context_help"),
    )
    S.bound(
        st.number_input,
        T("sidebar.users"),
        "users",
        "w.users",
        min_value=1,
        max_value=SC.MAX_USERS,
        step=1,
        help=T("sidebar.users_help"),
    )
    S.bound(
        st.slider,
        T("sidebar.prefix"),
        "prefix_overlap",
        "w.prefix",
        min_value=0,
        max_value=100,
        help=T("sidebar.prefix_help"),
    )
    S.bound(
        st.radio,
        T("sidebar.latency"),
        "latency",
        "w.latency",
        options=list(SC.LATENCY_PRIORITIES),
        format_func=lang.labels("sidebar.priority", SC.LATENCY_PRIORITIES).__getitem__,
        horizontal=True,
        help=T("sidebar.latency_help"),
    )


def share_link(v: S.View) -> str:
    """The link that reproduces this view (this page, the scenario and the language)."""
    query = "?" + urlencode(S.query())
    parts = urlsplit(str(getattr(st.context, "url", "") or ""))
    if not parts.netloc:  # no browser address (AppTest): the parameters alone
        return query
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", "", "")) + query


@st.fragment(key=S.SHARE_FRAGMENT)
def _share_section() -> None:
    """The share link: a fragment of its own, so a page control that moves the scenario can
    redraw it without the rest of the sidebar (it reads the view itself: a fragment reruns with
    the arguments of its first call)."""
    v = S.view()
    with st.expander(T("sidebar.share"), icon=":material/share:"):
        st.caption(T("sidebar.share_caption"))
        st.code(share_link(v), language=None, wrap_lines=True)
        if v.scenario.source == "file":
            st.caption(T("sidebar.share_file", model=v.scenario.model))


def draw() -> S.View:
    """Draw the sidebar and return the view every page reads."""
    with st.sidebar:
        lang.switch()
        _model_section()
        error_slot = st.empty()  # filled after the study (a hub fetch can fail)
        _hardware_section()
        _workload_section()
        s = S.scenario()
        if s.source == "hub":
            with st.spinner(T("sidebar.fetching", model=s.model)):
                view = S.build_view()
        else:
            view = S.build_view()
        # An error is said once, on the page (with what to do); here only that nothing shows,
        # never "Showing …" of the previous model
        shown = None if st.session_state.get(S.MODEL_ERROR) else view.study
        if shown is None:
            error_slot.caption(T("sidebar.nothing_shown"))
        else:
            st.caption(
                T(
                    "sidebar.showing",
                    model=shown.model.name,
                    source=T(f"common.source.{shown.model.source}"),
                    n=s.total_gpus,
                    gpu=shown.gpu.key,
                )
            )
        _share_section()
    return view
