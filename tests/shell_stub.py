"""Run shell text with the launchers stubbed on PATH and read back the argv they received.

``vllm``, ``sglang``, ``python`` and ``python3`` are small scripts in a scratch ``bin`` folder
that write their arguments (NUL-separated) to ``$STUB_OUT/<launcher>.<n>`` and exit; bash runs
with that folder first on PATH, a fixed HOME and environment, in an empty working folder (globs
match nothing). A payload in the generated text only ever ``touch``es a file in ``marks``, so
"no payload ran" is "``marks`` is empty".
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

BASH = shutil.which("bash") or "/bin/bash"
LAUNCHERS = ("vllm", "sglang", "python", "python3", "docker")
STUB = """#!/bin/sh
n=$(ls "$STUB_OUT" | wc -l)
printf '%s\\0' "$(basename "$0")" "$@" > "$STUB_OUT/$n"
"""
# The environment the generated words read: spaces and glob characters in values, so an
# unquoted reference splits and a quoted one does not.
ENV = {"X": "a  b", "Y": "*", "Z": "", "Q": "'q' \"r\""}


@dataclass(frozen=True)
class Sandbox:
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def out(self) -> Path:
        return self.root / "out"

    @property
    def marks(self) -> Path:
        return self.root / "marks"

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"


def sandbox(root: Path) -> Sandbox:
    box = Sandbox(root)
    for d in (box.bin, box.out, box.marks, box.cwd, root / "home"):
        d.mkdir(parents=True, exist_ok=True)
    for name in LAUNCHERS:
        path = box.bin / name
        path.write_text(STUB)
        path.chmod(0o755)
    return box


def run(box: Sandbox, script: str, timeout: float = 30) -> list[list[str]]:
    """Run ``script`` in the sandbox; the argv of each launcher call, in call order."""
    for f in box.out.iterdir():
        f.unlink()
    env = {
        "PATH": f"{box.bin}:/usr/bin:/bin",
        "HOME": str(box.root / "home"),
        "STUB_OUT": str(box.out),
        "LC_ALL": "C.UTF-8",
        **ENV,
    }
    subprocess.run(
        [BASH, "--norc", "--noprofile", "-c", script],
        cwd=box.cwd,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    calls = sorted(box.out.iterdir(), key=lambda p: int(p.name))
    return [p.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1] for p in calls]


def payload_ran(box: Sandbox) -> list[str]:
    return sorted(os.listdir(box.marks))
