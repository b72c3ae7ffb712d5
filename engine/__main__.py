"""Command line: ``python -m engine diagnose SOURCE [...]`` and friends.

Bad input prints one line on stderr naming the field and exits 2; never a traceback."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from engine.errors import InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"arguments: {message}", file=sys.stderr)
        raise SystemExit(2)


def cmd_diagnose(args: argparse.Namespace) -> int:
    from engine.diagnose import Options, diagnose
    from engine.model.loader import load_model

    model = load_model(args.source)
    gpus = args.gpus
    tp = args.tp if args.tp is not None else 1
    if args.gpu is not None and gpus is None:
        gpus = tp
    choices: dict[str, Any] = {
        "kv_dtype": args.kv_dtype,
        "tp": tp,
        "dp": args.dp,
        "expert_parallel": args.ep,
        "context": args.context,
        "users": args.users,
        "gpus": gpus,
        "memory_fraction": args.memory_fraction,
    }
    if args.gpu is None:
        opts = Options(**choices)
    else:
        from engine.hardware.gpus import lookup_gpu

        opts = Options.on_gpu(lookup_gpu(args.gpu), **choices)
    d = diagnose(model.config, opts)
    out = d.to_json()
    out["model"] = model.name
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(render_text(out))
    return 0


def render_text(out: dict[str, Any]) -> str:
    lines = [
        f"{out['model']}  ({out['architecture']})",
        f"family: {out['attention_family']}"
        + (" + sliding window" if out["sliding_window"] else "")
        + (f" + MoE {out['experts_per_token']}/{out['num_experts']}" if out["moe"] else "")
        + (f" + MTP ×{out['mtp_layers']}" if out["mtp_layers"] else "")
        + (f" + multimodal ({out['fusion']} fusion)" if out["multimodal"] else ""),
        f"KV dtype: {out['kv_dtype']} -> stored as {out['kv_dtype_stored']}  (TP {out['tp']})",
    ]
    for g in out["layer_groups"]:
        lines.append(f"  {g['kind']:<10} {g['formula']}")
    lines.append(f"KV bytes/token per rank: {out['kv_bytes_per_token']:,}")
    if out["state_bytes_per_request"]:
        lines.append(f"state bytes/request per rank: {out['state_bytes_per_request']:,}")
    lines.append(
        f"per request at {out['context']:,} tokens: {out['kv_bytes_per_request']:,} B "
        f"({out['kv_bytes_per_request'] / 2**30:.2f} GiB)"
    )
    sg = out["sglang"]
    if sg["differs"]:
        lines.append(
            f"SGLang: {sg['kv_bytes_per_token']:,} B/token ({sg['kv_dtype_stored']}), "
            f"state {sg['state_bytes_per_request']:,} B/request"
        )
    lines.append(
        f"params: {out['params_total'] / 1e9:.1f} B total, "
        f"{out['params_active'] / 1e9:.1f} B active; "
        f"weights {out['weight_bytes'] / 1e9:.1f} GB ({out['checkpoint_format']})"
    )
    if "max_concurrency" in out:
        lines.append(
            f"fits on {out['gpus']}× {out['gpu']}: {out['max_concurrency']} concurrent users"
        )
    return "\n".join(lines)


def cmd_gates(args: argparse.Namespace) -> int:
    from engine.hardware.gates import evaluate_gates
    from engine.hardware.gpus import lookup_gpu
    from engine.model.loader import load_model

    model = load_model(args.source)
    report = evaluate_gates(
        model.config, lookup_gpu(args.gpu), args.gpus, args.kv_dtype, args.context
    )
    out = report.to_json() | {"model": model.name}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{model.name} on {args.gpus}× {report.gpu.key}")
    for g in report.gates:
        print(f"  [{g.status:4}] {g.name}: {g.reason}" + (f"  -> {g.fix}" if g.fix else ""))
    print(f"fits: {report.fits}; minimum GPUs: {report.min_gpus}")
    return 0


def cmd_software(args: argparse.Namespace) -> int:
    from engine.model.loader import load_model
    from engine.software.report import software_report

    model = load_model(args.source)
    model_id = model.name if model.source in ("catalog", "hub") else None
    rep = software_report(model.config.raw, args.engine, model_id)
    out = rep.to_json() | {"model": model.name}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for k, v in out.items():
        print(f"{k}: {v}")
    return 0


def _add_model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="config.json path, JSON text, catalog name or HF id")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m engine", description="Serving Playbook rules engine")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    d = sub.add_parser("diagnose", help="family, KV cache, weights and fit")
    _add_model_args(d)
    d.add_argument("--gpu", help="GPU name from the catalog (enables max_concurrency)")
    d.add_argument("--gpus", type=int, help="GPUs in all; filled with TP-sized instances")
    d.add_argument("--tp", type=int, help="tensor-parallel size (default 1); bytes are per TP rank")
    d.add_argument("--dp", type=int, default=1, help="data-parallel (attention) ranks per instance")
    d.add_argument("--ep", action="store_true", help="expert parallelism")
    d.add_argument("--context", type=int, help="tokens per request (default min(max len, 32768))")
    d.add_argument("--users", type=int, default=1, help="users for max_context_for_users")
    d.add_argument("--kv-dtype", default="auto", help="auto, bf16, fp16, fp8, fp8_e4m3, ...")
    d.add_argument("--memory-fraction", type=float, default=0.9, help="vLLM default 0.9")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_diagnose)
    g = sub.add_parser("gates", help="hardware gates: pass / warn / fail with reasons")
    _add_model_args(g)
    g.add_argument("--gpu", required=True)
    g.add_argument("--gpus", type=int, default=1)
    g.add_argument("--kv-dtype", default="auto")
    g.add_argument("--context", type=int)
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=cmd_gates)
    s = sub.add_parser("software", help="engine versions, parsers, checkpoint format")
    _add_model_args(s)
    s.add_argument("--engine", choices=["vllm", "sglang"], required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_software)
    return ap


def _lint(argv: list[str]) -> int:
    from engine.facts import facts_for_source
    from engine.lint import cli_main

    return cli_main(argv, facts_for_source)


def _backcalc(argv: list[str]) -> int:
    from engine.facts import predict_for_source
    from engine.measure.backcalc import cli_main

    return cli_main(argv, predict_for_source)


def _plan(argv: list[str]) -> int:
    from engine.launch.plan import cli_main

    return cli_main(argv)


EXTERNAL: dict[str, Callable[[list[str]], int]] = {
    "lint": _lint,
    "backcalc": _backcalc,
    "plan": _plan,
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in EXTERNAL:
        try:
            return EXTERNAL[argv[0]](argv[1:])
        except InputError as err:
            print(str(err), file=sys.stderr)
            return 2
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except InputError as err:
        print(str(err), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
