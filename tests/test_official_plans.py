"""Our plans against the official launch commands (tests/fixtures/official_commands.yaml):
on the hardware an official command was written for, the plan must run, and where the official
command names a tool-call or reasoning parser for the same model, ours is that parser, one the
engine's registry maps to the same class, or a disagreement recorded with its source in
data/recipes.yaml."""

from __future__ import annotations

import json
import shlex
from functools import cache
from typing import Any

import pytest
import yaml

from engine.rules import DATA_DIR
from engine.study import Study
from tests.study_util import run

FIXTURE = yaml.safe_load(
    (DATA_DIR.parent / "tests" / "fixtures" / "official_commands.yaml").read_text()
)
RECIPES = yaml.safe_load((DATA_DIR / "recipes.yaml").read_text())
ALIASES = yaml.safe_load((DATA_DIR / "parser_aliases.yaml").read_text())

# The quantised siblings' config.json carry these (the FP8 ones of Qwen, Z.ai and DeepSeek are
# 128 x 128 block FP8; NVIDIA's are ModelOpt checkpoints, per-tensor FP8 or NVFP4).
BLOCK_FP8 = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [128, 128],
}
MODELOPT = {"fp8": {"quant_method": "modelopt", "quant_algo": "FP8"}}
NVFP4 = {"quant_method": "modelopt", "quant_algo": "NVFP4"}

# An official command that cannot run on the card it is filed under, with the arithmetic.
CANNOT_RUN = {
    # One cookbook command for MI300X, MI325X and MI355X: BF16 GLM-5 is 176.6 GiB per GPU at
    # TP 8 + EP, more than the command's own --mem-fraction-static 0.80 × 192 GB of an MI300X.
    "sglang-glm5-bf16-tp8-tilelang-mi300x": "MI355X",
}


def official_flags(command: str) -> dict[str, str | None]:
    """Long options of a shell command and their values (``--x v`` or ``--x=v``)."""
    words = shlex.split(command.replace("\\\n", " "), comments=True)
    out: dict[str, str | None] = {}
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        name, eq, value = word.partition("=")
        nxt = words[i + 1] if i + 1 < len(words) else None
        out[name] = value if eq else (nxt if nxt is not None and not nxt.startswith("-") else None)
    return out


def _sibling_formats() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for row in RECIPES["checkpoints"]:
        for fmt in ("bf16", "fp8", "nvfp4", "mxfp4"):
            if fmt in row:
                out[row[fmt]["repo"]] = (fmt, row["bundled_model"])
    return out


SIBLINGS = _sibling_formats()


def _config(row: dict[str, Any]) -> dict[str, Any]:
    bundled = row["bundled_model"]
    cfg: dict[str, Any] = json.loads(
        (DATA_DIR / "models" / (bundled.replace("/", "__") + ".json")).read_text()
    )
    fmt = SIBLINGS.get(row["model"], ("", ""))[0]
    if fmt == "fp8":
        cfg["quantization_config"] = (
            MODELOPT["fp8"] if row["model"].startswith("nvidia/") else BLOCK_FP8
        )
    elif fmt == "nvfp4":
        cfg["quantization_config"] = NVFP4
    return cfg


ROWS = [r for r in FIXTURE if r.get("bundled_model")]


@cache
def _study(row_id: str, gpu: str | None = None) -> Study:
    row = next(r for r in ROWS if r["id"] == row_id)
    hw = row["hardware"]
    return run(
        _config(row),
        engine=row["engine"],
        gpu=gpu or hw["gpu"],
        gpus_per_node=hw["gpus_per_node"],
        nodes=hw.get("nodes", 1),
    )


@pytest.mark.parametrize("row_id", [r["id"] for r in ROWS])
def test_every_official_command_runs_in_our_plan_on_its_own_hardware(row_id: str) -> None:
    st = _study(row_id)
    if row_id in CANNOT_RUN:
        assert not st.plan.runnable
        assert not st.fit.weights_fit
        assert _study(row_id, CANNOT_RUN[row_id]).plan.runnable
        return
    assert st.plan.runnable, st.plan.blocked_by
    assert st.fit.context > 0 and st.fit.users > 0
    assert st.plan.gpus == st.layout.replicas * st.layout.split.gpus


def _same_class(engine: str, kind: str, a: str, b: str) -> bool:
    groups = ALIASES[engine]["tool_call" if kind == "tool_call" else "reasoning"]
    return any(a in g["names"] and b in g["names"] and g["same_behaviour"] for g in groups)


def _recorded(engine: str, kind: str, ours: str | None, theirs: str) -> bool:
    return any(
        d["engine"] == engine and d["kind"] == kind and d["theirs"] == theirs and d["ours"] == ours
        for d in RECIPES["parser_disagreements"]
    )


PARSER_ROWS = [
    r
    for r in ROWS
    if r["model"] == r["bundled_model"]
    or SIBLINGS.get(r["model"], ("", ""))[1] == r["bundled_model"]
]


@pytest.mark.parametrize("row_id", [r["id"] for r in PARSER_ROWS])
def test_our_parsers_are_the_official_ones_or_a_recorded_disagreement(row_id: str) -> None:
    row = next(r for r in ROWS if r["id"] == row_id)
    theirs_flags = official_flags(row["command"])
    ours_flags = {f.flag: f.value for f in _study(row_id).plan.flags}
    for flag, kind in (("--tool-call-parser", "tool_call"), ("--reasoning-parser", "reasoning")):
        theirs = theirs_flags.get(flag)
        if theirs is None:
            continue
        ours = ours_flags.get(flag)
        assert (
            ours == theirs
            or (ours is not None and _same_class(row["engine"], kind, ours, theirs))
            or _recorded(row["engine"], kind, ours, theirs)
        ), (flag, ours, theirs)


def test_the_parser_comparison_covers_commands_of_both_engines() -> None:
    named = [
        r
        for r in PARSER_ROWS
        if {"--tool-call-parser", "--reasoning-parser"} & set(official_flags(r["command"]))
    ]
    assert {r["engine"] for r in named} == {"vllm", "sglang"}
    assert len(named) >= 8
