"""The app's one state object in ``st.session_state``, mirrored in ``st.query_params``.

``ViewState`` (engine/share.py) is the canonical state. Widgets do not own it: each widget
has its own key, is seeded from the state before it is drawn, and writes back through an
``on_change`` callback. That keeps two widgets for one value (the sidebar's context and the
KV page's slider) in step, and keeps values alive across page switches (Streamlit drops the
state of widgets a page does not draw).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from engine.diagnose import Diagnosis, Options, diagnose
from engine.errors import InputError
from engine.hardware.gpus import Gpu, lookup_gpu
from engine.model.loader import LoadedModel, load_catalog, load_hub
from engine.present import share

STATE = "pb.state"
WARNINGS = "pb.warnings"
CUSTOM = "pb.custom"  # LoadedModel from an upload or a paste
HUB = "pb.hub"  # hub id -> LoadedModel, fetched this session
MODEL_ERROR = "pb.model_error"  # the last upload / paste / fetch error, shown in the sidebar
VIEW = "pb.view"


def init() -> None:
    """First run of a session: read the link. Later runs keep the session's state."""
    if STATE in st.session_state:
        return
    parsed = share.from_query(st.query_params.to_dict())
    st.session_state[STATE] = parsed.state
    st.session_state[WARNINGS] = list(parsed.warnings)
    st.session_state[HUB] = {}
    st.session_state[MODEL_ERROR] = None


def state() -> share.ViewState:
    value = st.session_state[STATE]
    assert isinstance(value, share.ViewState)
    return value


def set_state(*, keep_warnings: bool = False, **changes: Any) -> None:
    """Apply changes, then the cross-field rules. A user's change replaces the warnings
    shown so far (they were about the old state); the app's own fallbacks keep them."""
    old: list[str] = list(st.session_state.get(WARNINGS, [])) if keep_warnings else []
    try:
        new = state().replace(**changes)
    except InputError as err:
        st.session_state[WARNINGS] = [*old, f"Not applied: {err}"]
        return
    new, notes = share.reconcile(new)
    st.session_state[STATE] = new
    st.session_state[WARNINGS] = [*old, *notes]


def sync_query_params() -> None:
    """Write the state into the URL (only when it changed, so reruns send nothing)."""
    target = share.to_query(state())
    if st.query_params.to_dict() != target:
        st.query_params.from_dict(target)


def _on_change(field: str, wkey: str, convert: Callable[[Any], Any] | None) -> None:
    value = st.session_state[wkey]
    set_state(**{field: convert(value) if convert else value})


def bound(
    widget: Callable[..., Any],
    label: str,
    field: str,
    wkey: str,
    *,
    to_widget: Callable[[Any], Any] | None = None,
    from_widget: Callable[[Any], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Draw ``widget`` showing ``state().<field>``; a change writes it back."""
    value = getattr(state(), field)
    st.session_state[wkey] = to_widget(value) if to_widget else value
    return widget(label, key=wkey, on_change=_on_change, args=(field, wkey, from_widget), **kwargs)


# --- the model, the GPU and the diagnosis every page reads -----------------------------------


@dataclass(frozen=True)
class View:
    state: share.ViewState
    model: LoadedModel
    gpu: Gpu
    options: Options
    diagnosis: Diagnosis | None
    error: str | None

    @property
    def model_id(self) -> str:
        """What an engine's command line would load: the hub or catalog id; a placeholder
        path for uploads and pastes."""
        if self.model.source in ("catalog", "hub"):
            return self.model.name
        return "/path/to/model"


def fetch_hub(repo_id: str) -> LoadedModel:
    """The one place the app touches the network: only when the user (or a link they
    opened) asked for a hub model."""
    cache: dict[str, LoadedModel] = st.session_state[HUB]
    if repo_id not in cache:
        with st.spinner(f"Fetching config.json for {repo_id} from the Hugging Face hub…"):
            cache[repo_id] = load_hub(repo_id)
    return cache[repo_id]


def resolve_model() -> LoadedModel:
    s = state()
    if s.source == "hub" and s.hub:
        try:
            return fetch_hub(s.hub)
        except InputError as err:
            st.session_state[MODEL_ERROR] = str(err)
            set_state(source="catalog", hub=None, keep_warnings=True)
            return load_catalog(state().model)
    if s.source in ("upload", "paste"):
        custom = st.session_state.get(CUSTOM)
        if isinstance(custom, LoadedModel):
            return custom
        set_state(source="catalog", keep_warnings=True)
    return load_catalog(state().model)


def build_view() -> View:
    model = resolve_model()
    s = state()
    gpu = lookup_gpu(s.gpu)
    opts = share.options_for(s, gpu.key, gpu.arch, gpu.memory_bytes)
    try:
        d = diagnose(model.config, opts)
    except InputError as err:
        if err.field == "kv_dtype" and s.kv_dtype != "auto":
            st.session_state[WARNINGS] = [
                *st.session_state[WARNINGS],
                f"KV dtype {s.kv_dtype} does not apply to {model.name} ({err.expected}); using "
                "auto.",
            ]
            set_state(kv_dtype="auto", keep_warnings=True)
            return build_view()
        view = View(state(), model, gpu, opts, None, str(err))
    else:
        view = View(state(), model, gpu, opts, d, None)
    st.session_state[VIEW] = view
    return view


def view() -> View:
    value = st.session_state[VIEW]
    assert isinstance(value, View)
    return value


def diagnosis_or_stop() -> Diagnosis:
    """The page's diagnosis; when the choices make it impossible, say why and stop."""
    v = view()
    if v.diagnosis is None:
        st.error(f"Cannot size {v.model.name} with these choices — {v.error}")
        st.stop()
    assert v.diagnosis is not None
    return v.diagnosis
