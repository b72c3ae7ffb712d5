"""The command line: one argparse tree, ``python -m engine <subcommand> ...``.

``study`` prints the whole Study of a scenario; ``diagnose``, ``gates``, ``software`` and
``plan`` print their slices of the same object; ``lint`` reads an inherited command into a
scenario; ``backcalc`` and ``kernels`` measure; ``gpus`` lists the GPU catalog. Every
subcommand takes ``-h``. Bad input is one line on stderr (``error: <field>: <what was
expected>``) and exit code 2; never a traceback. ``lint`` exits 1 when the command has an
error (``--strict``: or a warning), else 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from engine import errors as E
from engine.capacity.compare import RATE_NEEDED, compare, compare_json
from engine.capacity.shortlist import shortlist
from engine.decision import Name
from engine.disagg.choice import launch_plan
from engine.errors import InputError
from engine.hardware.gpus import aliases, all_gpus
from engine.i18n import LANGS, t
from engine.lint import lint_command
from engine.measure import bench_compare
from engine.measure.backcalc_cli import add_backcalc_arguments, backcalc_files, predict_for_source
from engine.measure.bench_command import bench_plan
from engine.measure.bench_result import read_result_files
from engine.measure.input_guards import read_bytes
from engine.measure.kernels.args import add_kernel_arguments
from engine.model import store
from engine.model.loader import HF_ID, load_model
from engine.perf import calibration, stack_calibration
from engine.perf.stack_calibration import to_json
from engine.present.bench_report import comparison_json, comparison_text
from engine.present.bench_script import bench_json, bench_script
from engine.present.capacity_words import compare_text, shortlist_text
from engine.present.disagg_k8s import MAX_NAME, disagg_kubernetes_yaml
from engine.present.disagg_render import disagg_script
from engine.present.disagg_words import disagg_plan_json
from engine.present.k8s import KubeOptions, kubernetes_yaml, manifest_name
from engine.present.lint_words import format_report, json_report
from engine.present.measure_words import backcalc_json, backcalc_text, checks_json, checks_text
from engine.present.render import script
from engine.present.study_report import (
    diagnose_json,
    gates_json,
    plan_json,
    software_json,
    study_json,
)
from engine.present.text import diagnose_text, software_text, study_text
from engine.scenario import (
    AUTO,
    HUB_PREFIX,
    FieldRow,
    Group,
    Scenario,
    catalog_name,
    fields,
    from_text,
    make_scenario,
    whole_number,
)
from engine.study import study
from engine.text.safe import json_text, plain
from engine.text.units import gib
from engine.text.words import say

MAX_ARG_CHARS = 65_536  # an argument longer than this is not a name, a number or a command
_SURROGATE = re.compile("[\ud800-\udfff]")


class Parser(argparse.ArgumentParser):
    """argparse that raises ``InputError`` naming the argument instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        name = "arguments"
        if message.startswith("argument "):
            head, _, rest = message.partition(": ")
            name = head.removeprefix("argument ").split("/")[0].strip()
            message = rest
        raise InputError(name, E.PARSER(message=Name(message)))


# --- the scenario flags every study-based subcommand shares -----------------------------------


# the title of each help group the scenario table puts its flags in (Spec.cli_group)
_GROUP_TITLES: dict[Group, str] = {
    "hardware": "hardware",
    "workload": "workload",
    "speed": "speed (workload and targets)",
    "memory": "memory",
    "layout": "layout (pin; default: the layout search chooses)",
    "traffic": "traffic and cost",
    "disagg": "disaggregated serving",
}


def _default_words(row: FieldRow) -> str:
    if row.default is None or row.default is False:
        return row.spec.why
    shown = f"{row.default:,}" if isinstance(row.default, int) else str(row.default)
    return f"{shown}: {row.spec.why}" if row.spec.why else shown


