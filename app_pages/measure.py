"""Step 6 — Measure: a minimal first launch, back-calculation of the real KV use from the
engine's startup log or /metrics, and live torch micro-kernels.

Both results live in the session (``measure.result.*``): pressing one button keeps the other's
result on screen. A result belongs to the scenario it was made for, so a changed scenario
drops it rather than show numbers of another model. Each part is a fragment: its button reruns
only that part (``d``, ``s``: the page's, which only a whole-page run changes).
"""

from typing import Any

import streamlit as st

from engine.errors import InputError
from engine.measure.backcalc import metrics_commands, parse_engine_text
from engine.measure.first_launch import first_launch_for
from engine.measure.kernels import PRESETS
from engine.measure.kernels.dims import LayerGroup
from engine.measure.kernels.from_model import kernel_dims, kernel_layer_groups
from engine.perf import calibration
from engine.present import charts_data as C
from engine.present.render import join
from engine.scenario import ENGINE_LABELS
from engine.text.safe import inert
from engine.text.sources import clean
from engine.text.words import say, say_all
from ui import show, tables
from ui import state as S
from ui.lang import T, current

BACKCALC = "measure.result.backcalc"
KERNELS = "measure.result.kernels"

lang = current()
st.title(T("nav.measure"))
d = S.study_or_stop()
s = d.scenario
label = ENGINE_LABELS[s.engine]


def kept(key: str) -> Any:
    """The result stored under ``key`` if it was made for this scenario, else None."""
    held = st.session_state.get(key)
    if isinstance(held, tuple) and len(held) == 2 and held[0] == s:
        return held[1]
    return None


st.subheader(T("measure.first", engine=label))
st.caption(T("measure.first_caption"))
if d.plan is not None:
    # one long line: wrapped, so it reads without a sideways scroll
    st.code(join(first_launch_for(d.plan)), language="bash", wrap_lines=True)
st.subheader(T("measure.pool"))
st.code("\n".join(metrics_commands(s.engine)), language="bash")


@st.fragment(key="measure.backcalc")
def backcalc() -> None:
    """The log / metrics boxes, the button and the comparison: reading a log reruns only them."""
    st.subheader(T("measure.backcalc"))
    st.caption(T("measure.backcalc_caption"))
    left, right = st.columns(2)
    log = left.text_area(
        T("measure.log"), key="measure.log", height=180, placeholder=T("measure.log_placeholder")
    )
    metrics = right.text_area(T("measure.metrics"), key="measure.metrics", height=180)
    if st.button(T("measure.go"), key="measure.go"):
        try:
            outcome: object = C.measured_vs_predicted(
                d, parse_engine_text(log or None, metrics or None)
            )
        except InputError as err:
            outcome = err
        st.session_state[BACKCALC] = (s, outcome)

    outcome = kept(BACKCALC)
    if isinstance(outcome, InputError):
        show.problem(outcome)
    elif isinstance(outcome, C.Measured):
        result = outcome.result
        cols = st.columns(4)
        cols[0].metric(T("measure.measured"), f"{result.bytes_per_token_measured:,.0f} B")
        cols[1].metric(T("measure.predicted"), f"{result.bytes_per_token_predicted:,.0f} B")
        cols[2].metric(T("measure.ratio"), f"{result.ratio:.3f}", help=T("measure.ratio_help"))
        cols[3].metric(
            T("measure.pool_per_rank"),
            C.gib(result.kv_bytes_available),
            help=T("shown.exact_bytes", bytes=f"{result.kv_bytes_available:,}"),
        )
        st.info(inert(" ".join(say_all(result.findings, lang))))
        with st.expander(T("measure.evidence")):
            formula = [say(result.formula, lang), *say_all(result.notes, lang)]
            st.code("\n".join(formula), language=None, wrap_lines=True)
            st.markdown("\n".join(f"- {inert(say(e, lang))}" for e in result.evidence))


