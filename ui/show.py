"""Draw engine results: every number with its formula, the verdict, gates, sources, downloads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlencode

import streamlit as st

from engine.alternatives import Alternative, ask
from engine.alternatives import alternatives as find_alternatives
from engine.alternatives import known as alternatives_known
from engine.errors import InputError
from engine.i18n import DEFAULT_LANG
from engine.present import messages as M
from engine.present.artifacts import Artifact
from engine.present.charts_data import Shown
from engine.study import Study
from engine.text.safe import Markdown, inert, plain
from engine.text.sources import SourceRef, clean, collect
from engine.text.words import say
from ui import busy, tables
from ui.lang import T, current

P = ParamSpec("P")
SOURCE_KEY = "pb-sources"  # tools.page_text reads it: a citation is quoted, not worded
T_ = TypeVar("T_")


def number(s: Shown) -> None:
    """A metric (the exact bytes on hover) and, under it, the formula with the config's values
    plugged in."""
    # Streamlit 1.67 renders a metric's value as Markdown, like its label
    value = inert(s.value, one_line=True)
    st.metric(inert(s.label), value, help=inert(s.help) if s.help else None)
    with st.expander(T("common.formula")):
        st.code(plain(s.formula), language=None, wrap_lines=True)


def metrics(items: Sequence[Shown], per_row: int = 4) -> None:
    """Metrics whose formula is one line: it goes in the tooltip, not an expander."""
    for col, item in zip(st.columns(per_row), items, strict=False):
        col.metric(
            inert(item.label),
            inert(item.value, one_line=True),
            delta=inert(item.range, one_line=True) or None,
            delta_color="off",
            delta_arrow="off",
            help=inert(item.formula),
        )


def numbers(items: Sequence[Shown], per_row: int = 3) -> None:
    for start in range(0, len(items), per_row):
        row = items[start : start + per_row]
        for col, item in zip(st.columns(per_row), row, strict=False):
            with col:
                number(item)


def or_error(call: Callable[P, T_], *args: P.args, **kwargs: P.kwargs) -> T_ | None:
    """Call an engine function; on input it rejects, say why in the reader's language and
    return None."""
    try:
        return call(*args, **kwargs)
    except InputError as err:
        problem(err)
        return None


@dataclass(frozen=True)
class Problem:
    """Something to tell the reader about their input, kept (in session state) until a page
    draws it, and worded only then, in the language of that moment: the engine's refusal
    (``err``) inside the page's own message (``frame``, a catalog key whose ``{error}`` is the
    refusal, and its other ``params``: a file name, a count)."""

    err: InputError | None
    frame: str = ""
    params: tuple[tuple[str, str | int], ...] = ()

    def __post_init__(self) -> None:
        if self.err is not None:
            bare(self.err)


def bare(err: InputError) -> InputError:
    """``err`` without what it holds of the call that failed: its traceback's frames (their
    locals: a pasted text, a parsed config) and the exception it replaced (a JSON error keeps the
    whole text). A refusal kept in session state then holds only its words."""
    err.__traceback__ = None
    err.__context__ = None
    err.__cause__ = None
    return err


def refusal(err: InputError) -> Markdown:
    """A refused input in the reader's language: the field (as written) and what it expects,
    worded by the refusal's code; every name and value in it is inert."""
    return Markdown(say(err.decision, current()))


def problem(
    item: Problem | InputError, box: Callable[..., Any] = st.error, icon: str | None = None
) -> None:
    """Draw a refusal in ``box`` (``st.error``, ``st.warning``), in the reader's language."""
    p = item if isinstance(item, Problem) else Problem(item)
    text = refusal(p.err) if p.err is not None else Markdown("")
    if p.frame:
        text = T(p.frame, **dict(p.params), error=text)
    box(text, icon=icon)


