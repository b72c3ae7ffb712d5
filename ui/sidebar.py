"""The sidebar every page shares: language, model, hardware, engine, workload, the share link."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from engine import scenario as SC
from engine.errors import InputError
from engine.hardware.gpus import all_gpus
from engine.model.config import MAX_CONFIG_BYTES, MAX_CONFIG_MIB
from engine.model.loader import catalog_names
from engine.text.units import gib
from ui import busy, lang, worker
from ui import state as S
from ui.lang import T
from ui.show import Problem

MODES = ("catalog", "upload", "paste", "hub")


MAX_LOADS_PER_SESSION = S.MAX_LOADS_PER_SESSION
# a failed paste longer than this leaves the box empty (nobody fixes such a text in place)
KEEP_FAILED_PASTE_CHARS = 64 * 1024


def _clear_error() -> None:
    st.session_state[S.MODEL_ERROR] = None


def _on_catalog() -> None:
    S.set_scenario(model=st.session_state["w.model"], source="catalog", digest=None)


def _on_upload() -> None:
    file = st.session_state.get("w.upload")
    if file is None or not S.may_load():
        return
    # one parse: the loader refuses an oversized file before reading it and names a JSON
    # syntax error's line and column itself
    name = str(file.name)
    try:
        with busy.heavy(file.size > busy.HEAVY_TEXT_BYTES):
            S.use_model(worker.read(file.getvalue(), name))
    except InputError as err:
        st.session_state[S.MODEL_ERROR] = Problem(err, "error.upload", (("file", name),))


def _on_paste() -> None:
    text = st.session_state.get("w.paste", "")
    if not S.may_load():
        return
    try:
        with busy.heavy(len(text) > busy.HEAVY_TEXT_BYTES):
            S.use_model(worker.read(text, "pasted config.json"))
    except InputError as err:
        st.session_state[S.MODEL_ERROR] = Problem(err, "error.paste")
        if len(text) <= KEEP_FAILED_PASTE_CHARS:
            return
    # read: the session need not keep the text (up to 8 MiB). Deleting the key drops the value
    # the browser sent (Streamlit keeps it until the browser sends another); setting it empties
    # the box in the browser
    del st.session_state["w.paste"]
    st.session_state["w.paste"] = ""


def _on_hub() -> None:
    repo = str(st.session_state.get("w.hub", "")).strip()
    if not S.may_load():
        return
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
        st.file_uploader(
            T("sidebar.upload"),
            type=["json"],
            key="w.upload",
            on_change=_on_upload,
            max_upload_size=MAX_CONFIG_MIB,
        )
    elif mode == "paste":
        st.text_area(
            T("sidebar.paste"),
            key="w.paste",
            height=140,
            max_chars=MAX_CONFIG_BYTES,
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


def _options(row: SC.FieldRow) -> dict[str, Any]:
    """A choice field's options and their words (the GPU catalog for the GPU)."""
    c = row.spec.control
    assert c is not None
    if row.name == "gpu":
        gpus = {g.key: g for g in all_gpus()}
        words = {
            k: T("sidebar.gpu_option", gpu=k, memory=gib(g.device_memory_bytes, 0))
            for k, g in gpus.items()
        }
        return {"options": list(gpus), "format_func": words.__getitem__}
    if row.name == "engine":
        return {"options": list(row.choices), "format_func": SC.ENGINE_LABELS.__getitem__}
    kwargs: dict[str, Any] = {"options": list(row.choices)}
    if c.options:
        kwargs["format_func"] = lang.labels(c.options, row.choices).__getitem__
    return kwargs


def _number(row: SC.FieldRow, value: float | None) -> float | None:
    if value is None:
        return None
    return int(value) if row.kind is int else float(value)


def control(row: SC.FieldRow) -> None:
    """The widget the table declares for ``row`` (engine/scenario.py), bound to its field."""
    c = row.spec.control
    assert c is not None
    kwargs: dict[str, Any] = {"help": T(c.help) if c.help else None}
    to_widget = from_widget = None
    if c.widget == "multiselect":  # a comma-separated list of GPU keys (compare_gpus)
        gpus = {g.key: g for g in all_gpus()}
        kwargs["options"] = list(gpus)

        def to_widget(v: Any) -> Any:
            return [k for k in (v or "").split(",") if k in gpus]

        def from_widget(v: Any) -> Any:
            return ",".join(v) or None

    elif c.widget in ("select", "radio"):
        kwargs |= _options(row)
        if c.widget == "radio":
            kwargs["horizontal"] = True
    else:
        step = c.step if c.step is not None else 1
        low = row.low if row.low is not None else 0
        if row.low is not None and row.low <= 0 and row.kind is float and c.widget == "number":
            low = float(step) / 10  # a target must be above zero
        kwargs |= {
            "min_value": _number(row, low),
            "max_value": _number(row, row.high),
            "step": _number(row, step),
        }
        if row.spec.auto:  # None is the model's own limit: the widget shows the default
            default = row.default

            def to_widget(v: Any, d: Any = default) -> Any:
                return d if v is None else v

    names = {"select": "selectbox", "radio": "radio", "number": "number_input", "slider": "slider",
             "multiselect": "multiselect"}  # fmt: skip
    widget: Callable[..., Any] = getattr(st, names[c.widget])
    S.bound(
        widget,
        T(c.label),
        row.name,
        f"w.{row.name}",
        to_widget=to_widget,
        from_widget=from_widget,
        **kwargs,
    )


def _section(section: SC.Section, title: str, columns: int = 1) -> None:
    """The controls of one section of the table, in its order."""
    rows = [r for r in SC.fields() if r.spec.control and r.spec.control.section == section]
    st.header(T(title))
    if columns == 1:
        for row in rows:
            control(row)
        return
    for i in range(0, len(rows), columns):
        for col, row in zip(st.columns(columns), rows[i : i + columns], strict=False):
            with col:
                control(row)


def _hardware_section() -> None:
    _section("hardware", "sidebar.hardware")
    _section("engine", "sidebar.engine")


def _expander(section: SC.Section, title: str, icon: str) -> None:
    """The controls of one section of the table, folded under ``title`` with its caption."""
    with st.expander(T(f"sidebar.{title}"), icon=icon):
        st.caption(T(f"sidebar.{title}_caption"))
        for row in SC.fields():
            if row.spec.control and row.spec.control.section == section:
                control(row)


def _workload_section() -> None:
    _section("workload", "sidebar.workload")
    _expander("targets", "targets", ":material/speed:")
    _expander("traffic", "traffic", ":material/payments:")


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