@st.fragment(key="measure.kernels")
def kernels() -> None:
    """The preset, the device, the button and the results: a run reruns only them."""
    st.subheader(T("measure.kernels"))
    st.caption(T("measure.kernels_caption"))
    THIS_MODEL = "this model"
    c1, c2 = st.columns(2)
    preset = c1.selectbox(
        T("measure.preset"),
        [THIS_MODEL, *PRESETS],
        key="measure.preset",
        format_func={THIS_MODEL: T("measure.this_model"), **{p: p for p in PRESETS}}.__getitem__,
    )
    device = c2.radio(T("measure.device"), ["cpu", "cuda"], key="measure.device", horizontal=True)
    if st.button(T("measure.run"), key="measure.kernels"):
        from engine.measure.kernels.runner import run_all  # imports torch: only when the checks run

        bar = st.progress(0.0, text=T("measure.starting"))

        def progress(i: int, total: int, name: str) -> None:
            bar.progress(i / max(total, 1), text=name)

        groups: list[LayerGroup] | None = None
        block: int | None = None
        if preset == THIS_MODEL:  # the paged check then allocates the engine's own groups
            groups, block = kernel_layer_groups(d.config)
            dims = kernel_dims(d.config)
        else:
            dims = PRESETS[preset]()
        try:
            rows: object = run_all(device, dims, progress, layer_groups=groups, hybrid_block=block)
        except InputError as err:
            rows = err
        bar.empty()
        st.session_state[KERNELS] = (s, rows)

    rows = kept(KERNELS)
    if isinstance(rows, InputError):
        show.problem(rows)
    elif isinstance(rows, list):
        passed = sum(1 for r in rows if r.as_dict()["passed"])
        st.caption(T("measure.passed", passed=passed, total=len(rows)))
        tables.show(
            tables.frame(
                [{**r.as_dict(), "note": clean(r.note_in(lang)) or None} for r in rows],
                ["passed", "name", "check", "measured", "expected", "unit", "note"],
            ),
            {
                "passed": st.column_config.CheckboxColumn(T("measure.col.passed"), width="small"),
                "name": tables.text(T("measure.col.name")),
                "check": tables.text(T("measure.col.check")),
                "measured": st.column_config.NumberColumn(
                    T("measure.col.measured"), format="localized", width="medium"
                ),
                "expected": st.column_config.NumberColumn(
                    T("measure.col.expected"), format="localized", width="medium"
                ),
                "unit": tables.text(T("measure.col.unit")),
                "note": tables.text(T("measure.col.note")),
            },
            key="measure.kernel_table",
        )


backcalc()
kernels()


def _on_calibration() -> None:
    file = st.session_state.get("measure.cal")
    if file is None:
        return
    try:  # physics on the GPU chosen now (engine.perf.physics)
        cal = calibration.check(calibration.parse_calibration(file.getvalue()), d.gpu)
    except InputError as err:
        st.session_state["measure.cal_error"] = show.bare(err)
        return
    st.session_state["measure.cal_error"] = None
    S.set_scenario(calibration=calibration.put(cal))


def speed_calibration() -> None:
    """The speed model on your GPU: upload the calibration ``make gpu-check`` writes."""
    st.subheader(T("measure.calibration"))
    st.caption(T("measure.calibration_caption"))
    st.code("make gpu-check  # writes the calibration: python -m tools.gpu_check --calibration "
            "calibration.json", language="bash", wrap_lines=True)  # fmt: skip
    st.file_uploader(
        T("measure.calibration_upload"), type=["json"], key="measure.cal",
        on_change=_on_calibration,
    )  # fmt: skip
    problem = st.session_state.get("measure.cal_error")
    if isinstance(problem, InputError):
        show.problem(problem)
    if s.calibration:
        try:
            cal = calibration.get(s.calibration)
        except InputError as err:
            show.problem(err, st.warning)
            return
        st.success(T("measure.calibration_used", gpu=cal.gpu_name))
        if st.button(T("measure.calibration_clear"), key="measure.cal_clear"):
            S.set_scenario(calibration=None)
            st.rerun()


speed_calibration()
