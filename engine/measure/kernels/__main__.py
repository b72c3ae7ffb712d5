"""``python -m engine.measure.kernels [--device cpu|cuda] [--json] [--model-dims JSON]``

Prints the result rows (a JSON list with ``--json``). Exit 0 when every row passed, 1 when
one failed, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from engine.cli_util import InputErrorParser, run_cli
from engine.measure.kernels.common import CheckResult
from engine.measure.kernels.dims import PRESETS, LayerGroup, dims_from_spec, read_dims_spec
from engine.measure.kernels.runner import CHECK_NAMES, run_all


def _table(rows: list[CheckResult]) -> str:
    def num(x: float | None) -> str:
        if x is None:
            return "-"
        return f"{x:,.0f}" if abs(x) >= 1e4 else f"{x:.4g}"

    width = max(len(r.name) for r in rows)
    lines = []
    check = ""
    for r in rows:
        if r.check != check:
            check = r.check
            lines.append(f"[{check}]")
        mark = "ok  " if r.passed else "FAIL"
        lines.append(
            f"  {mark} {r.name:<{width}}  {num(r.measured):>14} {r.unit:<6} "
            f"expected {num(r.expected):>14}   {r.note}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = InputErrorParser(prog="python -m engine.measure.kernels", description=__doc__)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--json", action="store_true", help="print a JSON list of result rows")
    parser.add_argument("--model-dims", help="JSON object (or file) of KernelDims fields")
    parser.add_argument("--model", help="a model SOURCE (catalog name, config.json, hub id)")
    parser.add_argument("--preset", help=f"start from one of: {', '.join(PRESETS)}")
    parser.add_argument("--catalog-gbps", type=float, help="the GPU's catalog bandwidth, GB/s")
    parser.add_argument("--concurrency", type=int, help="requests decoded together")
    parser.add_argument("--context", type=int, help="cached tokens per request for decode")
    parser.add_argument("--only", action="append", help=f"run only: {', '.join(CHECK_NAMES)}")
    return run_cli(parser, argv, _run)


def _run(args: argparse.Namespace) -> int:
    spec = read_dims_spec(args.model_dims) if args.model_dims else {}
    if args.preset:
        spec["preset"] = args.preset
    groups: list[LayerGroup] | None = None
    hybrid_block = None
    if args.model:
        from engine.facts import kernel_dims, kernel_layer_groups
        from engine.model.loader import load_model

        cfg = load_model(args.model).config
        spec = kernel_dims(cfg).to_dict() | spec
        groups, hybrid_block = kernel_layer_groups(cfg)
    start = time.perf_counter()
    rows = run_all(
        args.device,
        dims_from_spec(spec),
        None,
        catalog_gbps=args.catalog_gbps,
        concurrency=args.concurrency,
        context=args.context,
        only=args.only,
        layer_groups=groups,
        hybrid_block=hybrid_block,
    )
    elapsed = time.perf_counter() - start
    if args.json:
        print(json.dumps([r.as_dict() for r in rows], indent=2))
    else:
        print(_table(rows))
        failed = sum(not r.passed for r in rows)
        print(f"\n{len(rows) - failed}/{len(rows)} passed on {args.device} in {elapsed:.1f} s")
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
