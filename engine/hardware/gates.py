"""Step 3: can this hardware run this model? Each gate is pass / warn / fail with the
reason and the fix; facts about kernels per generation live in data/kernel_gates.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from engine.hardware.gpus import Gpu
from engine.kv.dtype import KvDtype
from engine.model.config import ModelConfig
from engine.model.family import AttentionFamily, FamilyVerdict
from engine.model.weights import WeightReport
from engine.rules import load_data

if TYPE_CHECKING:
    from engine.launch.layout import Candidate

GIB = 1 << 30

Status = Literal["pass", "warn", "fail"]


class _ArchRule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    status: Status
    reason: str
    fix: str = ""


class _FamilyRules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    archs: dict[str, _ArchRule]


class _KernelGates(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    dsa: _FamilyRules
    mla: _FamilyRules
    weights: dict[str, str]


@cache
def kernel_gates() -> _KernelGates:
    return load_data(_KernelGates, "kernel_gates.yaml")


@dataclass(frozen=True)
class Gate:
    name: str
    status: Status
    reason: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True)
class GateReport:
    gpu: Gpu
    gpus: int
    gates: tuple[Gate, ...]
    fits: bool
    min_gpus: int | None
    weights_per_gpu: int
    request_bytes_per_gpu: int

    @property
    def runs(self) -> bool:
        return all(g.status != "fail" for g in self.gates)

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu.key,
            "gpus": self.gpus,
            "gates": [g.to_json() for g in self.gates],
            "fits": self.fits,
            "min_gpus": self.min_gpus,
            "weights_per_gpu": self.weights_per_gpu,
            "request_bytes_per_gpu": self.request_bytes_per_gpu,
        }


def _arch_rule(rules: _FamilyRules, arch: str) -> _ArchRule:
    if arch in rules.archs:
        return rules.archs[arch]
    return _ArchRule(status="warn", reason=f"no kernel facts recorded for {arch}", fix="")


def family_gate(fam: FamilyVerdict, gpu: Gpu) -> Gate:
    """Do the attention kernels of this family exist on ``gpu``'s generation."""
    family = fam.attention_family
    kg = kernel_gates()
    if family == AttentionFamily.DSA:
        r = _arch_rule(kg.dsa, gpu.arch)
        return Gate(
            "DSA sparse-attention kernels", r.status, f"{gpu.key} ({gpu.arch}): {r.reason}", r.fix
        )
    if family == AttentionFamily.MLA:
        r = _arch_rule(kg.mla, gpu.arch)
        return Gate("MLA attention backend", r.status, f"{gpu.key} ({gpu.arch}): {r.reason}", r.fix)
    if family == AttentionFamily.HYBRID:
        return Gate(
            "linear-attention kernels",
            "pass",
            f"{fam.linear_kind} state kernels (Triton / FLA) run on {gpu.arch}",
        )
    return Gate(
        "attention backend",
        "pass",
        f"{family} attention runs on every supported generation ({gpu.arch})",
    )


def weight_gates(fmt: str, dtype: str, gpu: Gpu) -> list[Gate]:
    """Gates on the checkpoint's weight dtype (``fmt`` is the format name shown)."""
    gates: list[Gate] = []
    if dtype == "fp8":
        if gpu.fp8:
            gates.append(
                Gate("FP8 weights", "pass", f"{gpu.key} has FP8 tensor cores ({gpu.arch})")
            )
        else:
            gates.append(
                Gate(
                    "FP8 weights",
                    "warn",
                    f"{gpu.key} ({gpu.arch}) has no FP8 tensor cores: vLLM runs the FP8 checkpoint "
                    "weight-only through Marlin (dequantised to bf16 for compute)",
                    "expect bf16-class compute speed; FP8 KV is storage-only here",
                )
            )
    if dtype == "nvfp4":
        if gpu.fp4 and gpu.vendor == "nvidia":
            gates.append(Gate("NVFP4 weights", "pass", f"{gpu.key} has FP4 tensor cores"))
        else:
            gates.append(
                Gate(
                    "NVFP4 weights",
                    "fail",
                    f"NVFP4 needs Blackwell FP4 tensor cores; {gpu.key} ({gpu.arch}) has none",
                    "use the FP8 or BF16 checkpoint of this model",
                )
            )
    if dtype == "mxfp4":
        native = "native FP4 tensor cores" if gpu.fp4 else "dequantising kernels (no FP4 hardware)"
        gates.append(Gate("MXFP4 weights", "pass", f"MXFP4 experts run on {gpu.key} with {native}"))
    return gates


def kv_gate(kv: KvDtype, gpu: Gpu) -> Gate | None:
    stored = kv.stored
    if not stored.startswith("fp8"):
        return None
    if not gpu.fp8:
        return Gate(
            "FP8 KV cache",
            "warn",
            f"{gpu.key} has no FP8 tensor cores: an FP8 KV cache saves memory but is dequantised "
            "for compute (storage only, no speed-up)",
            "keep FP8 KV for capacity only",
        )
    return Gate("FP8 KV cache", "pass", f"FP8 KV ({stored}) is supported on {gpu.arch}")


def tp_gate(cfg: ModelConfig, tp: int) -> Gate:
    heads = cfg.num_attention_heads
    if heads % tp:
        return Gate(
            "tensor-parallel split",
            "fail",
            f"TP {tp} does not divide the {heads} attention heads",
            f"use a TP size that divides {heads}",
        )
    return Gate("tensor-parallel split", "pass", f"{heads} heads / TP {tp} = {heads // tp} per GPU")


def fit_gate(fit: Candidate, gpu: Gpu) -> Gate:
    """Weights plus one request at the workload's context against usable memory, per GPU."""
    ok = fit.weights_fit and fit.context > 0
    reason = (
        f"per GPU at {fit.layout.describe()}: {fit.weights_per_gpu / GIB:,.1f} GiB weights + "
        f"{fit.bytes_per_request_per_gpu / GIB:,.2f} GiB for one {fit.context:,}-token request "
        f"vs {fit.usable_per_gpu / GIB:,.1f} GiB usable ({fit.fraction:g} of "
        f"{fit.memory_per_gpu / GIB:,.1f} GiB)"
    )
    if ok and not fit.context_fits:
        return Gate(
            "fits in memory",
            "warn",
            reason + "; the context is shortened to fit",
            "add GPUs, use a smaller checkpoint format, or accept the shorter context",
        )
    return Gate(
        "fits in memory",
        "pass" if ok else "fail",
        reason,
        "" if ok else "add GPUs, use a smaller checkpoint format, or shorten the context",
    )


def gate_report(
    fam: FamilyVerdict,
    weights: WeightReport,
    kv: KvDtype,
    gpu: Gpu,
    fit: Candidate,
    cfg: ModelConfig,
    min_gpus: int | None = None,
) -> GateReport:
    """The gates for the chosen layout ``fit`` on ``gpu`` (computed once, in the Study)."""
    gates = [family_gate(fam, gpu)]
    gates += weight_gates(weights.format, weights.weight_dtype, gpu)
    g = kv_gate(kv, gpu)
    if g is not None:
        gates.append(g)
    gates.append(tp_gate(cfg, fit.layout.tp))
    gates.append(fit_gate(fit, gpu))
    return GateReport(
        gpu,
        fit.layout.gpus,
        tuple(gates),
        fit.weights_fit and fit.context > 0,
        min_gpus,
        fit.weights_per_gpu,
        fit.bytes_per_request_per_gpu,
    )
