"""The app's one state object in ``st.session_state``: the Scenario, mirrored in
``st.query_params``, and the Study every page reads.

Widgets do not own the scenario: each widget has its own key, is seeded from the scenario before
it is drawn, and writes back through an ``on_change`` callback. That keeps two widgets for one
value (the sidebar's context and the KV page's slider) in step, and keeps values alive across
page switches (Streamlit drops the state of widgets a page does not draw).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from engine.decision import Decision
from engine.errors import InputError
from engine.i18n import DEFAULT_LANG
from engine.model import store
from engine.model.loader import LoadedModel
from engine.scenario import Scenario, from_query, to_query
from engine.study import Study, is_heavy, study
from engine.text.safe import Markdown
from engine.text.words import say
from ui import busy, lang, show
from ui.lang import T
from ui.show import Problem

SCENARIO = "pb.scenario"
WARNINGS = "pb.warnings"
MODEL_ERROR = "pb.model_error"  # the last upload / paste / fetch error, shown in sidebar and page
VIEW = "pb.view"


def init() -> None:
    """First run of a session: read the link. Later runs keep the session's scenario."""
    lang.init()
    if SCENARIO in st.session_state:
        return
    parsed = from_query(st.query_params.to_dict())
    st.session_state[SCENARIO] = parsed.scenario
    st.session_state[WARNINGS] = list(parsed.notes)
    st.session_state[MODEL_ERROR] = None


def scenario() -> Scenario:
    value = st.session_state[SCENARIO]
    assert isinstance(value, Scenario)
    return value


def set_scenario(*, keep_warnings: bool = False, **changes: Any) -> None:
    """Apply changes. A user's change replaces the warnings and the model error shown so far
    (they were about the old scenario); the app's own fallbacks keep them."""
    old: list[Decision | Problem] = (
        list(st.session_state.get(WARNINGS, [])) if keep_warnings else []
    )
    if not keep_warnings:
        st.session_state[MODEL_ERROR] = None
    try:
        new = scenario().replace(**changes)
    except InputError as err:
        st.session_state[WARNINGS] = [*old, Problem(err, "error.not_applied")]
        return
    st.session_state[SCENARIO] = new
    st.session_state[WARNINGS] = old


def display_model(loaded: LoadedModel) -> LoadedModel:
    """``loaded`` under a name fit to show: a file name's control characters and line breaks
    become spaces, at most 200 characters (the Scenario's bound)."""
    name = " ".join("".join(c if c.isprintable() else " " for c in loaded.name).split())[:200]
    name = name or "uploaded config.json"
    return loaded if name == loaded.name else dataclasses.replace(loaded, name=name)


# Each upload, paste or hub fetch (the sidebar's, the Lint page's) reads a config of up to 8 MiB:
# a session gets this many, so one browser tab cannot keep the server parsing without end.
MAX_LOADS_PER_SESSION = 30
LOADS = "pb.loads"


def may_load(say: bool = True) -> bool:
    """Count a load against the session's allowance; False past it (with the error set when
    ``say``; the Lint page's fetch then lints against a stand-in config, as offline)."""
    n = int(st.session_state.get(LOADS, 0))
    if n >= MAX_LOADS_PER_SESSION:
        if say:
            st.session_state[MODEL_ERROR] = Problem(None, "error.too_many", (("n", n),))
        return False
    st.session_state[LOADS] = n + 1
    return True


def use_model(held: store.Held) -> None:
    """Show a config the user uploaded or pasted (held in memory by its digest)."""
    loaded = display_model(held.model)
    digest = store.keep(store.Held(loaded, held.digest))  # the name is not in the digest
    st.session_state[MODEL_ERROR] = None
    set_scenario(source="file", model=loaded.name, digest=digest)


def query() -> dict[str, str]:
    """The link's query parameters: the scenario, and the language when it is not English."""
    target = to_query(scenario())
    if lang.current() != DEFAULT_LANG:
        target["lang"] = lang.current()
    return target


def sync_query_params() -> None:
    """Write the scenario into the URL (only when it changed, so reruns send nothing)."""
    target = query()
    if st.query_params.to_dict() != target:
        st.query_params.from_dict(target)


# Fragments (``st.fragment``): a page's own controls rerun the page's fragment and the sidebar's,
# not the whole page. The sidebar is a fragment of its own (app.py) so that a page control can
# redraw it (the sidebar shows the same scenario); a change made in the sidebar itself reruns
# the whole page (``sidebar_fragment``).
SIDEBAR_FRAGMENT = "sidebar"
SHARE_FRAGMENT = "sidebar.share"  # the sidebar's share link, inside the sidebar's fragment
FULL_RUN = "pb.full_run"  # set by app.py before it draws the sidebar in a whole-page run
# set by a page control: the sidebar fragment redraws instead of rerunning the page, for this
# scenario and language only (a token left behind by a cut-short run cannot hide a later change)
SYNC = "pb.sync"


