"""Step 6 — Measure: a minimal first launch, back-calculation of the real KV use from the
engine's startup log or /metrics, and live torch micro-kernels.

Both results live in the session (``measure.result.*``): pressing one button keeps the other's
result on screen. A result belongs to the scenario it was made for, so a changed scenario
drops it rather than show numbers of another model. Each part is a fragment: its button reruns
only that part (``d``, ``s``: the page's, which only a whole-page run changes).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.column_config import NumberColumn

from engine.errors import InputError
from engine.measure.backcalc import metrics_commands, parse_engine_text
from engine.measure.bench_compare import Comparison, compare
from engine.measure.bench_result import read_results
from engine.measure.first_launch import first_launch_for
from engine.measure.kernels import PRESETS
from engine.measure.kernels.dims import LayerGroup
from engine.measure.kernels.from_model import kernel_dims, kernel_layer_groups
from engine.perf import calibration, stack_calibration
from engine.present import bench_report as BR
from engine.present import charts_data as C
from engine.present.measure_words import check_dict, check_note
from engine.present.render import join
from engine.scenario import ENGINE_LABELS
from engine.text.safe import inert
from engine.text.sources import clean
from engine.text.words import say, say_all
from ui import charts, show, tables
from ui import state as S
from ui.lang import T, current

BACKCALC = "measure.result.backcalc"
KERNELS = "measure.result.kernels"
BENCH = "measure.result.bench"

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
        passed = sum(1 for r in rows if r.passed)
        st.caption(T("measure.passed", passed=passed, total=len(rows)))
        tables.show(
            tables.frame(
                [{**check_dict(r, lang), "note": clean(check_note(r, lang)) or None} for r in rows],
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


def _bench_outcome(files: list[Any]) -> object:
    """The uploaded result files against this plan, or the refusal of the first bad one."""
    try:
        runs = read_results([(f.name, f.getvalue()) for f in files])
        with st.spinner(T("bench.fitting")):
            return compare(d, runs)
    except InputError as err:
        return show.bare(err)  # kept in session state: not the files its traceback holds


def _bench_result(cmp: Comparison) -> None:
    """The runs beside the predictions (table, two charts), the refit and what to do with it."""
    labels = BR.column_labels(lang)
    config: dict[str, Any] = {"clients": tables.count(labels["clients"])}
    config["figure"] = tables.text(labels["figure"])
    config |= {c: NumberColumn(labels[c], format="%.4g") for c in BR.COLUMNS[2:5]}
    config |= {c: NumberColumn(labels[c], format="%+.0f %%") for c in ("error", "error_after")}
    config["file"] = tables.text(labels["file"])
    st.caption(BR.workload_words(cmp, lang))
    tables.show(BR.comparison_frame(cmp, lang), config, key="measure.bench_table", rows=12)
    left, right = st.columns(2)
    for col, series in zip((left, right), BR.chart_series(cmp, lang), strict=True):
        with col:
            charts.draw(charts.bench(series), T("bench.chart.caption"), key=series.title)
    for said in BR.fit_words(cmp, lang):
        st.markdown(inert(said))
    if cmp.fit.values:
        st.markdown(T("bench.factors"))
        tables.show(
            tables.frame(BR.factor_rows(cmp), ["factor", "unit", "global", "fitted"]),
            {
                "factor": tables.text(T("bench.col.factor")),
                "unit": tables.text(T("bench.col.unit")),
                "global": NumberColumn(T("bench.col.global"), format="%.4g"),
                "fitted": NumberColumn(T("bench.col.fitted"), format="%.4g"),
            },
            key="measure.bench_factors",
        )
    a, b = st.columns(2)
    if a.button(T("bench.apply"), key="measure.bench_apply", type="primary"):
        S.set_scenario(engine=cmp.engine, bench_calibration=cmp.digest)
        st.rerun()
    with b:
        show.download(BR.calibration_artifact(cmp.calibration), "measure.bench_download")


@st.fragment(key="measure.bench")
def benchmark() -> None:
    """Upload the plan's benchmark results; compare, refit, apply."""
    st.subheader(T("bench.title"))
    st.caption(T("bench.caption"))
    st.caption(BR.limits_words(lang))
    files = st.file_uploader(
        T("bench.upload"), type=["json", "jsonl"], accept_multiple_files=True,
        key="measure.bench_files",
    )  # fmt: skip
    if files and st.button(T("bench.compare"), key="measure.bench_go"):
        st.session_state[BENCH] = (s, _bench_outcome(list(files)))
    outcome = kept(BENCH)
    if isinstance(outcome, InputError):
        show.problem(outcome)
    elif isinstance(outcome, Comparison):
        _bench_result(outcome)


