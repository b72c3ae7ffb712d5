"""``python -m engine.measure.kernels ...`` is ``python -m engine kernels ...``."""

from __future__ import annotations

import sys

from engine.cli import main as cli_main
from engine.measure.kernels.run import dims_for_args, run_kernels

__all__ = ["dims_for_args", "main", "run_kernels"]


def main(argv: list[str] | None = None) -> int:
    """``python -m engine.measure.kernels ...`` is ``python -m engine kernels ...``."""
    return cli_main(["kernels", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
