"""Step 3: can this hardware run this model? Each gate is pass / warn / fail with the
reason and the fix; facts about kernels per generation live in data/kernel_gates.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict

from engine.decision import Bytes, Code, Decimal, Decision, Name, Tokens
from engine.hardware.gpus import Gpu
from engine.kv.dtype import KvDtype
from engine.model.config import ModelConfig
from engine.model.family import AttentionFamily, FamilyVerdict
from engine.model.weights import WeightReport
from engine.rules import load_data

Status = Literal["pass", "warn", "fail"]


class _Layout(Protocol):
    @property
    def tp(self) -> int: ...
    @property
    def gpus(self) -> int: ...
    def name(self) -> Decision: ...


class FitFigures(Protocol):
    """What the gates read of a layout candidate (engine.launch.layout.Candidate)."""

    @property
    def layout(self) -> _Layout: ...
    @property
    def weights_fit(self) -> bool: ...
    @property
    def context_fits(self) -> bool: ...
    @property
    def context(self) -> int: ...
    @property
    def weights_per_gpu(self) -> int: ...
    @property
    def bytes_per_request_per_gpu(self) -> int: ...
    @property
    def usable_per_gpu(self) -> int: ...
    @property
    def fraction(self) -> float: ...
    @property
    def memory_per_gpu(self) -> int: ...


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


GateKind = Literal[
    "dsa",
    "mla",
    "linear",
    "attention",
    "fp8_weights",
    "nvfp4_weights",
    "mxfp4_weights",
    "fp8_kv",
    "tp",
    "fit",
]
GATE_KINDS: tuple[GateKind, ...] = get_args(GateKind)
# what each gate checks, and what it means when it fails ("does not fit in memory")
GATE_NAME = {k: Code(f"gate.name.{k}") for k in GATE_KINDS}
GATE_FAILED = {k: Code(f"gate.failed.{k}") for k in GATE_KINDS}

KERNELS = Code("gate.kernels", "gpu", "arch", "rule")
KERNELS_UNKNOWN = Code("gate.kernels.unknown", "arch")
LINEAR = Code("gate.linear", "kind", "arch")
ATTENTION = Code("gate.attention", "family", "arch")
FP8_WEIGHTS = Code("gate.fp8_weights.pass", "gpu", "arch")
FP8_WEIGHTS_MARLIN = Code("gate.fp8_weights.warn", "gpu", "arch")
FP8_WEIGHTS_FIX = Code("gate.fp8_weights.fix")
NVFP4_WEIGHTS = Code("gate.nvfp4_weights.pass", "gpu")
NVFP4_NO_FP4 = Code("gate.nvfp4_weights.fail", "gpu", "arch")
NVFP4_FIX = Code("gate.nvfp4_weights.fix")
MXFP4_NATIVE = Code("gate.mxfp4_weights.native", "gpu")
MXFP4_EMULATED = Code("gate.mxfp4_weights.emulated", "gpu")
FP8_KV = Code("gate.fp8_kv.pass", "stored", "arch")
FP8_KV_STORAGE = Code("gate.fp8_kv.warn", "gpu")
FP8_KV_FIX = Code("gate.fp8_kv.fix")
TP_SPLIT = Code("gate.tp.pass", "heads", "tp", "per")
TP_NO_SPLIT = Code("gate.tp.fail", "heads", "tp")
TP_FIX = Code("gate.tp.fix", "heads")
FIT = Code(
    "gate.fit.reason", "layout", "weights", "request", "context", "usable", "fraction", "memory"
)
FIT_SHORTENED = Code("gate.fit.shortened", "reason")
FIT_FIX_SHORTER = Code("gate.fit.fix_warn")
FIT_FIX_NONE = Code("gate.fit.fix_fail")
# the fix the layout search found: the fewest GPUs of this kind that hold the weights and one
# request at the full context (and, where the weights alone overflow, by how much)
MAX_TRIED_GPUS = 1024  # the most GPUs the search for the fewest tries
FIT_FIX_GPUS = Code("gate.fit.fix_gpus", "n", "gpu")
FIT_FIX_WEIGHTS = Code("gate.fit.fix_weights", "times", "n", "gpu")
FIT_FIX_WEIGHTS_NONE = Code("gate.fit.fix_weights_none", "times", "gpu", "most")
# the kernel facts per generation (data/kernel_gates.yaml): one code per family and arch, worded
# in the catalogs as the data states them (a test keeps the English equal to the data)
KERNEL_RULE = {
    (kind, arch): Code(f"gate.kernels.{kind}.{arch}.reason")
    for kind in ("dsa", "mla")
    for arch in getattr(kernel_gates(), kind).archs
}
KERNEL_FIX = {
    (kind, arch): Code(f"gate.kernels.{kind}.{arch}.fix")
    for kind in ("dsa", "mla")
    for arch, rule in getattr(kernel_gates(), kind).archs.items()
    if rule.fix
}


@dataclass(frozen=True)
class Gate:
    """One check: what it checks (``kind``), its status, why (a decision) and what to do."""

    kind: GateKind
    status: Status
    reason: Decision
    fix: Decision | None = None

    @property
    def name(self) -> Decision:
        return GATE_NAME[self.kind]()

    @property
    def failure(self) -> Decision:
        """The gate named by what failed (``does not fit in memory``)."""
        return GATE_FAILED[self.kind]()


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

    def failed(self, *, memory: bool = True) -> list[Gate]:
        """The gates that fail (without the memory gate when ``memory`` is False)."""
        return [g for g in self.gates if g.status == "fail" and (memory or g.kind != "fit")]


def _kernels(kind: Literal["dsa", "mla"], gpu: Gpu) -> Gate:
    rules: _FamilyRules = getattr(kernel_gates(), kind)
    g, a = Name(gpu.key), Name(gpu.arch)
    if gpu.arch not in rules.archs:
        return Gate(kind, "warn", KERNELS(gpu=g, arch=a, rule=KERNELS_UNKNOWN(arch=a)))
    rule = rules.archs[gpu.arch]
    fix = KERNEL_FIX.get((kind, gpu.arch))
    return Gate(
        kind,
        rule.status,
        KERNELS(gpu=g, arch=a, rule=KERNEL_RULE[(kind, gpu.arch)]()),
        fix() if fix else None,
    )


def family_gate(fam: FamilyVerdict, gpu: Gpu) -> Gate:
    """Do the attention kernels of this family exist on ``gpu``'s generation."""
    family = fam.attention_family
    if family == AttentionFamily.DSA:
        return _kernels("dsa", gpu)
    if family == AttentionFamily.MLA:
        return _kernels("mla", gpu)
    if family == AttentionFamily.HYBRID:
        return Gate("linear", "pass", LINEAR(kind=Name(fam.linear_kind or ""), arch=Name(gpu.arch)))
    return Gate("attention", "pass", ATTENTION(family=Name(str(family)), arch=Name(gpu.arch)))


