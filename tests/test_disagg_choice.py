"""The disaggregated candidate against the capacity's aggregated pick: the direction the pick
moves with the workload, aiconfigurator's own choice on the scenarios it supports, and what the
CLI and ``study --json`` hand out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.cli import main
from engine.disagg.choice import choice_of, launch_plan
from engine.errors import InputError
from engine.present.study_report import study_markdown
from tests.study_util import run

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "aiconfigurator_disagg.yaml"
RUNS = yaml.safe_load(FIXTURE.read_text())["runs"]


def _study(sc: dict[str, Any]) -> Any:
    isl, osl = sc["input_tokens"], sc["output_tokens"]
    return run(
        sc["model"], gpu=sc["gpu"], engine=sc["engine"], input_tokens=isl, output_tokens=osl,
        context=isl + osl, ttft_ms=sc["ttft_ms"], tpot_ms=sc["tpot_ms"], request_rate=sc["rate"],
    )  # fmt: skip


def _qwen(isl: int, osl: int, rate: float) -> Any:
    """Qwen3-32B on H200 at one pair of targets, a tight TTFT of 1.5 s and TPOT of 20 ms."""
    sc = {"model": "Qwen/Qwen3-32B", "gpu": "H200", "engine": "vllm", "rate": rate,
          "input_tokens": isl, "output_tokens": osl, "ttft_ms": 1500, "tpot_ms": 20}  # fmt: skip
    c = choice_of(_study(sc))
    assert c is not None and c.aggregated is not None and c.verdict.saving is not None
    return c


def test_long_prompts_with_short_outputs_under_a_tight_ttft_favour_disaggregation() -> None:
    # prompt-heavy: aggregated, every long prefill lands between a copy's decode steps, so a
    # copy keeps its TPOT only with a few requests; the decode pool keeps it with many
    long = _qwen(8192, 128, 8.0)
    assert long.verdict.wins and long.candidate.gpus < long.aggregated.gpus
    # the mirror (short prompts, long outputs, the same tokens a second) keeps one pool
    mirror = _qwen(128, 8192, 8.0 * 128 / 8192)
    assert not mirror.verdict.wins
    assert long.verdict.saving > mirror.verdict.saving


def test_short_prompts_at_a_low_rate_stay_aggregated() -> None:
    c = choice_of(_study(RUNS[1]["scenario"]))
    assert c is not None and c.aggregated is not None and c.candidate.gpus is not None
    assert not c.verdict.wins and c.candidate.gpus >= c.aggregated.gpus
    assert c.verdict.reason.code == "disagg.verdict.loses"
    assert launch_plan(c_study := _study(RUNS[1]["scenario"])) is None  # the aggregated plan
    assert c_study.plan is not None


@pytest.mark.parametrize("row", [r for r in RUNS if r["agree"]], ids=lambda r: r["name"])
def test_the_pick_agrees_with_aiconfigurator_where_both_model_the_scenario(
    row: dict[str, Any],
) -> None:
    c = choice_of(_study(row["scenario"]))
    assert c is not None
    assert c.verdict.wins == (row["aiconfigurator"]["choice"] == "disagg")


def test_every_differing_row_says_why() -> None:
    for row in RUNS:
        assert row["agree"] or len(row.get("why", "")) > 80, row["name"]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


QWEN = ["plan", "Qwen/Qwen3-32B", "--gpu", "H200", "--input-tokens", "8192",
        "--output-tokens", "256", "--context", "8448", "--ttft-ms", "1500", "--tpot-ms", "20",
        "--request-rate", "8"]  # fmt: skip


def test_plan_writes_the_winner_unless_told_otherwise(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, *QWEN)
    assert code == 0 and "--kv-transfer-config" in out and "vllm-router" in out
    code, out, _ = _cli(capsys, *QWEN, "--no-disaggregated")
    assert code == 0 and "--kv-transfer-config" not in out
    code, out, _ = _cli(capsys, *QWEN, "--disaggregated", "--kubernetes")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["LeaderWorkerSet", "LeaderWorkerSet", "Deployment",
                                         "Service"]  # fmt: skip
    code, out, _ = _cli(capsys, *QWEN, "--json")
    assert code == 0
    plan = json.loads(out)
    assert plan["disaggregated"] is True and plan["not_the_pick"] is None
    assert {s["role"] for s in plan["servers"]} == {"prefill", "decode"}


def test_pools_asked_for_without_a_rate_are_one_coded_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _cli(capsys, "plan", "Qwen/Qwen3-8B", "--disaggregated")
    assert code == 2 and out == "" and err.count("\n") == 1 and "request_rate" in err
    with pytest.raises(InputError) as e:
        launch_plan(run("Qwen/Qwen3-8B", disaggregated=True))
    assert e.value.expects is not None and e.value.expects.code == "error.disagg.rate"


def test_a_losing_candidate_asked_for_is_labelled_not_the_pick(
    capsys: pytest.CaptureFixture[str],
) -> None:
    short = ["plan", "Qwen/Qwen3-32B", "--gpu", "H200", "--input-tokens", "512",
             "--output-tokens", "512", "--context", "1024", "--ttft-ms", "2000", "--tpot-ms",
             "30", "--request-rate", "0.5"]  # fmt: skip
    code, out, _ = _cli(capsys, *short)
    assert code == 0 and "--kv-transfer-config" not in out  # the aggregated plan
    code, out, _ = _cli(capsys, *short, "--disaggregated")
    assert code == 0 and "NOT THE PICK" in out


def test_study_json_carries_the_candidate_with_the_issues_keys(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _cli(capsys, "study", *QWEN[1:], "--json")
    assert code == 0
    d = json.loads(out)["disaggregated"]
    assert {"prefill", "decode", "ratio", "kv_transfer_ms", "speed", "capacity", "wins",
            "formula"} <= set(d)  # fmt: skip
    assert {"layout", "workers", "gpus"} <= set(d["prefill"]) and d["wins"] is True
    code, out, _ = _cli(capsys, "study", "Qwen/Qwen3-8B", "--json")
    assert code == 0 and json.loads(out)["disaggregated"] is None  # no traffic given


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_markdown_report_has_the_pools_and_their_formulas(lang: str) -> None:
    st = _study(RUNS[0]["scenario"])
    md = study_markdown(st, lang)
    title = {"en": "## Disaggregated prefill and decode", "ko": "## 프리필·디코드 분리"}[lang]
    section = md[md.index(title) :]
    c = choice_of(st)
    assert c is not None and c.candidate.sized is not None
    z = c.candidate.sized
    pools = f"{z.prefill.workers} × {z.prefill.worker.gpus} + {z.decode.workers}"
    assert f"{pools} × {z.decode.worker.gpus} = {z.gpus}" in section  # the pools' GPUs
    assert "/ 50 GB/s" in section  # the KV transfer over each GPU's NIC
