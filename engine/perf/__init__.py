"""The speed model: TTFT, TPOT and tokens/s of one layout as a sum of operations per layer
group (bytes against HBM bandwidth, FLOPs against tensor throughput, collectives against the
link), with a few fitted factors in ``data/perf.yaml``. Entry points: ``estimate`` (every copy
at one load) and ``spread`` (a load spread over the copies, some busier than others or idle)."""

from engine.perf.calibration import Calibration, load_calibration
from engine.perf.estimate import Speculative, estimate, spread
from engine.perf.inputs import ModelInputs, model_inputs
from engine.perf.shape import PerfInputs
from engine.perf.speed import Formula, Phase, Speed, speeds_overlap
from engine.perf.terms import Term

__all__ = [
    "Calibration",
    "Formula",
    "ModelInputs",
    "PerfInputs",
    "Phase",
    "Speculative",
    "Speed",
    "Term",
    "estimate",
    "load_calibration",
    "model_inputs",
    "speeds_overlap",
    "spread",
]
