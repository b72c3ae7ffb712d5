"""Lint an inherited command: paste a vLLM / SGLang launch command, a launch script, a docker run
or a pod manifest; see every finding as a row (severity, code, message, fix) and take the
corrected command. The command box and the report are a fragment: linting reruns only them."""

import streamlit as st

from engine.lint import lint_command
from engine.scenario import ENGINE_LABELS
from ui import show
from ui import state as S
from ui.lang import T

LAST = "lint.last"  # the text last linted, so a download click does not lose the report

d = S.study_or_stop()
s = d.scenario
st.title(T("nav.lint"))
st.caption(T("lint_page.caption", n=s.total_gpus, gpu=d.gpu.key, model=d.model.name))


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

    report = show.or_error(lint_command, last, d.model, d.gpu, s.total_gpus, hub=True)
    if report is None:
        return

    st.caption(
        T(
            "lint_page.read",
            engine=f"{ENGINE_LABELS[report.engine]} {report.engine_version}",
            launcher=report.launcher,
            parsed_from=report.parsed_from,
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
        show.table([{k: row[k] for k in order} for row in report.rows()], key="lint.findings")
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
                [
                    {"severity": f.severity, "code": f.code, "message": f.message}
                    for f in report.remaining
                ],
                key="lint.remaining",
            )
    else:  # no correction lints clean: say what remains, offer no download
        errors = [f for f in report.remaining if f.severity == "error"]
        st.error(T("lint_page.no_clean", n=len(errors)))
        show.table(
            [
                {"severity": f.severity, "code": f.code, "fix": f.fix, "message": f.message}
                for f in report.remaining
            ],
            key="lint.remaining",
        )

    with st.expander(T("lint_page.explained")):
        show.table(
            [
                {
                    "flag": ex.flag,
                    "value": ex.value or "",
                    "what it does": ex.meaning,
                    "why": ex.reason,
                }
                for ex in report.explanations
            ]
        )
    if report.left_to_engine:
        with st.expander(T("lint_page.left")):
            show.table([{"flag": ex.flag, "why": ex.reason} for ex in report.left_to_engine])
    with st.expander(T("lint_page.sources")):
        show.table([{"code": f.code, "source": f.source} for f in report.findings])


checker()
