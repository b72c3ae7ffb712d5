"""Run the seven micro-kernel checks on CPU (small sizes) or CUDA (the model's dims)."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import PurePath

import torch

from engine import errors as E
from engine.decision import Name
from engine.errors import InputError
from engine.measure import kernel_notes as N
from engine.measure.kernels import decode, dsa, kvcat, mla, moe, paged, prefix
from engine.measure.kernels.common import CheckResult, Ctx, resolve_device
from engine.measure.kernels.dims import EngineKv, KernelDims, LayerGroup, Sizes
from engine.measure.kernels.from_model import preset_dims

Progress = Callable[[int, int, str], None]

CHECKS: tuple[tuple[str, Callable[[Ctx], list[CheckResult]]], ...] = (
    (paged.CHECK, paged.run),
    (mla.CHECK, mla.run),
    (decode.CHECK, decode.run),
    (dsa.CHECK, dsa.run),
    (prefix.CHECK, prefix.run),
    (moe.CHECK, moe.run),
    (kvcat.CHECK, kvcat.run),
)
CHECK_NAMES = tuple(name for name, _ in CHECKS)


def make_context(
    device: str,
    dims: KernelDims,
    *,
    catalog_gbps: float | None = None,
    concurrency: int | None = None,
    context: int | None = None,
    seed: int = 0,
    layer_groups: Sequence[LayerGroup] | None = None,
    hybrid_block: int | None = None,
) -> Ctx:
    dev = resolve_device(device)
    if concurrency is not None and concurrency < 1:
        raise InputError("concurrency", E.POSITIVE(got=E.got(concurrency)))
    if context is not None and context < 1:
        raise InputError("context", E.POSITIVE(got=E.got(context)))
    if catalog_gbps is not None and not catalog_gbps > 0:
        raise InputError("catalog_gbps", E.POSITIVE_NUMBER(got=E.got(catalog_gbps)))
    base = Sizes.for_device(dev.type)
    sizes = replace(
        base, concurrency=concurrency or base.concurrency, context=context or base.context
    )
    work = dims if dev.type == "cuda" else dims.scaled_for_cpu()
    kv = dims.kv
    if layer_groups is not None:  # the caller's engine groups (the app passes them)
        kv = replace(
            kv or EngineKv("layer_groups", ()),
            groups=tuple(layer_groups),
            hybrid_block=hybrid_block,
        )
    return Ctx(dev, dims, work, sizes, catalog_gbps, seed, kv)


def run_all(
    device: str = "cpu",
    dims: KernelDims | None = None,
    progress: Progress | None = None,
    *,
    catalog_gbps: float | None = None,
    concurrency: int | None = None,
    context: int | None = None,
    only: Sequence[str] | None = None,
    seed: int = 0,
    layer_groups: Sequence[LayerGroup] | None = None,
    hybrid_block: int | None = None,
) -> list[CheckResult]:
    """Run the checks and return every result row.

    ``progress(i, total, name)`` is called before check ``i`` (0-based) starts, and once more
    as ``progress(total, total, "done")``. A check that raises (e.g. out of GPU memory) yields
    one failed ``<check>_error`` row instead of stopping the others.
    """
    ctx = make_context(
        device,
        dims or preset_dims("default"),
        catalog_gbps=catalog_gbps,
        concurrency=concurrency,
        context=context,
        seed=seed,
        layer_groups=layer_groups,
        hybrid_block=hybrid_block,
    )
    selected = [(n, f) for n, f in CHECKS if only is None or n in only]
    if only is not None:
        unknown = sorted(set(only) - set(CHECK_NAMES))
        if unknown:
            raise InputError(
                "only",
                E.ONE_OF_GOT(
                    choices=tuple(Name(n) for n in CHECK_NAMES),
                    got=tuple(Name(n) for n in unknown),
                ),
            )
    results: list[CheckResult] = []
    total = len(selected)
    # The CPU checks are loops of small ops: one thread avoids OpenMP wake-up stalls that make
    # them 10x slower on a busy machine, and the numbers asserted do not depend on it.
    threads = torch.get_num_threads()
    if not ctx.on_gpu:
        torch.set_num_threads(1)
    try:
        _run(selected, ctx, progress, results)
    finally:
        torch.set_num_threads(threads)
    if progress is not None:
        progress(total, total, "done")
    return results


# the folders of an absolute path in an error's message ("/srv/app/engine/x.py" -> "x.py")
_FOLDERS = re.compile(r"(?:/[^/\s:'\"]+)+/")


def _run(
    selected: list[tuple[str, Callable[[Ctx], list[CheckResult]]]],
    ctx: Ctx,
    progress: Progress | None,
    results: list[CheckResult],
) -> None:
    total = len(selected)
    for i, (name, fn) in enumerate(selected):
        if progress is not None:
            progress(i, total, name)
        try:
            with torch.no_grad():
                results.extend(fn(ctx))
        except Exception as err:  # one broken check must not hide the other six
            last = traceback.extract_tb(err.__traceback__)[-1]
            note = N.ERROR(  # file names only: the server's folders are nobody's business
                error=Name(type(err).__name__),
                message=Name(_FOLDERS.sub("", str(err))),
                at=Name(f"{PurePath(last.filename).name}:{last.lineno}"),
            )
            results.append(CheckResult(name, f"{name}_error", False, 0.0, None, "", note))
        if ctx.on_gpu:
            torch.cuda.empty_cache()
