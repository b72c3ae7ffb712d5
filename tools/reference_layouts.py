"""Write data/reference_layouts.yaml: the parallel layout of every official launch command
(tests/fixtures/official_commands.yaml, copied verbatim from the vLLM recipes, the SGLang docs and
cookbook) and of the serving playbook's own commands (seed 004), each with the hardware it was
written for and its source. The speed chart always draws these layouts where a Study has them.

The layout is read the way the linter reads a command (engine.lint: extract, parse,
read_settings, Settings.layout): attention TP, DP-attention ranks (MoE), PP, EP and replicas. A
command is MoE when its bundled config is, or (unbundled) when it turns expert parallelism on.

    python -m tools.reference_layouts          # rewrite the file
    python -m tools.reference_layouts --check  # exit 1 when the file is out of date
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from engine.errors import InputError
from engine.lint.arguments import parse
from engine.lint.command_scenario import read_settings
from engine.lint.extract import extract
from engine.model.architecture import build_architecture
from engine.model.family import classify
from engine.model.loader import load_catalog
from engine.rules import DATA_DIR
from engine.scenario import catalog_name

FIXTURE = DATA_DIR.parent / "tests" / "fixtures" / "official_commands.yaml"
OUT = DATA_DIR / "reference_layouts.yaml"
HEADER = """\
# The parallel layouts of the official launch commands and of the serving playbook's commands,
# each with the hardware it was written for and its source. Written by
# `python -m tools.reference_layouts` from tests/fixtures/official_commands.yaml (verbatim
# commands) and the playbook rows below it in the tool; do not edit by hand.
# The speed chart (engine/present/speed_chart.py) always draws the layout of a row
# whose model and hardware are the Study's.
"""

# The serving playbook's own commands (seed 004), with the hardware its text gives them.
PLAYBOOK: list[dict[str, Any]] = [
    {
        "model": "deepseek-ai/DeepSeek-V3",
        "engine": "vllm",
        "command": "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8",
        "hardware": {"gpu": "H200", "gpus_per_node": 8, "nodes": 1},
        "source": "serving playbook (seed 004), 'The trouble with serving MLA': '# vLLM, "
        "DeepSeek V3, 8×H200' (--tensor-parallel-size 8)",
    },
    {
        "model": "deepseek-ai/DeepSeek-V3",
        "engine": "vllm",
        "command": "vllm serve deepseek-ai/DeepSeek-V3 -dp 8 --enable-expert-parallel",
        "hardware": {"gpu": "H200", "gpus_per_node": 8, "nodes": 1},
        "source": "serving playbook (seed 004), 'The trouble with serving MLA': at scale EP + "
        "DP-attention (-dp 8 --enable-expert-parallel)",
    },
    {
        "model": "Qwen/Qwen3.5-397B-A17B",
        "engine": "vllm",
        "command": "vllm serve Qwen/Qwen3.5-397B-A17B-FP8 -dp 8 --enable-expert-parallel",
        "hardware": {"gpu": None, "gpus_per_node": 8, "nodes": 1},
        "source": "serving playbook (seed 004), 'Qwen3.5 Serving' (-dp 8 --enable-expert-parallel)",
    },
]


def _moe(bundled: str | None, ep: bool) -> bool:
    if bundled is None:
        return ep
    cfg = load_catalog(bundled).config
    return classify(cfg, build_architecture(cfg)).moe


def _layout(engine: str, command: str, bundled: str | None) -> dict[str, Any] | None:
    try:
        inv = extract(command)
    except InputError:
        return None
    words = tuple(w.text for w in (*inv.args, *inv.detached))
    settings, _ = read_settings(inv.engine, parse(inv.engine, words))
    lay = settings.layout(_moe(bundled, settings.ep))
    return {k: lay[k] for k in ("tp", "dp", "pp", "ep", "replicas")}


def rows() -> list[dict[str, Any]]:
    fixture = yaml.safe_load(FIXTURE.read_text())
    out = []
    for row in fixture:
        hw: dict[str, Any] = row.get("hardware") or {}
        lay = _layout(row["engine"], row["command"], row.get("bundled_model"))
        if lay is None or not hw.get("gpus_per_node"):
            continue
        out.append(
            {
                "kind": "official",
                "model": row["model"],
                "engine": row["engine"],
                "gpu": hw.get("gpu"),
                "gpus_per_node": hw["gpus_per_node"],
                "nodes": hw.get("nodes", 1),
                **lay,
                "source": row["source"]["url"],
            }
        )
    for row in PLAYBOOK:
        lay = _layout(row["engine"], row["command"], catalog_name(row["model"]))
        assert lay is not None, row["command"]
        hw = row["hardware"]
        head = {"kind": "playbook", "model": row["model"], "engine": row["engine"]}
        out.append(head | hw | lay | {"source": row["source"]})
    return out


def render() -> str:
    body = yaml.safe_dump({"layouts": rows()}, sort_keys=False, allow_unicode=True, width=100)
    return HEADER + body


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true")
    ns = args.parse_args(argv)
    text = render()
    if ns.check:
        same = OUT.exists() and OUT.read_text() == text
        print("up to date" if same else f"{OUT} is out of date: python -m tools.reference_layouts")
        return 0 if same else 1
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
