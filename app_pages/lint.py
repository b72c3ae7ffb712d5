"""Lint an inherited command: paste a vLLM / SGLang launch command, a launch script, a docker run
or a pod manifest; see every finding as a row (severity, code, message, fix) and take the
corrected command."""

import streamlit as st

from engine.lint import lint_command
from engine.scenario import ENGINE_LABELS
from ui import show
from ui import state as S

LAST = "lint.last"  # the text last linted, so a download click does not lose the report

d = S.study_or_stop()
s = d.scenario
st.title("Lint a command")
st.caption(
    f"Checked on {s.total_gpus} × {d.gpu.key}. The model is the one the command names when its "
    f"config.json can be loaded; {d.model.name} (selected) otherwise."
)
text = st.text_area(
    "vllm serve … · python -m sglang.launch_server … · a launch script · a pod manifest",
    key="lint.text",
    height=220,
    max_chars=65_536,
)
if st.button("Lint", key="lint.go", type="primary"):
    st.session_state[LAST] = text
last = st.session_state.get(LAST)
if not isinstance(last, str) or not last.strip():
    st.stop()

report = show.or_error(lint_command, last, d.model, d.gpu, s.total_gpus, hub=True)
if report is None:
    st.stop()

checked = report.linted_against or "no model config (model checks skipped)"
st.caption(
    f"{ENGINE_LABELS[report.engine]} {report.engine_version} ({report.launcher}), read from "
    f"{report.parsed_from}; model {report.model or 'not named'}, checked as {checked}."
)
counts = {k: sum(f.severity == k for f in report.findings) for k in ("error", "warning", "info")}
if counts["error"]:
    st.error(f"{counts['error']} error(s): the engine refuses to start or serves wrong output.")
elif counts["warning"]:
    st.warning(f"{counts['warning']} warning(s): likely mistakes, each with its cost.")
else:
    st.success("No errors and no warnings.")

st.subheader("Findings")
if report.findings:
    # a static table: every message and fix wraps in full instead of being cut at a column edge
    st.table(report.rows(), hide_index=True)
else:
    st.markdown("None.")

st.subheader("Corrected command")
st.caption("Every error and warning fix applied; infos are left as choices.")
st.code(report.corrected, language="yaml" if report.parsed_from == "yaml" else "bash")
st.download_button(
    "Download the corrected command",
    report.corrected + "\n",
    file_name="manifest-args.yaml" if report.parsed_from == "yaml" else "launch.sh",
    mime="text/plain",
    key="lint.download",
)

with st.expander("Every flag explained"):
    show.table(
        [
            {"flag": ex.flag, "value": ex.value or "", "what it does": ex.meaning, "why": ex.reason}
            for ex in report.explanations
        ]
    )
if report.left_to_engine:
    with st.expander("Left to the engine on purpose"):
        show.table([{"flag": ex.flag, "why": ex.reason} for ex in report.left_to_engine])
with st.expander("Where each finding comes from"):
    show.table([{"code": f.code, "source": f.source} for f in report.findings])