def _arg_type(row: FieldRow) -> Callable[[str], Any]:
    """Text to the field's type; 'auto' for a field whose None is a value of its own."""

    def convert(text: str) -> Any:
        if row.spec.auto and text.strip().lower() == AUTO:
            return None
        if row.kind in (int, float):
            return from_text(row.name, text)  # as a link reads it: ASCII digits only
        return text

    convert.__name__ = "a whole number" if row.kind is int else row.kind.__name__
    return convert


def add_scenario_args(
    p: argparse.ArgumentParser, *, source: bool = True, repeat: tuple[str, ...] = ()
) -> None:
    """The scenario flags, one per field of the Scenario's table (engine/scenario.py);
    ``repeat``: fields whose flag may be given more than once (a list of values)."""
    if source:
        p.add_argument(
            "source",
            help="a bundled catalog name, a Hugging Face id, a config.json path or JSON text",
        )
    groups: dict[str, argparse._ArgumentGroup] = {}
    for row in fields():
        if row.spec.cli is None:
            continue
        group = row.spec.cli_group
        assert group is not None, row.name  # every flag of the table names its group
        title = _GROUP_TITLES[group]
        g = groups.get(title) or groups.setdefault(title, p.add_argument_group(title))
        help_text = f"{row.spec.help} (default {_default_words(row)})"
        help_text = help_text.replace("%", "%%")
        if row.kind is bool and row.optional:
            g.add_argument(
                row.spec.cli, dest=row.name, action=argparse.BooleanOptionalAction,
                default=None, help=help_text,
            )  # fmt: skip
        elif row.kind is bool:
            g.add_argument(row.spec.cli, dest=row.name, action="store_true", default=None,
                           help=help_text)  # fmt: skip
        else:
            g.add_argument(
                row.spec.cli, dest=row.name, type=_arg_type(row), default=_UNSET,
                choices=row.choices or None, help=help_text,
                metavar=row.name.upper() if not row.choices else None,
                action="append" if row.name in repeat else "store",
            )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON")


_UNSET: Any = argparse.SUPPRESS  # a flag left out leaves its field to the Scenario's default


def _stack_calibration(path: str) -> str:
    data = read_bytes(path, stack_calibration.FIELD, stack_calibration.MAX_BYTES)
    return stack_calibration.put(stack_calibration.parse_stack_calibration(data))


# the held fields' files, read into the digest the scenario keeps
HELD_FILES: dict[str, Callable[[str], str]] = {
    "calibration": lambda path: calibration.put(calibration.load_calibration(Path(path))),
    "bench_calibration": _stack_calibration,
}


def scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The Scenario the flags describe (the model source resolved and registered)."""
    given: dict[str, Any] = {}
    if getattr(args, "source", None) is not None:
        given.update(source_fields(args.source))
    for row in fields():
        if row.spec.cli is None or not hasattr(args, row.name):
            continue
        value = getattr(args, row.name)
        if row.kind is bool and value is None:
            continue
        if row.spec.held:  # a file on the CLI; the scenario holds its digest
            value = HELD_FILES[row.name](value)
        given[row.name] = value
    return make_scenario(**given)


def source_fields(source: str) -> dict[str, Any]:
    """Scenario fields for a SOURCE: catalog and hub ids by name, anything else (a path, JSON
    text) loaded here and held by digest."""

    text = source.strip()
    if text.startswith(HUB_PREFIX):  # the hub's own, where a bundled config has the same id
        repo = text.removeprefix(HUB_PREFIX)
        if not HF_ID.match(repo):
            raise InputError("source", E.HUB_PREFIX(prefix=Name(HUB_PREFIX), got=E.got(text)))
        return {"source": "hub", "model": repo}
    name = catalog_name(text)
    if name is not None:
        return {"source": "catalog", "model": name}
    try:
        loaded = load_model(source)
    except OSError as err:  # e.g. a file name longer than the file system allows
        raise InputError("source", E.readable(err)) from None
    if loaded.source == "catalog":
        return {"source": "catalog", "model": loaded.name}
    if loaded.source == "hub" and HF_ID.match(loaded.name):
        return {"source": "hub", "model": loaded.name}
    return {"source": "file", "model": loaded.name[:200], "digest": store.put(loaded)}


# --- subcommands ----------------------------------------------------------------------------


def error_text(err: InputError) -> str:
    """``field: expected`` and, when the engine gave one, its decision, in English."""
    return str(err)


def _print(data: Any) -> None:
    """JSON for a terminal: every control character of a config string escaped."""

    print(json_text(data))


def _say(text: str) -> None:
    """Text for a terminal: a config string's ESC, BEL or OSC shows as an escape, never acts."""

    print(plain(text))


