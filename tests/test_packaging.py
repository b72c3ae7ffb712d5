"""The README's two commands, CI and the Dockerfile stay in step."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_requirements_are_pinned_and_torch_is_2_13_0() -> None:
    lines = [
        ln.strip()
        for ln in (ROOT / "requirements.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][0-9A-Za-z.]*", ln) for ln in lines)
    assert "torch==2.13.0" in lines


def test_dockerfile_installs_requirements_and_starts_the_app_like_make_run() -> None:
    docker = (ROOT / "Dockerfile").read_text()
    make = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in docker
    assert '"streamlit", "run", "app.py", "--server.headless", "true"' in docker
    assert "streamlit run app.py --server.headless true" in make


TEST_TOOLS = ("pytest", "mypy", "hypothesis", "playwright", "ruff")


def _pins(name: str) -> list[str]:
    return [
        ln.split("==")[0].strip().lower()
        for ln in (ROOT / name).read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]


def _dry_run(target: str, tmp: Path) -> str:
    """What ``make <target>`` would run for a fresh venv (make's own dry run, nothing installed)."""
    import subprocess

    done = subprocess.run(
        ["make", "-n", target, f"VENV={tmp / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_make_run_installs_the_runtime_and_no_test_tool(tmp_path: Path) -> None:
    runtime = _pins("requirements.txt")
    assert "torch" in runtime and "streamlit" in runtime  # the Measure page runs torch kernels
    assert not [p for p in runtime if p.startswith(TEST_TOOLS)], runtime
    run = _dry_run("run", tmp_path)
    assert "pip install -q -r requirements.txt" in run
    assert "requirements-dev.txt" not in run
    assert "streamlit run app.py" in run


def test_make_test_adds_the_test_tools_to_the_runtime(tmp_path: Path) -> None:
    dev = (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert dev[0] == "-r requirements.txt"
    pins = _pins("requirements-dev.txt")
    for tool in ("pytest", "mypy", "hypothesis", "playwright"):
        assert tool in pins, tool
    test = _dry_run("test", tmp_path)
    assert "pip install -q -r requirements-dev.txt" in test


def test_the_dockerfile_installs_the_runtime_only() -> None:
    docker = (ROOT / "Dockerfile").read_text()
    assert "requirements-dev" not in docker
    assert "COPY requirements.txt ." in docker