def table(
    rows: Sequence[Mapping[str, Any]], height: int | None = None, key: str | None = None
) -> None:
    """A list of dicts as a table (the keys are the headers): numbers keep thousands
    separators, text columns are sized to fit and wrap past a limit, a missing value shows as
    "—". Pages with their own column configs use ``ui.tables`` directly."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    frame = tables.frame(rows, columns)
    config: dict[str, Any] = {}
    for name in columns:
        values = [row.get(name) for row in rows if row.get(name) is not None]
        numeric = values and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        )
        config[name] = tables.count(name) if numeric else tables.text(name)
    rows_shown = None if height is None else max(1, (height - 38) // 35)
    tables.show(frame, config, rows=rows_shown, key=key)


VERDICT_BOX = {
    "runs": st.success,
    "misses_targets": st.warning,
    "fewer_users": st.warning,
    "shorter_context": st.warning,
    "does_not_fit": st.error,
    "blocked": st.error,
}
VERDICT_ICON = {
    "runs": ":material/check_circle:",
    "misses_targets": ":material/speed:",
    "fewer_users": ":material/group:",
    "shorter_context": ":material/short_text:",
    "does_not_fit": ":material/block:",
    "blocked": ":material/block:",
}


def verdict(study: Study) -> None:
    """The answer first: runs / runs with a shorter context / does not fit, and the reason."""
    v = M.verdict(study, current())
    text: str = T("verdict.line", title=v.title, reason=v.reason)
    if v.tips:
        text += "\n\n" + "\n".join(T("verdict.tip_line", tip=tip) for tip in v.tips)
    VERDICT_BOX[v.status](text, icon=VERDICT_ICON[v.status])


def alternatives(study: Study, limit: int = 3) -> None:
    """Under the verdict: the first re-checked changes that meet the ask, each a link that
    opens the changed scenario (its share query) on this page, with what it then gives."""
    with busy.heavy(not alternatives_known(study)):  # up to a few dozen Studies
        alts = find_alternatives(study)
    if not alts:
        return
    lang = current()

    def line(a: Alternative) -> str:
        # the link keeps the reader's language, as every link of the app does
        query = dict(a.query) | ({"lang": lang} if lang != DEFAULT_LANG else {})
        return f"- [{say(a.what, lang)}](?{urlencode(query)}) — {say(a.result, lang)}"

    st.markdown(f"**{say(ask(study), lang)}:**\n" + "\n".join(line(a) for a in alts[:limit]))
    if len(alts) > limit:
        with st.expander(T("verdict.more_alternatives", n=len(alts) - limit)):
            st.markdown("\n".join(line(a) for a in alts[limit:]))


GATE_MARK = {"pass": ":green[**{}**]", "warn": ":orange[**{}**]", "fail": ":red[**{}**]"}


def gates(study: Study) -> None:
    """Each hardware gate: its status, name, reason and fix."""
    for g in M.gates(study, current()):
        mark = Markdown(GATE_MARK.get(g.status, "**{}**").format(T(f"gate.status.{g.status}")))
        line: str = T("gate.line", mark=mark, name=g.title, reason=g.reason)
        if g.tips:
            line += "  \n  " + T("gate.fix", fix=g.tips[0])
        st.markdown("- " + line)


def sources(
    items: Iterable[str | SourceRef],
    *,
    expanded: bool = False,
    inline: bool = False,
    notes: Sequence[str] = (),
) -> None:
    """A "Sources" expander (``inline``: a captioned list, for use inside another expander):
    each source once, as a readable title and a link where one exists (never the fact base's
    tags). ``notes``: what the data files say about these facts, under the list."""
    refs: list[SourceRef] = []
    texts: list[str] = []
    for item in items:
        if isinstance(item, SourceRef):
            refs.append(item)
        elif item:
            texts.append(item)
    refs = list(dict.fromkeys([*refs, *collect(texts)]))
    if not refs:
        return
    body = "\n".join(f"- {r.markdown()}" for r in refs)
    remarks = "\n\n".join(T("common.data_note", note=clean(n)) for n in notes)
    if inline:
        st.caption(T("common.sources"))
        _quoted(body, remarks)
        return
    with st.expander(T("common.sources"), expanded=expanded, icon=":material/menu_book:"):
        _quoted(body, remarks)


SOURCES_SEEN = "pb.sources_drawn"


def new_run() -> None:
    """A new script run: the sources lists it draws are numbered from 1 again."""
    st.session_state[SOURCES_SEEN] = 0


def _source_key() -> str:
    """The key of the next container of quoted text: ``pb-sources-<n>``, numbered per run."""
    n = int(st.session_state.get(SOURCES_SEEN, 0)) + 1
    st.session_state[SOURCES_SEEN] = n
    return f"{SOURCE_KEY}-{n}"


def _quoted(body: str, remarks: str) -> None:
    """The list of sources in a container keyed ``pb-sources-<n>``: the titles are quoted as the
    sources title themselves (the browser's language check reads the key); the app's own remarks
    on them follow outside it, in the reader's language."""
    with st.container(key=_source_key()):
        st.markdown(body)
    if remarks:
        st.markdown(remarks)


def download(artifact: Artifact, key: str, blocked: bool = False) -> None:
    """A download button for an artefact the page shows (no rerun when clicked; the file is
    written when the button is clicked, not on every rerun); a blocked plan's launch files say
    on their button that they stop with the reason."""
    what = T(f"download.{artifact.kind}")
    launch = artifact.kind in ("script", "docker", "kubernetes")
    if blocked and launch:
        label_key = (
            "download.blocked_kubernetes" if artifact.kind == "kubernetes" else ("download.blocked")
        )
        label, tip = T(label_key, what=what), T("download.blocked_help", file=artifact.file_name)
    else:
        label, tip = what, T("download.help", file=artifact.file_name)
    st.download_button(
        label,
        lambda: artifact.text,
        file_name=artifact.file_name,
        mime=artifact.mime,
        key=key,
        icon=":material/block:" if blocked and launch else ":material/download:",
        on_click="ignore",
        help=tip,
    )


def downloads(artifacts: Sequence[Artifact], key: str, blocked: bool = False) -> None:
    """Download buttons in one row."""
    cols = st.columns(max(len(artifacts), 1))
    for col, a in zip(cols, artifacts, strict=False):
        with col:
            download(a, f"{key}.{a.kind}", blocked)