def cmd_study(args: argparse.Namespace) -> int:

    st = study(scenario_from_args(args))
    if args.bench_result:  # calibrated on the user's benchmark: the Study searched again
        cmp = bench_compare.compare(st, read_result_files(args.bench_result))
        if args.json:
            _print({**study_json(cmp.calibrated), "bench": comparison_json(cmp)})
        else:
            _say(study_text(cmp.calibrated) + "\n\n" + comparison_text(cmp))
        return 0
    if args.json:
        _print(study_json(st))
        return 0

    _say(study_text(st))
    return 0


def cmd_bench_command(args: argparse.Namespace) -> int:
    """The benchmark that tests the plan, as a script (or its runs as JSON)."""
    st = study(scenario_from_args(args))
    bp = bench_plan(st)
    if bp is None:
        engine = st.scenario.engine
        raise InputError("engine", bench_compare.NO_PLAN(engine=Name(engine)))
    if args.json:
        _print(bench_json(st, bp))
    else:
        _say(bench_script(st, bp, args.lang).rstrip("\n"))
    return 0


def cmd_bench_compare(args: argparse.Namespace) -> int:
    """Result files against the plan's predictions, the refit, the calibration file."""
    cmp = bench_compare.compare(
        study(scenario_from_args(args)), read_result_files(args.bench_result)
    )
    if args.save_calibration:
        Path(args.save_calibration).write_text(to_json(cmp.calibration), encoding="utf-8")
    if args.json:
        _print(comparison_json(cmp))
        return 0
    text = comparison_text(cmp, args.lang)
    if args.save_calibration:
        text += "\n" + t("bench.text.saved", args.lang, path=args.save_calibration)
    _say(text)
    return 0


