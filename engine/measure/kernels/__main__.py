"""``python -m engine.measure.kernels [--device cpu|cuda] [--json] [--model SOURCE | --preset NAME]
[--model-dims JSON]``

Prints the result rows (a JSON list with ``--json``). Exit 0 when every row passed, 1 when
one failed, 2 on bad input (one line on stderr). Argument parsing only: ``dims_for_args`` and
``run_all`` do the work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from engine.errors import InputError
from engine.measure.kernels.common import CheckResult
from engine.measure.kernels.dims import KernelDims
from engine.measure.kernels.from_model import kernel_dims
from engine.measure.kernels.runner import run_all
from engine.measure.kernels.spec import dims_from_spec, read_dims_spec


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


def dims_for_args(model: str | None, preset: str | None, model_dims: str | None) -> KernelDims:
    """The dims a run uses: a model's config, or a preset (a catalog model), with the
    ``--model-dims`` fields changed over it."""
    spec = read_dims_spec(model_dims) if model_dims else {}
    if model and preset:
        raise InputError("preset", "either --model or --preset, not both")
    if preset:
        spec["preset"] = preset
    if not model:
        return dims_from_spec(spec)
    from engine.model.loader import load_model

    loaded = load_model(model)
    return dims_from_spec(spec, kernel_dims(loaded.config, loaded.name))


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.measure.kernels ...`` is ``python -m engine kernels ...``."""
    from engine.cli import main as cli_main

    return cli_main(["kernels", *(sys.argv[1:] if argv is None else argv)])


def run_kernels(args: argparse.Namespace) -> int:
    dims = dims_for_args(args.model, args.preset, args.model_dims)
    start = time.perf_counter()
    rows = run_all(
        args.device,
        dims,
        None,
        catalog_gbps=args.catalog_gbps,
        concurrency=args.concurrency,
        context=args.context,
        only=args.only,
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
