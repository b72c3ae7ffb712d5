"""Blocked means cannot start: a blocked plan's launch and docker scripts stop with the reason
before any launcher runs, and its Kubernetes manifests run zero replicas and say why."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from engine.launch.plan import LaunchPlan
from engine.present.artifacts import docker_script
from engine.present.k8s import kubernetes_yaml
from engine.present.render import script
from engine.scenario import make_scenario
from engine.study import study
from tests.test_k8s import schema_errors

BLOCKED = [
    {"model": "moonshotai/Kimi-K2-Instruct", "gpu": "H100", "gpus_per_node": 1, "users": 16},
    {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX 4090", "gpus_per_node": 2},
    {"model": "deepseek-ai/DeepSeek-V3", "gpus_per_node": 8, "nodes": 2, "gpu": "RTX 4090"},
]
LAUNCHERS = ("vllm", "python3", "python", "docker", "sglang", "ray", "torchrun")


def _plans() -> list[LaunchPlan]:
    out = []
    for fields in BLOCKED:
        for engine in ("vllm", "sglang"):
            st = study(make_scenario(**fields, engine=engine))
            if st.plan is not None:
                assert not st.plan.runnable, fields
                out.append(st.plan)
    return out


def _stub_path(tmp: Path) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in LAUNCHERS:
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho "{name} $*" >> "{tmp}/ran"\n')
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LEADER_ADDR": "10.0.0.1"}


@pytest.mark.parametrize("kind", ["script", "docker"])
def test_a_blocked_plans_scripts_exit_non_zero_before_any_launcher_runs(
    kind: str, tmp_path: Path
) -> None:
    env = _stub_path(tmp_path)
    plans = _plans()
    assert len(plans) >= 4
    for i, plan in enumerate(plans):
        text = script(plan) if kind == "script" else docker_script(plan)
        path = tmp_path / f"{kind}-{i}.sh"
        path.write_text(text)
        done = subprocess.run(
            ["bash", str(path), "0"], env=env, capture_output=True, text=True, timeout=30
        )
        assert done.returncode != 0, text
        assert "BLOCKED" in done.stderr
        assert not (tmp_path / "ran").exists(), (tmp_path / "ran").read_text()


def test_a_runnable_plans_script_reaches_its_launcher(tmp_path: Path) -> None:
    env = _stub_path(tmp_path)
    plan = study(make_scenario(model="meta-llama/Meta-Llama-3.1-8B", gpus_per_node=1)).plan
    assert plan is not None and plan.runnable
    path = tmp_path / "ok.sh"
    path.write_text(script(plan))
    subprocess.run(["bash", str(path)], env=env, check=True, timeout=30)
    assert (tmp_path / "ran").read_text().startswith("vllm serve")


def test_a_blocked_plans_manifests_run_zero_replicas_and_say_why() -> None:
    for plan in _plans():
        text = kubernetes_yaml(plan, "blocked")
        assert text.startswith("# BLOCKED: ")
        docs = [d for d in yaml.safe_load_all(text) if d]
        workloads = [d for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet")]
        assert workloads and all(d["spec"]["replicas"] == 0 for d in workloads)
        for d in workloads:
            notes = d["metadata"]["annotations"]
            assert any(k.startswith("serving-playbook/blocked-") for k in notes)
        assert [e for d in docs for e in schema_errors(d)] == []
