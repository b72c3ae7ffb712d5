"""What a launch plan reads of the model and the hardware, as one public object."""

from __future__ import annotations

from dataclasses import dataclass

from engine.gates import GateReport
from engine.hardware.gpus import Gpu
from engine.model.architecture import Architecture
from engine.model.config import ModelConfig
from engine.model.context_limit import ContextLimit
from engine.model.family import FamilyVerdict
from engine.model.loader import LoadedModel
from engine.model.weights import WeightReport
from engine.perf import Speed


@dataclass(frozen=True)
class PlanInputs:
    """The model-side facts a launch plan reads: the slice of the Study that exists before the
    plans do (the Study builds it; the planner never reaches back into the Study)."""

    model: LoadedModel
    cfg: ModelConfig
    gpu: Gpu
    arch: Architecture
    family: FamilyVerdict
    weights: WeightReport
    limit: ContextLimit
    context_asked: int
    mtp: bool
    text_only: bool
    gates: GateReport
    # the speed of the search's pick with and without speculative decoding, when the speed
    # model chose between them (None: the scenario pinned it, or there are no draft layers)
    draft_speeds: tuple[Speed | None, Speed | None] | None = None