def _on_change(
    field: str, wkey: str, convert: Callable[[Any], Any] | None, fragments: tuple[str, ...] = ()
) -> None:
    value = st.session_state[wkey]
    before = bool(st.session_state.get(WARNINGS))
    set_scenario(**{field: convert(value) if convert else value})
    # warnings (shown above the page, outside any fragment) need the whole page to come or go
    if fragments and not before and not st.session_state.get(WARNINGS):
        if SIDEBAR_FRAGMENT in fragments:
            st.session_state[SYNC] = (scenario(), lang.current())
        st.rerun(list(fragments))
    if fragments:
        st.rerun()


def sidebar_fragment(draw: Callable[[], object]) -> None:
    """Run ``draw`` (the sidebar) as the fragment a page control can rerun. In a whole-page run,
    or when a page control asked for it, it draws; when one of its own widgets changed, the
    scenario changed for every part of the page: it reruns the page instead."""
    whole_page = bool(st.session_state.pop(FULL_RUN, False))
    synced = st.session_state.pop(SYNC, None) == (scenario(), lang.current())
    if not whole_page and not synced:
        st.rerun()
    draw()
    sync_query_params()


def bound(
    widget: Callable[..., Any],
    label: str,
    field: str,
    wkey: str,
    *,
    to_widget: Callable[[Any], Any] | None = None,
    from_widget: Callable[[Any], Any] | None = None,
    fragments: tuple[str, ...] = (),
    **kwargs: Any,
) -> Any:
    """Draw ``widget`` showing ``scenario().<field>``; a change writes it back. ``fragments``:
    the keys of the fragments a change reruns (default: the whole page)."""
    value = getattr(scenario(), field)
    st.session_state[wkey] = to_widget(value) if to_widget else value
    args = (field, wkey, from_widget, fragments)
    return widget(label, key=wkey, on_change=_on_change, args=args, **kwargs)


# --- the study every page reads --------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """The session's scenario and its Study or its error. The session keeps the Study only
    weakly: the process's Study cache owns it (and its memory budget lets it go), so a session
    left open does not keep a large config alive; a Study the cache let go is asked for again."""

    scenario: Scenario
    error: InputError | None
    held: weakref.ref[Study] | None = field(default=None, compare=False, repr=False)

    @property
    def study(self) -> Study | None:
        if self.error is not None:
            return None
        kept = self.held() if self.held is not None else None
        return kept if kept is not None else study(self.scenario)


def build_view() -> View:
    """The Study of the session's scenario; a scenario that cannot be studied shows its error
    and nothing stale. A model that fails to load falls back to the last good catalog model only
    when the failure is the model itself (choosing any other source recovers)."""
    s = scenario()
    try:
        with busy.heavy(is_heavy(s)):
            view = View(s, None, weakref.ref(study(s)))
    except InputError as err:
        if s.calibration is not None and err.field.startswith("calibration"):
            # measured on another GPU than the one now chosen: the speed goes back to the
            # catalog's figures, and the page says why (the Measure page could not be reached)
            st.session_state[SCENARIO] = s.replace(calibration=None)
            warnings = list(st.session_state.get(WARNINGS, []))
            st.session_state[WARNINGS] = [*warnings, Problem(err, "error.calibration_dropped")]
            return build_view()
        view = View(s, show.bare(err))
    st.session_state[VIEW] = view
    return view


def view() -> View:
    """The view the sidebar built, or a new one if the scenario moved on since (a fragment that
    runs before the sidebar's in one rerun)."""
    value = st.session_state.get(VIEW)
    if not isinstance(value, View) or value.scenario != scenario():
        return build_view()
    return value


def study_or_stop() -> Study:
    """The page's Study. When the model the user just gave cannot be read, or the scenario
    cannot be studied, say what is wrong in the main area and stop: no number of the previous
    model stays on screen as if it were the answer."""
    v = view()
    err = st.session_state.get(MODEL_ERROR)
    if isinstance(err, Problem):
        show.problem(err, st.error, icon=":material/error:")
        st.info(T("error.model_hint"), icon=":material/info:")
        st.stop()
    d = v.study
    if d is None:
        show.problem(Problem(v.error, "error.cannot_plan"), st.error, icon=":material/error:")
        st.stop()
    assert d is not None
    note = d.model.note
    if note is not None:
        st.info(Markdown(say(note, lang.current())), icon=":material/info:")
    return d
