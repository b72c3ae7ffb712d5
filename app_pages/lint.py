"""Lint an inherited command: paste a vLLM / SGLang launch command, a launch script, a docker run
or a pod manifest; see every finding as a row (severity, code, fix, message) and take the
corrected command. Everything the linter decided is worded in the reader's language; the
command's own words (flags, values, model ids) stay as written. The command box and the report
are a fragment: linting reruns only them."""

from collections.abc import Iterable
from functools import partial

import streamlit as st

from engine.decision import Decision
from engine.i18n import DEFAULT_LANG
from engine.lint import Finding, FlagExplanation, LintReport, lint_command
from engine.scenario import ENGINE_LABELS
from engine.text.sources import SourceRef, escape_markdown, refs
from engine.text.words import say
from ui import busy, show
from ui import state as S
from ui.lang import T, current

LAST = "lint.last"  # the text last linted, so a download click does not lose the report
# The engines write their --help in English: shown in the table for English readers, and quoted
# as written (a citation, like a source) for readers of another language.
HELP_LANG = DEFAULT_LANG

d = S.study_or_stop()
s = d.scenario
st.title(T("nav.lint"))
st.caption(T("lint_page.caption", n=s.total_gpus, gpu=d.gpu.key, model=d.model.name))


def _words(decision: Decision | None) -> str:
    """A decision in the page's language, for a table cell (plain text, names as written)."""
    return say(decision, current(), markdown=False) if decision is not None else ""


def _rows(findings: Iterable[Finding], columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Findings as table rows in the page's language, with ``columns`` of severity, code, fix,
    message."""

    def cell(f: Finding, column: str) -> str:
        if column == "severity":
            return str(T(f"lint_page.severity.{f.severity}"))
        if column == "code":
            return f.code
        return _words(f.remedy if column == "fix" else f.what)

    return [{str(T(f"lint_page.col.{c}")): cell(f, c) for c in columns} for f in findings]


def _explained(items: Iterable[FlagExplanation], inline_help: bool) -> list[dict[str, str]]:
    rows = []
    for ex in items:
        note = _words(ex.note)
        what = " ".join(p for p in (note, ex.help if inline_help else "") if p)
        rows.append(
            {
                str(T("lint_page.col.flag")): ex.flag,
                str(T("lint_page.col.value")): ex.value or "",
                str(T("lint_page.col.does")): what,
                str(T("lint_page.col.why")): _words(ex.why),
            }
        )
    return rows


def _sources(report: LintReport) -> list[SourceRef]:
    """Each finding's source, and what its message cites, titled with the finding's code."""
    out: list[SourceRef] = []
    for f in report.findings:
        for text in (f.source, *f.cited):
            out += [SourceRef(f"{f.code}: {r.title}", r.url) for r in refs(text)]
    return list(dict.fromkeys(out))


def _engine_help(report: LintReport) -> None:
    """The engine's own help for each flag, quoted as the engine writes it."""
    items = [ex for ex in (*report.explanations, *report.left_to_engine) if ex.help]
    if not items:
        return
    label = f"{ENGINE_LABELS[report.engine]} {report.engine_version}"
    st.caption(T("lint_page.engine_help", engine=label))
    with st.container(key=f"{show.SOURCE_KEY}-lint-help"):
        lines = [f"- {escape_markdown(ex.flag)}: {escape_markdown(ex.help)}" for ex in items]
        st.markdown("\n".join(lines))


@st.fragment(key="lint.checker")
def checker() -> None:
    """The command, the button and the report: linting reruns only them (``d``, ``s``: the
    page's, which only a whole-page run changes)."""
    text = st.text_area(
        T("lint_page.input"),
        key="lint.text",
        height=220,
        max_chars=65_536,
    )
    if st.button(T("lint_page.go"), key="lint.go", type="primary"):
        st.session_state[LAST] = text
    last = st.session_state.get(LAST)
    if not isinstance(last, str) or not last.strip():
        return

    # each hub fetch counts against the session's loads; a lint studies up to dozens of
    # scenarios (its corrections' alternatives): the heavy-work slot
    with busy.heavy():
        fetch = partial(S.may_load, False)
        report = show.or_error(lint_command, last, d.model, d.gpu, s.total_gpus, hub=fetch)
    if report is None:
        return

    launcher = report.launcher or T("lint_page.entrypoint")
    st.caption(
        T(
            "lint_page.read",
            engine=f"{ENGINE_LABELS[report.engine]} {report.engine_version}",
            launcher=launcher,
            parsed_from=T(f"lint_page.parsed_from.{report.parsed_from}"),
            model=report.model or T("lint_page.not_named"),
            checked=report.linted_against or T("lint_page.no_config"),
        )
    )
    if report.errors:
        st.error(T("lint_page.errors", n=len(report.errors)))
    elif report.warnings:
        st.warning(T("lint_page.warnings", n=len(report.warnings)))
    else:
        st.success(T("lint_page.clean"))

    st.subheader(T("lint_page.findings"))
    if report.findings:
        # a dataframe, not st.table: cells are plain text, so a value from the command cannot
        # render as a link or an image; long messages wrap
        # the fix beside what it fixes, in view at 1400 px; the longer message after it
        order = ("severity", "code", "fix", "message")
        show.table(_rows(report.findings, order), key="lint.findings")
    else:
        st.markdown(T("lint_page.none"))

    st.subheader(T("lint_page.corrected"))
    if report.corrected_clean:
        st.caption(T("lint_page.corrected_caption"))
        st.code(report.corrected, language="yaml" if report.parsed_from == "yaml" else "bash")
        st.download_button(
            T("lint_page.download"),
            report.corrected + "\n",
            file_name="manifest-args.yaml" if report.parsed_from == "yaml" else "launch.sh",
            mime="text/plain",
            key="lint.download",
        )
        if report.remaining:
            st.caption(T("lint_page.corrected_warnings", n=len(report.remaining)))
            show.table(
                _rows(report.remaining, ("severity", "code", "message")), key="lint.remaining"
            )
    else:  # no correction lints clean: say what remains, offer no download
        errors = [f for f in report.remaining if f.severity == "error"]
        st.error(T("lint_page.no_clean", n=len(errors)))
        show.table(
            _rows(report.remaining, ("severity", "code", "fix", "message")), key="lint.remaining"
        )

    inline_help = current() == HELP_LANG
    with st.expander(T("lint_page.explained")):
        show.table(_explained(report.explanations, inline_help))
        if not inline_help:
            _engine_help(report)
    if report.left_to_engine:
        with st.expander(T("lint_page.left")):
            show.table(
                [
                    {T("lint_page.col.flag"): ex.flag, T("lint_page.col.why"): _words(ex.why)}
                    for ex in report.left_to_engine
                ]
            )
    with st.expander(T("lint_page.sources")):
        show.sources(_sources(report), inline=True)


checker()