def weight_gates(dtype: str, gpu: Gpu) -> list[Gate]:
    """Gates on the checkpoint's weight dtype."""
    g, a = Name(gpu.key), Name(gpu.arch)
    gates: list[Gate] = []
    if dtype == "fp8":
        if gpu.fp8:
            gates.append(Gate("fp8_weights", "pass", FP8_WEIGHTS(gpu=g, arch=a)))
        else:
            gates.append(
                Gate("fp8_weights", "warn", FP8_WEIGHTS_MARLIN(gpu=g, arch=a), FP8_WEIGHTS_FIX())
            )
    if dtype == "nvfp4":
        if gpu.fp4 and gpu.vendor == "nvidia":
            gates.append(Gate("nvfp4_weights", "pass", NVFP4_WEIGHTS(gpu=g)))
        else:
            gates.append(Gate("nvfp4_weights", "fail", NVFP4_NO_FP4(gpu=g, arch=a), NVFP4_FIX()))
    if dtype == "mxfp4":
        reason = MXFP4_NATIVE(gpu=g) if gpu.fp4 else MXFP4_EMULATED(gpu=g)
        gates.append(Gate("mxfp4_weights", "pass", reason))
    return gates


def kv_gate(kv: KvDtype, gpu: Gpu) -> Gate | None:
    stored = kv.stored
    if not stored.startswith("fp8"):
        return None
    if not gpu.fp8:
        return Gate("fp8_kv", "warn", FP8_KV_STORAGE(gpu=Name(gpu.key)), FP8_KV_FIX())
    return Gate("fp8_kv", "pass", FP8_KV(stored=Name(stored), arch=Name(gpu.arch)))


