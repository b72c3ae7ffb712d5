"""``python -m engine kernels``: run the torch micro-kernels on the dims of a model or a
preset and print the checks (torch is imported here, on demand)."""

from __future__ import annotations

import argparse
import json
import time

from engine.errors import InputError
from engine.measure.kernels.common import CheckResult
from engine.measure.kernels.dims import MODEL_OR_PRESET, KernelDims
from engine.measure.kernels.from_model import kernel_dims
from engine.measure.kernels.runner import run_all
from engine.measure.kernels.spec import dims_from_spec, read_dims_spec
from engine.model.loader import load_model


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
        raise InputError("preset", MODEL_OR_PRESET())
    if preset:
        spec["preset"] = preset
    if not model:
        return dims_from_spec(spec)
    loaded = load_model(model)
    return dims_from_spec(spec, kernel_dims(loaded.config, loaded.name))


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
