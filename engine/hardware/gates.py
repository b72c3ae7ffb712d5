"""Step 3: can this hardware run this model? Each gate is pass / warn / fail with the
reason and the fix; facts about kernels per generation live in data/kernel_gates.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict

from engine.diagnose import GB, Diagnosis, Options, diagnose
from engine.errors import InputError
from engine.hardware.gpus import Gpu
from engine.model.config import ModelConfig
from engine.rules import DATA_DIR

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
    raw = yaml.safe_load((DATA_DIR / "kernel_gates.yaml").read_text(encoding="utf-8"))
    return _KernelGates.model_validate(raw)


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


def _family_gate(d: Diagnosis, gpu: Gpu) -> Gate:
    fam = d.family.attention_family
    kg = kernel_gates()
    if fam == "DSA":
        r = _arch_rule(kg.dsa, gpu.arch)
        return Gate(
            "DSA sparse-attention kernels", r.status, f"{gpu.key} ({gpu.arch}): {r.reason}", r.fix
        )
    if fam == "MLA":
        r = _arch_rule(kg.mla, gpu.arch)
        return Gate("MLA attention backend", r.status, f"{gpu.key} ({gpu.arch}): {r.reason}", r.fix)
    if fam == "HYBRID":
        return Gate(
            "linear-attention kernels",
            "pass",
            f"{d.family.linear_kind} state kernels (Triton / FLA) run on {gpu.arch}",
        )
    return Gate(
        "attention backend",
        "pass",
        f"{fam} attention runs on every supported generation ({gpu.arch})",
    )


def _weight_gates(fmt: str, dtype: str, gpu: Gpu) -> list[Gate]:
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
    if gpu.fp4 and gpu.vendor == "nvidia" and dtype != "nvfp4":
        gates.append(
            Gate(
                "Blackwell at Hopper speed",
                "warn",
                f"{gpu.key} has FP4 tensor cores but this checkpoint is {fmt}: without an NVFP4 "
                "checkpoint the model falls back to FP8/BF16 kernels, i.e. sm_90-class throughput",
                "look for an NVFP4 checkpoint of this model (often named *-NVFP4)",
            )
        )
    return gates


def _kv_gate(d: Diagnosis, gpu: Gpu) -> Gate | None:
    stored = d.kv.kv_dtype.stored
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


def _tp_gate(cfg: ModelConfig, tp: int) -> Gate:
    heads = cfg.num_attention_heads
    if heads % tp:
        return Gate(
            "tensor-parallel split",
            "fail",
            f"TP {tp} does not divide the {heads} attention heads",
            f"use a TP size that divides {heads}",
        )
    return Gate("tensor-parallel split", "pass", f"{heads} heads / TP {tp} = {heads // tp} per GPU")


def _fit(
    cfg: ModelConfig, gpu: Gpu, gpus: int, kv_dtype: str, context: int, tp: int | None = None
) -> Diagnosis:
    opts = Options.on_gpu(gpu, kv_dtype=kv_dtype, tp=tp or gpus, context=context, gpus=gpus)
    return diagnose(cfg, opts)


def gate_context(cfg: ModelConfig, context: int | None) -> int:
    """The context the gates size one request at: the workload's, else the model's maximum
    capped at 128K tokens."""
    return context or min(cfg.max_position_embeddings or 32_768, 131_072)


def min_gpus_for(cfg: ModelConfig, gpu: Gpu, kv_dtype: str, context: int) -> int | None:
    """Smallest TP size (1, 2, 4, 8, 16, 32, 64) whose per-GPU weights plus one request at
    ``context`` fit in the default memory fraction (Options)."""
    for n in (1, 2, 4, 8, 16, 32, 64):
        try:
            d = _fit(cfg, gpu, n, kv_dtype, context)
        except InputError:
            continue
        if d.fit is not None and d.fit.users_per_instance >= 1:
            return n
    return None


def evaluate_gates(
    cfg: ModelConfig,
    gpu: Gpu,
    gpus: int = 1,
    kv_dtype: str = "auto",
    context: int | None = None,
    tp: int | None = None,
    min_gpus: int | None = None,
) -> GateReport:
    """Gates for ``gpus`` × ``gpu`` at tensor-parallel size ``tp`` (default: all GPUs).
    ``min_gpus`` may be passed when the caller already computed it."""
    if gpus < 1:
        raise InputError("gpus", f"a positive integer, got {gpus}")
    tp = tp or gpus
    if tp > gpus:
        raise InputError("tp", f"at most the GPU count ({gpus}), got {tp}")
    if not cfg.architectures:
        raise InputError(
            "architectures", 'a non-empty list of model class names, e.g. ["LlamaForCausalLM"]'
        )
    ctx = gate_context(cfg, context)
    try:
        d = _fit(cfg, gpu, gpus, kv_dtype, ctx, tp)
    except InputError:
        d = diagnose(cfg, Options(kv_dtype=kv_dtype, context=ctx, gpu_arch=gpu.arch))
    gates = [_family_gate(d, gpu)]
    gates += _weight_gates(d.weights.format, d.weights.weight_dtype, gpu)
    kv_gate = _kv_gate(d, gpu)
    if kv_gate is not None:
        gates.append(kv_gate)
    gates.append(_tp_gate(cfg, tp))
    fit = d.fit
    fits = fit is not None and fit.users_per_instance >= 1
    w = fit.weights_per_gpu if fit else d.weights.weight_bytes
    req = fit.bytes_per_request_per_gpu if fit else d.kv.bytes_per_request(ctx, padded=True)
    fraction = d.options.memory_fraction
    usable = fit.usable_per_gpu if fit else int(gpu.memory_bytes * fraction)
    gates.append(
        Gate(
            "fits in memory",
            "pass" if fits else "fail",
            f"per GPU: {w / GB:,.1f} GB weights + {req / GB:,.2f} GB for one {ctx:,}-token "
            f"request vs {usable / GB:,.1f} GB usable ({fraction:.0%} of {gpu.memory_label})",
            ""
            if fits
            else "add GPUs (raise TP), use a smaller checkpoint format, or shorten the context",
        )
    )
    return GateReport(
        gpu,
        gpus,
        tuple(gates),
        fits,
        min_gpus if min_gpus is not None else min_gpus_for(cfg, gpu, kv_dtype, ctx),
        w,
        req,
    )
