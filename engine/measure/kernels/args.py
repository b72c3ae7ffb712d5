"""The ``kernels`` subcommand's arguments, kept free of torch so the one ``python -m engine``
tree can build its parser without importing it (the checks validate ``--only`` themselves)."""

from __future__ import annotations

import argparse

from engine.measure.kernels.from_model import PRESETS


def add_kernel_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--json", action="store_true", help="print a JSON list of result rows")
    parser.add_argument(
        "--model-dims", help="JSON object (or file) of KernelDims fields, optionally a preset"
    )
    parser.add_argument("--model", help="a model SOURCE (catalog name, config.json, hub id)")
    parser.add_argument(
        "--preset", help=f"a bundled catalog model, or one of: {', '.join(PRESETS)}"
    )
    parser.add_argument("--catalog-gbps", type=float, help="the GPU's catalog bandwidth, GB/s")
    parser.add_argument("--concurrency", type=int, help="requests decoded together")
    parser.add_argument("--context", type=int, help="cached tokens per request for decode")
    parser.add_argument(
        "--only",
        action="append",
        help="run only this check (repeatable; an unknown name lists them)",
    )
