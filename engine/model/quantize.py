"""Online weight quantization: a 16-bit checkpoint served with ``--quantization fp8`` is sized
as its FP8 form (the engines quantize each linear layer's weights to FP8 with a per-tensor scale
as they load it: vLLM ``Fp8LinearMethod`` for a checkpoint that is not FP8-serialized, SGLang's
``fp8`` method alike), so its weights take one byte per parameter and its GEMMs run in FP8.

The engines do this where the GPU computes in FP8 (vLLM's quantization table: FP8 W8A8 on Ada,
Hopper, Blackwell and AMD MI300+; Ampere only as a weight-only Marlin fallback, which the plan
does not choose); a checkpoint that is already quantized is not quantized again.
"""

from __future__ import annotations

from dataclasses import replace

from engine import errors as E
from engine.decision import Name
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.model.config import normalize
from engine.model.formats import UNQUANTIZED, raw_in_format
from engine.model.loader import LoadedModel


def online_fp8(model: LoadedModel, gpu: Gpu, stored: str) -> LoadedModel:
    """``model`` as the engine holds it after ``--quantization fp8``: its config re-described
    as FP8 (``stored``: the checkpoint's weight dtype). Refuses a checkpoint that is not 16-bit
    and a GPU without FP8 compute, naming the field."""
    if stored not in UNQUANTIZED:
        raise InputError(
            "quantization",
            f"a 16-bit checkpoint to quantize (this one stores {stored} weights)",
            expects=E.ONE_OF(choices=tuple(Name(d) for d in UNQUANTIZED)),
        )
    if not gpu.fp8:
        raise InputError(
            "quantization",
            f"a GPU that computes in FP8 ({gpu.key} does not)",
            expects=E.ONE_OF(choices=(Name("none"),)),
        )
    raw = raw_in_format(model.config.raw, "fp8")
    assert raw is not None  # fp8 is one of the formats data/lint.yaml describes
    return replace(model, config=normalize(raw), checkpoint=None)