benchmark()


@dataclass(frozen=True)
class HeldFile:
    """A file the scenario holds by digest (a calibration): its uploader, the scenario changes a
    good file makes, how it is read back, the words for it in use and the way back."""

    key: str
    field: str
    upload: str  # the uploader's label (catalog key)
    clear: str  # the button that drops it
    parse: Callable[[bytes], Any]
    changes: Callable[[Any], dict[str, Any]]
    get: Callable[[str], Any]
    used: Callable[[Any], str]


def _on_upload(held: HeldFile) -> None:
    file = st.session_state.get(held.key)
    if file is None:
        return
    try:
        item = held.parse(file.getvalue())
    except InputError as err:
        st.session_state[f"{held.key}_error"] = show.bare(err)  # no traceback kept with the file
        return
    st.session_state[f"{held.key}_error"] = None
    S.set_scenario(**held.changes(item))


def held_file(held: HeldFile) -> None:
    """Upload the file, see it in use, drop it; a refused file is one st.error."""
    st.file_uploader(
        T(held.upload), type=["json"], key=held.key, on_change=_on_upload, args=(held,)
    )
    problem = st.session_state.get(f"{held.key}_error")
    if isinstance(problem, InputError):
        show.problem(problem)
    digest = getattr(s, held.field)
    if digest:
        try:
            item = held.get(digest)
        except InputError as err:
            show.problem(err, st.warning)
            return
        st.success(held.used(item))
        if st.button(T(held.clear), key=f"{held.key}_clear"):
            dropped: dict[str, Any] = {held.field: None}
            S.set_scenario(**dropped)
            st.rerun()


GPU_CALIBRATION = HeldFile(
    "measure.cal", "calibration", "measure.calibration_upload", "measure.calibration_clear",
    # physics on the GPU chosen now (engine.perf.physics)
    lambda data: calibration.check(calibration.parse_calibration(data), d.gpu),
    lambda cal: {"calibration": calibration.put(cal)},
    calibration.get,
    lambda cal: T("measure.calibration_used", gpu=inert(cal.gpu_name, one_line=True)),
)  # fmt: skip
BENCH_CALIBRATION = HeldFile(
    "measure.bcal", "bench_calibration", "bench.calibration_upload", "bench.clear",
    stack_calibration.parse_stack_calibration,
    lambda cal: {"engine": cal.engine, "bench_calibration": stack_calibration.put(cal)},
    stack_calibration.get,
    lambda cal: T(
        "bench.used", engine=ENGINE_LABELS[cal.engine], runs=cal.runs,
        gpu=inert(cal.gpu, one_line=True),
    ),
)  # fmt: skip


def speed_calibration() -> None:
    """The speed model on your GPU: upload the calibration ``make gpu-check`` writes."""
    st.subheader(T("measure.calibration"))
    st.caption(T("measure.calibration_caption"))
    st.code("make gpu-check  # writes the calibration: python -m tools.gpu_check --calibration "
            "calibration.json", language="bash", wrap_lines=True)  # fmt: skip
    held_file(GPU_CALIBRATION)


speed_calibration()
held_file(BENCH_CALIBRATION)  # a calibration saved from an earlier benchmark
