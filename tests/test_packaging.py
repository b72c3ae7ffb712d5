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
