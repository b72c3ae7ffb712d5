"""`python -m engine gpus`: the names --gpu accepts, as a table or JSON."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.hardware.gpus import all_gpus, lookup_gpu


def test_gpus_lists_every_catalog_gpu_as_json_with_its_memory_and_aliases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["gpus", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["key"] for r in rows] == [g.key for g in all_gpus()]
    h200 = next(r for r in rows if r["key"] == "H200")
    assert h200["memory"] == "140.40 GiB" and h200["vendor_memory"].startswith("141 GB")
    assert "H200 SXM" in h200["aliases"]
    for r in rows:  # every name listed is one --gpu takes, and takes to this row
        for spelling in (r["key"], r["name"], *r["aliases"]):
            assert lookup_gpu(spelling).key == r["key"], spelling


def test_gpus_prints_a_table_with_a_line_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("--gpu") and "also accepted" in out[0]
    assert any(line.startswith("H200 ") and "140.40 GiB" in line for line in out)
    assert len([line for line in out if line and not line.startswith(("--gpu", "memory:"))]) == len(
        all_gpus()
    )