def tp_gate(cfg: ModelConfig, tp: int) -> Gate:
    heads = cfg.num_attention_heads
    if heads % tp:
        return Gate("tp", "fail", TP_NO_SPLIT(heads=heads, tp=tp), TP_FIX(heads=heads))
    return Gate("tp", "pass", TP_SPLIT(heads=heads, tp=tp, per=heads // tp))


def _fit_fix(fit: FitFigures, gpu: Gpu, min_gpus: int | None) -> Decision:
    """What fixes a fit that falls short, from the case: the fewest GPUs of this kind the
    layout search found, the weights' overflow where they alone do not fit; the generic levers
    only where the search found no GPU count."""
    name = Name(gpu.key)
    if not fit.weights_fit:
        times = Decimal(fit.weights_per_gpu / max(fit.usable_per_gpu, 1), 1, "×")
        if min_gpus is not None:
            return FIT_FIX_WEIGHTS(times=times, n=min_gpus, gpu=name)
        return FIT_FIX_WEIGHTS_NONE(times=times, gpu=name, most=MAX_TRIED_GPUS)
    if min_gpus is not None:
        return FIT_FIX_GPUS(n=min_gpus, gpu=name)
    return FIT_FIX_SHORTER() if fit.context > 0 else FIT_FIX_NONE()


def fit_gate(fit: FitFigures, gpu: Gpu, min_gpus: int | None = None) -> Gate:
    """Weights plus one request at the workload's context against usable memory, per GPU."""
    ok = fit.weights_fit and fit.context > 0
    reason = FIT(
        layout=fit.layout.name(),
        weights=Bytes(fit.weights_per_gpu),
        request=Bytes(fit.bytes_per_request_per_gpu),
        context=Tokens(fit.context),
        usable=Bytes(fit.usable_per_gpu),
        fraction=fit.fraction,
        memory=Bytes(fit.memory_per_gpu),
    )
    if ok and not fit.context_fits:
        return Gate("fit", "warn", FIT_SHORTENED(reason=reason), _fit_fix(fit, gpu, min_gpus))
    return Gate(
        "fit", "pass" if ok else "fail", reason, None if ok else _fit_fix(fit, gpu, min_gpus)
    )


def gate_report(
    fam: FamilyVerdict,
    weights: WeightReport,
    kv: KvDtype,
    gpu: Gpu,
    fit: FitFigures,
    cfg: ModelConfig,
    min_gpus: int | None = None,
) -> GateReport:
    """The gates for the chosen layout ``fit`` on ``gpu`` (computed once, in the Study)."""
    gates = [family_gate(fam, gpu)]
    gates += weight_gates(weights.weight_dtype, gpu)
    g = kv_gate(kv, gpu)
    if g is not None:
        gates.append(g)
    gates.append(tp_gate(cfg, fit.layout.tp))
    gates.append(fit_gate(fit, gpu, min_gpus))
    return GateReport(
        gpu,
        fit.layout.gpus,
        tuple(gates),
        fit.weights_fit and fit.context > 0,
        min_gpus,
        fit.weights_per_gpu,
        fit.bytes_per_request_per_gpu,
    )
