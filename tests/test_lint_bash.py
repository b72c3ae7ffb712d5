"""The linter reads the commands bash would run (issue 32): a here-document's body is data unless
it feeds a shell, a function runs only where it is called, a branch that cannot run and the text
after ``exit`` are not commands, a carriage return is an ordinary character. Where the command it
lints is one the script never runs, or one it cannot read for sure, it lints it as written but
gives no corrected command, and says why: a correction must never make live what the pasted
script never runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.lint import lint_command
from engine.present.lint_words import message
from tests import shell_stub

CMD = (
    'vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3 --served-model-name "$(touch {mark}/{name})"'
)

# (name, script): the engine command (with a payload in a flag's value) where bash never runs it
NEVER_RUN = [
    ("quoted heredoc", "cat <<'EOF' >/dev/null\n{cmd}\nEOF\n"),
    ("backslash heredoc", "cat <<\\EOF >/dev/null\n{cmd}\nEOF\n"),
    ("tab-stripped heredoc", "cat <<-'EOF' >/dev/null\n\t{cmd}\n\tEOF\n"),
    (
        "heredoc written to a file",
        "cat > run.sh <<'EOF'\n#!/bin/bash\n{cmd}\nEOF\nchmod +x run.sh\n",
    ),
    ("uncalled function", "serve() {{\n  {cmd}\n}}\necho ready\n"),
    ("uncalled function keyword", "function serve {{\n  {cmd}\n}}\n"),
    ("function called before it is defined", "serve 2>/dev/null\nserve() {{ {cmd}; }}\n"),
    ("function called only in a dead branch", "serve() {{ {cmd}; }}\nif false; then serve; fi\n"),
    ("if false", "if false; then\n  {cmd}\nfi\n"),
    ("else of if true", "if true; then\n  echo hi\nelse\n  {cmd}\nfi\n"),
    ("while false", "while false; do\n  {cmd}\ndone\n"),
    ("until true", "until true; do\n  {cmd}\ndone\n"),
    ("false &&", "false && {cmd}\n"),
    ("true ||", "true || {cmd}\n"),
    ("after exit 0", "echo start\nexit 0\n{cmd}\n"),
    ("after exec", "exec true\n{cmd}\n"),
    ("inside if false, in a subshell", "(\n  if false; then {cmd}; fi\n)\n"),
]
# the shell runs it, but through a here-document the outer shell expands first
UNSURE = [
    ("unquoted heredoc into bash", "bash <<EOF\n{cmd}\nEOF\n"),
    ("unquoted heredoc into sh -s", "sh -s <<EOF\n{cmd}\nEOF\n"),
]


def script(template: str, box: shell_stub.Sandbox, name: str) -> str:
    return template.format(cmd=CMD.format(mark=box.marks, name=name.replace(" ", "_")))


@pytest.mark.parametrize("name,template", NEVER_RUN, ids=[n for n, _ in NEVER_RUN])
def test_a_command_bash_never_runs_is_linted_but_never_corrected(
    name: str, template: str, tmp_path: Path
) -> None:
    box = shell_stub.sandbox(tmp_path)
    text = script(template, box, name)
    shell_stub.run(box, text)
    assert shell_stub.payload_ran(box) == []  # bash itself never runs it
    report = lint_command(text, None, "H200", 8)
    assert report.findings  # linted as written (the TP 3 the heads cannot split, say)
    assert report.corrected == "" and not report.corrected_clean
    assert "not-run" in [f.code for f in report.remaining]
    assert "not-run" in [f.code for f in report.findings]


@pytest.mark.parametrize("name,template", UNSURE, ids=[n for n, _ in UNSURE])
def test_a_heredoc_the_outer_shell_expands_before_a_shell_reads_it_gets_no_correction(
    name: str, template: str, tmp_path: Path
) -> None:
    box = shell_stub.sandbox(tmp_path)
    report = lint_command(script(template, box, name), None, "H200", 8)
    assert report.corrected == "" and "not-run" in [f.code for f in report.remaining]


LIVE = [
    (
        "a command after one that never runs",
        "if false; then vllm serve Qwen/Qwen3-8B --tp 2; fi\n{cmd}\n",
    ),
    ("a quoted heredoc into bash", "bash <<'EOF'\n{cmd}\nEOF\n"),
    ("a called function", "serve() {{\n  {cmd}\n}}\nserve\n"),
    ("a function called in a branch", "serve() {{\n  {cmd}\n}}\nif true; then serve; fi\n"),
    ("a branch bash cannot decide", 'if [ -n "$X" ]; then\n  {cmd}\nfi\n'),
    ("an exit in a subshell", "( exit 0 )\n{cmd}\n"),
]


@pytest.mark.parametrize("name,template", LIVE, ids=[n for n, _ in LIVE])
def test_a_command_bash_may_run_is_corrected(name: str, template: str, tmp_path: Path) -> None:
    box = shell_stub.sandbox(tmp_path)
    text = script(template, box, name)
    report = lint_command(text, None, "H200", 8)
    assert "not-run" not in [f.code for f in report.findings]
    assert report.corrected and "--tensor-parallel-size" in report.corrected
    assert "--tp 2" not in report.corrected  # the one that runs, not the dead one


def test_a_heredoc_body_with_an_apostrophe_is_data_not_an_unclosed_quote() -> None:
    note = "cat <<'EOF'\nit's the launch note\nEOF\n"
    text = note + "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 3\n"
    report = lint_command(text, None, "H200", 8)
    assert report.corrected and "not-run" not in [f.code for f in report.findings]


def test_a_carriage_return_is_part_of_a_word_so_a_hash_after_it_hides_nothing(
    tmp_path: Path,
) -> None:
    box = shell_stub.sandbox(tmp_path)
    payload = f"$(touch {box.marks}/cr)"
    text = f"vllm serve Qwen/Qwen3-8B --served-model-name a \r# {payload}"
    shell_stub.run(box, text)
    assert shell_stub.payload_ran(box) == ["cr"]  # bash: "\r#" is a word, the $(…) is live
    report = lint_command(text, None, "H200", 8)
    shown = " ".join(message(f) for f in report.findings)
    assert "$(touch" in shown  # the report names the substitution bash runs


def test_a_crlf_script_keeps_the_carriage_return_in_the_last_word_as_bash_does() -> None:
    report = lint_command("vllm serve Qwen/Qwen3-8B --tensor-parallel-size 8\r\n", None, "H200", 8)
    assert report.corrected_argv[-1] == "8\r"