def add_bench_result_argument(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument(
        "--bench-result",
        nargs="+",
        metavar="FILE",
        required=required,
        default=None,
        help="result files of the plan's benchmark (bench-command): vllm bench serve "
        "--save-result JSON or sglang.bench_serving --output-file JSONL; the speeds are then "
        "calibrated on them",
    )


def cmd_diagnose(args: argparse.Namespace) -> int:

    st = study(scenario_from_args(args))
    out = diagnose_json(st)
    if args.json:
        _print(out)
    else:
        _say(diagnose_text(out))
    return 0


def cmd_gates(args: argparse.Namespace) -> int:

    st = study(scenario_from_args(args))
    out = gates_json(st)
    if args.json:
        _print(out)
        return 0
    layout = say(st.layout.name(), markdown=False)
    lines = [f"{st.model.name} on {st.scenario.total_gpus} × {st.gpu.key}, {layout}"]
    for g in out["gates"]:
        lines.append(
            f"  [{g['status']:4}] {g['name']}: {g['reason']}"
            + (f"  -> {g['fix']}" if g["fix"] else "")
        )
    lines.append(f"fits: {st.gates.fits}; minimum GPUs: {st.min_gpus}")
    _say("\n".join(lines))
    return 0


def cmd_software(args: argparse.Namespace) -> int:

    st = study(scenario_from_args(args))
    if args.json:
        _print(software_json(st, st.scenario.engine))
        return 0

    _say(software_text(st, st.scenario.engine, getattr(args, "lang", None) or "en"))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:

    st = study(scenario_from_args(args))
    options = KubeOptions(
        model_cache_claim=args.model_cache_claim,
        hf_token_secret=args.hf_token_secret,
        host_network=args.host_network,
        rdma_resource=args.rdma_resource,
        nic=args.nic,
    )
    pools = launch_plan(st)  # the disaggregated plan where it is asked for or wins
    if pools is not None:
        name = manifest_name(st.model.name)[:MAX_NAME].rstrip("-")
        if args.kubernetes:
            _say(disagg_kubernetes_yaml(pools, name, options).rstrip("\n"))
        elif args.json:
            _print(disagg_plan_json(pools, st.scenario.gpus_per_node))
        else:
            _say(disagg_script(pools).rstrip("\n"))
        return 0
    plan = st.plan
    if plan is None:
        raise InputError("engine", E.RUNS_LAYOUT(layout=st.layout.name()))
    if args.kubernetes:
        _say(kubernetes_yaml(plan, manifest_name(plan.model_name), options=options).rstrip("\n"))
    elif args.json:
        _print(plan_json(plan))
    else:
        _say(script(plan).rstrip("\n"))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Models × GPUs for one traffic: each SOURCE's capacity on every --gpu given."""
    gpus: list[str] = list(getattr(args, "gpu", None) or [])
    if gpus:
        args.gpu = gpus[0]
        more = [*gpus[1:], *(args.compare_gpus.split(",") if hasattr(args, "compare_gpus") else [])]
        args.compare_gpus = ",".join(more) or None
    base = scenario_from_args(args)
    if base.request_rate is None:
        raise InputError("request_rate", RATE_NEEDED())
    scenarios = [base.replace(**source_fields(src)) for src in args.sources]
    columns = compare(scenarios, base.request_rate)
    if args.json:
        _print(compare_json(columns, base.request_rate))
    else:
        _say(compare_text(columns, base))
    return 0


def cmd_shortlist(args: argparse.Namespace) -> int:
    """The bundled models the GPUs serve, each with its checkpoint, users and speed."""
    found = shortlist(scenario_from_args(args))
    if args.json:
        _print(found.to_json())
    else:
        _say(shortlist_text(found))
    return 0


def add_kubernetes_arguments(p: argparse.ArgumentParser) -> None:
    """What a cluster decides and the plan cannot know (engine.present.k8s.KubeOptions)."""
    k = p.add_argument_group("Kubernetes (with --kubernetes)")
    k.add_argument(
        "--kubernetes", action="store_true", help="print the Kubernetes manifests instead"
    )
    k.add_argument(
        "--model-cache-claim",
        metavar="NAME",
        help="the PersistentVolumeClaim that holds the Hugging Face cache (default: a "
        "placeholder name to replace)",
    )
    k.add_argument(
        "--hf-token-secret",
        metavar="NAME",
        help="the Secret whose HF_TOKEN key holds the Hugging Face token",
    )
    k.add_argument(
        "--host-network",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run multi-node pods on the node's network (NCCL over RDMA); default: as "
        "data/launch.yaml says",
    )
    k.add_argument(
        "--rdma-resource",
        metavar="NAME",
        help="an RDMA device-plugin resource each multi-node pod requests (e.g. rdma/ib)",
    )
    k.add_argument("--nic", metavar="NAME", help="the NIC Gloo and NCCL bind to (e.g. ib0)")


def cmd_lint(args: argparse.Namespace) -> int:

    given = load_model(args.model) if args.model is not None else None
    report = lint_command(args.command, given, args.gpu, args.gpus, hub=True)
    if args.json:
        print(json_report(report))
    else:
        _say(format_report(report))
    # a CI gate: 1 when the command has an error (with --strict, a warning too)
    return 1 if report.errors or (args.strict and report.warnings) else 0


def cmd_backcalc(args: argparse.Namespace) -> int:

    predict = getattr(args, "predict", None) or predict_for_source
    result = backcalc_files(args.source, args.log, args.metrics, args.tp, predict)
    print(backcalc_json(result) if args.json else backcalc_text(result))
    return 0


def cmd_kernels(args: argparse.Namespace) -> int:
    from engine.measure.kernels.run import run_kernels  # torch, on demand

    rows, elapsed = run_kernels(args)
    print(checks_json(rows) if args.json else checks_text(rows, args.device, elapsed))
    return 0 if all(r.passed for r in rows) else 1


def cmd_gpus(args: argparse.Namespace) -> int:
    """The GPU catalog: the names ``--gpu`` accepts, the device memory, the aliases."""

    gpus = all_gpus()
    if args.json:
        rows = [
            {
                "key": g.key,
                "name": g.name,
                "memory_bytes": g.device_memory_bytes,
                "memory": gib(g.device_memory_bytes),
                "vendor_memory": g.memory_label,
                "arch": g.arch,
                "aliases": list(aliases(g.key)),
            }
            for g in gpus
        ]
        _print(rows)
        return 0
    cells = [("--gpu", "name", "memory", "vendor's", "arch", "also accepted")]
    for g in gpus:
        also = ", ".join(aliases(g.key)) or "—"
        cells.append((g.key, g.name, gib(g.device_memory_bytes), g.memory_label, g.arch, also))
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    for row in cells:
        line = "  ".join(
            cell.rjust(w) if i == 2 else cell.ljust(w)  # memory: numbers right-aligned
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        print(line.rstrip())
    print("\nmemory: the device's own (GiB, 2^30 bytes), as the engines see it; vendor's: the "
          "datasheet figure. --gpu takes a key, a name or an alias, in any case.")  # fmt: skip
    return 0


def build_parser() -> Parser:
    ap = Parser(
        prog="python -m engine",
        description="Serving Playbook: the six-step serving diagnosis on the command line.",
    )
    sub = ap.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    commands: list[tuple[str, str, Callable[[argparse.Namespace], int]]] = [
        ("study", "the whole Study of a scenario (every slice below)", cmd_study),
        ("diagnose", "family, KV cache, weights and users that fit", cmd_diagnose),
        ("gates", "hardware gates: pass / warn / fail with reasons", cmd_gates),
        ("software", "engine versions, parsers, checkpoint format", cmd_software),
        ("plan", "the launch plan: commands, script, docker and Kubernetes", cmd_plan),
    ]
    for name, help_text, func in commands:
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_scenario_args(p)
        p.set_defaults(func=func)
        if name == "software":
            p.add_argument("--lang", choices=LANGS, default="en", help="language of the text")
        if name == "plan":
            add_kubernetes_arguments(p)
        if name == "study":
            add_bench_result_argument(p, required=False)
    bench_help = "the benchmark that tests the plan: vllm bench serve / sglang.bench_serving sweep"
    bench = sub.add_parser("bench-command", help=bench_help, description=bench_help)
    add_scenario_args(bench)
    bench.add_argument("--lang", choices=LANGS, default="en", help="language of the comments")
    bench.set_defaults(func=cmd_bench_command)
    compare_help = "benchmark results against the plan's predictions, and the stack refitted"
    bc_cmp = sub.add_parser("bench-compare", help=compare_help, description=compare_help)
    add_scenario_args(bc_cmp)
    add_bench_result_argument(bc_cmp, required=True)
    bc_cmp.add_argument(
        "--save-calibration",
        metavar="FILE",
        help="write the calibration (--bench-calibration FILE gives it back)",
    )
    bc_cmp.add_argument("--lang", choices=LANGS, default="en", help="language of the text")
    bc_cmp.set_defaults(func=cmd_bench_compare)
    cmp_help = "models × GPUs for one traffic: GPUs needed, $/M tokens, TTFT / TPOT, context"
    cmp = sub.add_parser("compare", help=cmp_help, description=cmp_help)
    cmp.add_argument("sources", nargs="+", metavar="SOURCE", help="models to compare (as study)")
    add_scenario_args(cmp, source=False, repeat=("gpu",))
    cmp.set_defaults(func=cmd_compare)
    sl_help = "the bundled models the GPUs serve: checkpoint, users, speed, what is gated out"
    sl = sub.add_parser("shortlist", help=sl_help, description=sl_help)
    add_scenario_args(sl, source=False)
    sl.set_defaults(func=cmd_shortlist)
    lint_help = "lint an inherited vLLM / SGLang launch command against the Study of its scenario"
    lint = sub.add_parser("lint", help=lint_help, description=lint_help)
    lint.add_argument("command", help="the command, a launch script or a pod manifest, as text")
    lint.add_argument(
        "--model",
        help="the model SOURCE to check against when the command's own config cannot be loaded",
    )
    lint.add_argument("--gpu", help="GPU name from the catalog (memory and kernel checks)")
    lint.add_argument("--gpus", type=whole_number("gpus"), help="GPUs available in all")
    lint.add_argument("--json", action="store_true", help="print JSON")
    lint.add_argument(
        "--strict", action="store_true", help="exit 1 on a warning too (default: on an error)"
    )
    lint.set_defaults(func=cmd_lint)

    bc_help = "read a running engine's log or /metrics back"
    bc = sub.add_parser("backcalc", help=bc_help, description=bc_help)
    add_backcalc_arguments(bc)
    bc.set_defaults(func=cmd_backcalc)
    gpus_help = "the GPU catalog: the names --gpu accepts, device memory and aliases"
    gp = sub.add_parser("gpus", help=gpus_help, description=gpus_help)
    gp.add_argument("--json", action="store_true", help="print JSON")
    gp.set_defaults(func=cmd_gpus)
    kn_help = "torch micro-kernels that check the model on CPU or GPU"
    kn = sub.add_parser("kernels", help=kn_help, description=kn_help)
    add_kernel_arguments(kn)
    kn.set_defaults(func=cmd_kernels)
    return ap


MAX_ERROR_CHARS = 1_000  # an error line quotes the input; a whole expanded document is not a line


def fail(message: str) -> int:

    line = plain(message.replace("\n", " ").replace("\r", " "))
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 1] + "…"
    print(line, file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None, *, backcalc_predict: Any = None) -> int:
    """Run one subcommand. ``backcalc_predict`` replaces the back-calculation's prediction
    (tests give a fixed one)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if any(len(a) > MAX_ARG_CHARS for a in args_in):
        return fail(f"error: arguments: each at most {MAX_ARG_CHARS:,} characters")
    if any(not a.isascii() and _SURROGATE.search(a) for a in args_in):
        # Python hands bytes that are not UTF-8 over as lone surrogates (surrogateescape)
        return fail("error: arguments: UTF-8 text (an argument holds bytes that are not UTF-8)")
    try:
        try:
            args = build_parser().parse_args(args_in)
        except SystemExit as done:  # --help printed its text
            return done.code if isinstance(done.code, int) else 0
        if backcalc_predict is not None:
            args.predict = backcalc_predict
        result: int = args.func(args)
        return result
    except InputError as err:
        return fail(f"error: {error_text(err)}")
    except BrokenPipeError:  # the reader went away (| head): nothing left to say
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # no flush error at exit
        return 0
    except OSError as err:  # the file's name stays out: it may be a path on the server
        return fail(
            f"error: input: a file could not be read ({err.strerror or type(err).__name__})"
        )
    except (RecursionError, MemoryError, OverflowError, ValueError) as err:
        return fail(f"error: input: {type(err).__name__} while reading the input ({err})"[:500])
    except Exception as err:  # the guard: one line, the traceback only when asked for
        if os.environ.get("SERVING_PLAYBOOK_DEBUG"):
            traceback.print_exc()
        return fail(
            f"error: internal: {type(err).__name__}: {err} (a bug; set SERVING_PLAYBOOK_DEBUG=1 "
            "for the traceback)"[:500]
        )
