"""The sidebar every page shares: model, hardware, engine, workload, and the share link."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from engine import scenario as SC
from engine.errors import InputError
from engine.hardware.gpus import all_gpus
from engine.model.loader import catalog_names, load_model
from ui import state as S

MODES = {"catalog": "Catalog", "upload": "Upload", "paste": "Paste JSON", "hub": "Hugging Face"}
PRIORITY_HELP = (
    "latency: tight inter-token latency; throughput: most tokens per GPU; balanced: between"
)


def _clear_error() -> None:
    st.session_state[S.MODEL_ERROR] = None


def _on_catalog() -> None:
    st.session_state[S.MODEL_ERROR] = None
    S.set_scenario(model=st.session_state["w.model"], source="catalog", digest=None)


def _on_upload() -> None:
    file = st.session_state.get("w.upload")
    if file is None:
        return
    try:
        loaded = load_model(file.getvalue(), name=file.name)
    except InputError as err:
        st.session_state[S.MODEL_ERROR] = f"{file.name}: {err}"
        return
    S.use_model(loaded)


def _on_paste() -> None:
    from engine.model.loader import load_pasted

    text = st.session_state.get("w.paste", "")
    try:
        loaded = load_pasted(text, name="pasted config.json")
    except InputError as err:
        st.session_state[S.MODEL_ERROR] = f"Pasted config.json: {err}"
        return
    S.use_model(loaded)


def _on_hub() -> None:
    repo = str(st.session_state.get("w.hub", "")).strip()
    st.session_state[S.MODEL_ERROR] = None
    S.set_scenario(source="hub", model=repo, digest=None)


def _model_section() -> None:
    st.header("Model")
    s = S.scenario()
    if "w.mode" not in st.session_state:
        st.session_state["w.mode"] = {"file": "upload"}.get(s.source, s.source)
    mode = st.radio(
        "Source",
        list(MODES),
        format_func=MODES.__getitem__,
        key="w.mode",
        horizontal=True,
        on_change=_clear_error,
    )
    if mode == "catalog":
        names = catalog_names()
        st.session_state["w.model"] = s.model if s.model in names else names[0]
        st.selectbox("Bundled model (type to search)", names, key="w.model", on_change=_on_catalog)
    elif mode == "upload":
        st.file_uploader("config.json", type=["json"], key="w.upload", on_change=_on_upload)
    elif mode == "paste":
        st.text_area(
            "config.json text",
            key="w.paste",
            height=140,
            max_chars=2_000_000,
            placeholder='{"architectures": …}',
        )
        st.button("Load pasted JSON", key="w.paste_go", on_click=_on_paste)
    else:
        st.text_input("Hugging Face id", key="w.hub", placeholder="org/name", max_chars=200)
        st.button(
            "Fetch config.json",
            key="w.hub_go",
            help="Downloads config.json only (no weights)",
            on_click=_on_hub,
        )


def _hardware_section() -> None:
    st.header("Hardware")
    gpus = {g.key: g for g in all_gpus()}
    S.bound(
        st.selectbox,
        "GPU",
        "gpu",
        "w.gpu",
        options=list(gpus),
        format_func=lambda k: f"{k} · {gpus[k].memory_label}",
    )
    left, right = st.columns(2)
    with left:
        S.bound(
            st.number_input,
            "GPUs per node",
            "gpus_per_node",
            "w.gpus",
            min_value=1,
            max_value=SC.MAX_GPUS_PER_NODE,
            step=1,
        )
    with right:
        S.bound(
            st.number_input,
            "Nodes",
            "nodes",
            "w.nodes",
            min_value=1,
            max_value=SC.MAX_NODES,
            step=1,
        )
    st.header("Engine")
    S.bound(
        st.radio,
        "Serving engine",
        "engine",
        "w.engine",
        options=list(SC.ENGINES),
        format_func=SC.ENGINE_LABELS.__getitem__,
        horizontal=True,
    )


def _workload_section() -> None:
    st.header("Workload")
    S.bound(
        st.number_input,
        "Context length (tokens)",
        "context",
        "w.context",
        to_widget=lambda v: 32_768 if v is None else v,
        min_value=1,
        max_value=SC.MAX_CONTEXT,
        step=1024,
        help="Prompt + output tokens per request",
    )
    S.bound(
        st.number_input,
        "Concurrent users",
        "users",
        "w.users",
        min_value=1,
        max_value=SC.MAX_USERS,
        step=1,
    )
    S.bound(
        st.slider,
        "Prefix overlap (%)",
        "prefix_overlap",
        "w.prefix",
        min_value=0,
        max_value=100,
        help="How much of each prompt repeats an earlier one (system prompt, chat history)",
    )
    S.bound(
        st.radio,
        "Latency priority",
        "latency",
        "w.latency",
        options=list(SC.LATENCY_PRIORITIES),
        horizontal=True,
        help=PRIORITY_HELP,
    )


def _share_section(v: S.View) -> None:
    with st.expander("Share this view"):
        st.caption("The address bar already holds this view. Page path + these parameters:")
        st.code("?" + urlencode(SC.to_query(v.scenario)), language=None, wrap_lines=True)
        note = SC.link_source_note(v.scenario)
        if note:
            st.caption(note)


def draw() -> S.View:
    """Draw the sidebar and return the view every page reads."""
    with st.sidebar:
        _model_section()
        error_slot = st.empty()  # filled after the study (a hub fetch can fail)
        _hardware_section()
        _workload_section()
        s = S.scenario()
        if s.source == "hub":
            with st.spinner(f"Reading config.json for {s.model}…"):
                view = S.build_view()
        else:
            view = S.build_view()
        err = st.session_state.get(S.MODEL_ERROR) or view.error
        if err:
            error_slot.error(err)
        if view.study is not None:
            st.caption(
                f"Showing **{view.study.model.name}** ({view.study.model.source}) on "
                f"{s.total_gpus} × {view.study.gpu.key}"
            )
        _share_section(view)
    return view
