"""The speed model: TTFT, TPOT and tokens/s of one layout, in two halves: the op model
(``opmodel``: each step as a sum of operations per layer group — bytes against HBM bandwidth,
FLOPs against tensor throughput, collectives against the link — plus the software stack's fixed
costs) and the scheduler (``scheduler``: waves, queueing, admission, DP ranks, prefix reuse,
prefill / decode pools), with a few fitted factors in ``data/perf.yaml``. Entry points:
``estimate`` (every copy at one load) and ``spread`` (a load spread over the copies, some busier
than others or idle); every figure carries the range of the model's own out-of-sample error."""

from engine.perf.calibration import Calibration, load_calibration
from engine.perf.estimate import Speculative, estimate, spread
from engine.perf.inputs import ModelInputs, model_inputs
from engine.perf.scheduler import PrefixReuse, Scheduler
from engine.perf.shape import PerfInputs
from engine.perf.speed import Formula, Phase, Speed, speeds_overlap
from engine.perf.terms import Term

__all__ = [
    "Calibration",
    "Formula",
    "ModelInputs",
    "PerfInputs",
    "Phase",
    "PrefixReuse",
    "Scheduler",
    "Speculative",
    "Speed",
    "Term",
    "estimate",
    "load_calibration",
    "model_inputs",
    "speeds_overlap",
    "spread",
]
