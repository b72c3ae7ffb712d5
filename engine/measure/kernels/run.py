"""``python -m engine kernels``: run the torch micro-kernels on the dims of a model or a
preset and print the checks (torch is imported here, on demand)."""

from __future__ import annotations

import argparse
import time

from engine.errors import InputError
from engine.measure.kernels.common import CheckResult
from engine.measure.kernels.dims import MODEL_OR_PRESET, KernelDims
from engine.measure.kernels.from_model import kernel_dims
from engine.measure.kernels.runner import run_all
from engine.measure.kernels.spec import dims_from_spec, read_dims_spec
from engine.model.loader import load_model


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


def run_kernels(args: argparse.Namespace) -> tuple[list[CheckResult], float]:
    """The checks the arguments ask for, and the seconds they took."""
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
    return rows, time.perf_counter() - start
