"""The plan's benchmark as text a shell runs, and as data: the sweep that
``engine.measure.bench_command`` decides, written as a bash script (what it tests and how to read
it back as comments in the reader's language, the variables it expands with their defaults, one
command per run) and as JSON (``bench-command --json``).

Every word from a user or a config (the model's id) goes through ``shlex.quote``; comments are
folded onto one line (``engine.present.render.comment``); the only expanded words are the
script's own variables (``Expand``), each double-quoted.
"""

from __future__ import annotations

import shlex
from typing import Any

from engine.engines import Engine
from engine.i18n import DEFAULT_LANG, Lang, t
from engine.measure.bench_command import BenchPlan, Expand, SweepRun, Token, bench_plan
from engine.measure.bench_data import bench_facts
from engine.present.artifacts import Artifact
from engine.present.render import blocked_stop, comment, one_line
from engine.scenario import Scenario, scenario_argv
from engine.study import Study
from engine.text.words import say


def word(token: Token) -> str:
    """One shell word: this module's variables expand (quoted), everything else is quoted."""
    if isinstance(token, Expand):
        return f'"${{{token.var}}}"' + (shlex.quote(token.tail) if token.tail else "")
    return shlex.quote(token)


def _shell(run: SweepRun, head: int) -> str:
    """One run's command, a flag per line with ``\\`` continuations."""
    lines = [" ".join(word(x) for x in run.argv[:head])]
    i = head
    while i < len(run.argv):
        group = [run.argv[i]]
        nxt = run.argv[i + 1] if i + 1 < len(run.argv) else None
        if nxt is not None and not (isinstance(nxt, str) and nxt.startswith("--")):
            group.append(nxt)
            i += 1
        lines.append(" ".join(word(x) for x in group))
        i += 1
    return " \\\n  ".join(lines)


def compare_line(s: Scenario, engine: Engine) -> str | None:
    """The command that reads the results back (None for an uploaded config, whose path only
    the user knows)."""
    if s.source == "file":
        return None
    ext = bench_facts().tools[engine].extension
    on = s.model_copy(update={"engine": engine})
    argv = ["python", "-m", "engine", "bench-compare", s.model, *scenario_argv(on)]
    line = " ".join(shlex.quote(a) for a in argv)
    return f'{line} --bench-result "$RESULT_DIR"/*.{ext}'


def bench_script(st: Study, bp: BenchPlan, lang: Lang = DEFAULT_LANG) -> str:
    """The sweep as a bash script: what it tests and how to read it back as comments (in
    ``lang``), the variables it expands with their defaults, one command per run."""
    p, s = bp.plan, st.scenario
    head = [
        "#!/usr/bin/env bash",
        comment(
            t(
                "bench.script.header",
                lang,
                tool=" ".join(bp.tool.program),
                version=bp.tool.version,
                model=p.model_name,
                nodes=p.nodes,
                per_node=p.gpus_per_node,
                gpu=p.gpu_key,
                layout=say(p.layout.name(), lang),
                isl=f"{bp.isl:,}",
                osl=f"{bp.osl:,}",
                runs=len(bp.runs),
                top=f"{bp.top:,}",
            )
        ),
        comment(t("bench.script.start", lang, port=bp.port)),
    ]
    if bp.servers > 1:
        head.append(comment(t("bench.script.servers", lang, servers=bp.servers, port=bp.port)))
    line = compare_line(s, bp.engine)
    head.append(comment(t("bench.script.read_back", lang, line=one_line(line or ""))))
    head += ["set -euo pipefail", "", *blocked_stop(p, lang)]
    head += [
        'HOST="${HOST:-127.0.0.1}"',
        f'PORT="${{PORT:-{int(bp.port)}}}"',
        'RESULT_DIR="${RESULT_DIR:-bench-results}"',
        'mkdir -p "$RESULT_DIR"',
    ]
    body = []
    for run in bp.runs:
        body += [
            "",
            comment(t("bench.script.run", lang, clients=run.concurrency, prompts=run.num_prompts)),
            _shell(run, len(bp.tool.program)),
        ]
    return "\n".join([*head, *body]) + "\n"


def bench_json(st: Study, bp: BenchPlan) -> dict[str, Any]:
    """The sweep as data: the tool, the endpoint and each run's argv (this module's variables
    written ``${NAME}``) and result file."""
    return {
        "engine": bp.engine,
        "tool": list(bp.tool.program),
        "tool_version": bp.tool.version,
        "port": bp.port,
        "servers": bp.servers,
        "gpus_per_endpoint": bp.gpus,
        "input_tokens": bp.isl,
        "output_tokens": bp.osl,
        "users_per_endpoint": bp.users,
        "top": bp.top,
        "runnable": bp.plan.runnable,
        "runs": [
            {
                "concurrency": r.concurrency,
                "num_prompts": r.num_prompts,
                "warmups": r.warmups,
                "argv": [str(x) for x in r.argv],
                "result_file": r.result_file,
            }
            for r in bp.runs
        ],
        "compare": compare_line(st.scenario, bp.engine),
        "script": bench_script(st, bp),
    }


def bench_artifact(st: Study, engine: Engine, lang: Lang = DEFAULT_LANG) -> Artifact | None:
    """``engine``'s benchmark script as a download (None without a plan)."""
    bp = bench_plan(st, engine)
    if bp is None:
        return None
    return Artifact(
        "bench", f"bench-{engine}.sh", "text/x-shellscript", lambda: bench_script(st, bp, lang)
    )
