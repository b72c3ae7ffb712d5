"""The LOW findings of the third hostile audit (issue 32), each as the fact that now holds."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.model.loader import HF_ID
from engine.scenario import cli_line, from_query, make_scenario, to_query

ROOT = Path(__file__).resolve().parent.parent


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_a_kernel_check_that_fails_names_its_file_but_no_server_folder() -> None:
    from engine.measure.kernels import preset_dims, runner
    from engine.present.measure_words import check_note

    def broken(ctx: object) -> list[object]:
        raise FileNotFoundError(f"{ROOT}/engine/measure/kernels/missing.bin not found")

    ctx = runner.make_context("cpu", preset_dims("llama-3.1-8b"))
    results: list[runner.CheckResult] = []
    runner._run([("broken", broken)], ctx, None, results)  # type: ignore[list-item]
    (result,) = results
    for lang in ("en", "ko"):
        note = check_note(result, lang)  # what the Measure page and the CLI show
        assert "missing.bin" in note and "test_hostile_lows.py" in note
        assert str(ROOT) not in note and "/work" not in note


@pytest.mark.parametrize("target", [0.01, 0.04, 0.049])
def test_a_target_below_what_a_link_can_write_is_refused_where_it_is_set(target: float) -> None:
    with pytest.raises(InputError) as refused:
        make_scenario(model="Qwen/Qwen3-8B", tpot_ms=target)
    assert refused.value.field == "tpot_ms"
    assert run(["study", "Qwen/Qwen3-8B", "--ttft-ms", str(target)])[0] == 2


@pytest.mark.parametrize("target", [0.1, 0.15, 7.25, 250.0])
def test_every_accepted_target_survives_the_link_and_the_reproduce_line(target: float) -> None:
    s = make_scenario(model="Qwen/Qwen3-8B", tpot_ms=target, ttft_ms=target)
    parsed = from_query(to_query(s))
    assert parsed.notes == () and parsed.scenario == s
    line = cli_line(s)
    assert line is not None and f"--tpot-ms {s.tpot_ms:g}" in line


def test_a_legacy_hub_link_reproduces_the_hubs_config_not_the_bundled_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    s = from_query({"hub": "Qwen/Qwen3-8B"}).scenario
    assert s.source == "hub"
    line = cli_line(s)
    assert line is not None and " hf://Qwen/Qwen3-8B " in line
    rc, out, _ = run(["study", "hf://Qwen/Qwen3-8B", "--json"])
    assert rc == 0 and json.loads(out)["scenario"]["source"] == "hub"
    assert run(["study", "hf://not a repo", "--json"])[0] == 2


@pytest.mark.parametrize("text", ["1_024", "１２", "١٢", "12 ", " 12", "+12", "1e3", "0x10"])
def test_a_cli_number_flag_accepts_exactly_what_a_link_accepts(text: str) -> None:
    link_ok = not from_query({"users": text}).notes
    rc, _, err = run(["study", "Qwen/Qwen3-8B", "--users", text, "--json"])
    assert (rc == 0) == link_ok, err
    if text.strip().isascii() and text.strip().isdigit():
        assert rc == 0
    else:
        assert rc == 2 and "--users" in err


def test_lint_and_backcalc_whole_number_flags_refuse_unicode_digits_and_underscores() -> None:
    assert run(["lint", "vllm serve Qwen/Qwen3-8B", "--gpus", "1_6"])[0] == 2
    assert run(["lint", "vllm serve Qwen/Qwen3-8B", "--gpus", "８"])[0] == 2
    assert run(["backcalc", "Qwen/Qwen3-8B", "--log", "/dev/null", "--tp", "٢"])[0] == 2


@pytest.mark.parametrize(
    "flag", ["--model-cache-claim", "--hf-token-secret", "--nic", "--rdma-resource"]
)
def test_a_kubernetes_name_with_a_trailing_newline_is_refused(flag: str) -> None:
    value = {"--nic": "ib0", "--rdma-resource": "rdma/ib"}.get(flag, "models") + "\n"
    rc, out, err = run(["plan", "Qwen/Qwen3-8B", "--kubernetes", flag, value])
    assert rc == 2 and out == "" and err.count("\n") == 1


def test_a_hub_id_with_a_trailing_newline_is_not_a_hub_id() -> None:
    assert HF_ID.match("Qwen/Qwen3-8B") and not HF_ID.match("Qwen/Qwen3-8B\n")


def test_a_million_users_with_a_set_prompt_is_studied_with_alternatives_that_hold_it() -> None:
    from engine.alternatives import alternatives
    from engine.study import study

    s = make_scenario(model="Qwen/Qwen3-8B", users=1_000_000, input_tokens=8192)
    st = study(s)
    assert st.verdict.status == "fewer_users"
    for alt in alternatives(st):
        assert alt.context >= 8192 + (s.output_tokens or 0)
    rc, _, err = run(["study", "Qwen/Qwen3-8B", "--users", "1000000", "--input-tokens", "8192"])
    assert rc == 0, err
