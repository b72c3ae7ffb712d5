"""Rules on kernels per GPU: the Study's hardware gates at the command's layout (DSA sparse
kernels, NVFP4 and FP8 weights, MLA backends, from ``data/kernel_gates.yaml`` through
``engine.gates``), and the KV-cache dtype and attention backend the command pins."""

from __future__ import annotations

from typing import Literal

from engine.decision import Name
from engine.gates import KERNEL_RULE, kernel_gates
from engine.hardware.gpus import Gpu
from engine.lint import codes as C
from engine.lint.command_scenario import shown
from engine.lint.findings import Edit
from engine.lint.lint_context import Ctx
from engine.lint.model import tokens
from engine.lint.rule_data import lint_rules

_DSA_PATH: dict[str, Literal["native", "sm120", "none"]] = {
    "pass": "native",
    "warn": "sm120",
    "fail": "none",
}


def dsa_kernel_path(gpu: Gpu) -> Literal["native", "sm120", "none", "other-vendor"]:
    """Whether the DSA sparse kernels exist for ``gpu``, read from ``data/kernel_gates.yaml``:
    Hopper and datacenter Blackwell have them; consumer/workstation Blackwell (sm_120) only a
    newer, separate path; Ada, Ampere and generations the file does not list none at all."""
    if gpu.vendor.lower() != "nvidia":
        return "other-vendor"
    rule = kernel_gates().dsa.archs.get(gpu.arch)
    return "none" if rule is None else _DSA_PATH[rule.status]


def kv_fallback(ctx: Ctx, written: str, index: int) -> Edit:
    """The KV dtype a GPU without FP4 can use instead: fp8 where it has FP8 (half the bytes,
    as close to the 4-bit ask as it gets), else the engine's default (the flag dropped)."""
    if ctx.gpu is not None and ctx.gpu.fp8 and "fp8" in _kv_choices(ctx):
        return Edit("change", written, "fp8", index)
    return Edit("drop", written, index=index)


def _kv_choices(ctx: Ctx) -> list[str]:
    arg = ctx.arg("--kv-cache-dtype")
    info = arg.info if arg is not None else None
    return [str(c) for c in (info.choices or [])] if info is not None else []


def fp4_kv(ctx: Ctx, value: str) -> bool:
    """A --kv-cache-dtype this GPU cannot store (an FP4 layout without FP4 hardware)."""
    rules = lint_rules().nvfp4
    gpu = ctx.gpu
    if gpu is None:
        return False
    low = value.lower()
    if low in rules.blackwell_only_kv_dtypes:
        return gpu.generation != "blackwell"
    return (low in rules.kv_dtypes or "fp4" in low) and not gpu.fp4


def gates(ctx: Ctx) -> None:
    """The Study's gates at the command's layout, as findings (fit and TP have their own rules)."""
    st, gpu = ctx.study or ctx.base, ctx.gpu
    if st is None or gpu is None:
        return
    kv_flag = ctx.arg("--kv-cache-dtype")
    for g in st.gates.gates:
        if g.status == "pass" or g.kind in ("fit", "tp"):
            continue
        gate_fix = C.GATE_FIX(fix=g.fix) if g.fix is not None else None
        reason = g.reason
        if g.kind == "dsa":
            if g.status == "fail":
                ctx.add(
                    "dsa-kernel-missing",
                    C.DSA_MISSING(reason=reason),
                    gate_fix or C.DSA_MISSING_FIX(),
                )
            elif dsa_kernel_path(gpu) == "sm120":
                ctx.add(
                    "dsa-kernel-sm120", C.DSA_SM120(reason=reason), gate_fix or C.DSA_SM120_FIX()
                )
            else:
                ctx.add(
                    "kernel-fallback",
                    C.FALLBACK_DSA(reason=reason),
                    gate_fix or C.FALLBACK_DSA_FIX(),
                )
        elif g.kind == "nvfp4_weights":
            quant = ctx.arg("--quantization")
            ctx.add(
                "nvfp4-without-fp4",
                C.NVFP4_WEIGHTS(reason=reason),
                gate_fix or C.NVFP4_WEIGHTS_FIX(),
                quant.written if quant is not None else None,
            )
        elif g.kind == "fp8_kv":
            if kv_flag is not None:
                ctx.add(
                    "fp8-kv-storage-only",
                    C.FP8_STORAGE(reason=reason),
                    C.FP8_STORAGE_FIX(),
                    kv_flag.written,
                )
        else:
            ctx.add(
                "kernel-fallback",
                C.FALLBACK(name=g.name, reason=reason),
                gate_fix
                or (C.FALLBACK_FIX_FAIL() if g.status == "fail" else C.FALLBACK_FIX_WARN()),
            )


def nvfp4(ctx: Ctx) -> None:
    """NVFP4 the command asks for: the KV dtype always; the weights when no Study says so."""
    gpu = ctx.gpu
    if gpu is None:
        return
    rules = lint_rules().nvfp4
    kv = ctx.arg("--kv-cache-dtype")
    kv_value = (kv.value or "").lower() if kv is not None else ""
    if kv is not None and kv_value in rules.kv_dtypes and not gpu.fp4:
        ctx.add(
            "nvfp4-without-fp4",
            C.NVFP4_KV(
                flag=Name(kv.written),
                value=Name(kv_value),
                gpu=Name(gpu.key),
                arch=Name(gpu.arch),
            ),
            C.NVFP4_KV_FIX(),
            kv.written,
            (kv_fallback(ctx, kv.written, kv.index),),
        )
    elif (
        kv is not None
        and kv_value in rules.blackwell_only_kv_dtypes
        and (gpu.generation != "blackwell")
    ):
        ctx.add(
            "nvfp4-without-fp4",
            C.NVFP4_KV_BLACKWELL(
                flag=Name(kv.written),
                value=Name(kv_value),
                gpu=Name(gpu.key),
                generation=Name(gpu.generation),
            ),
            C.KV_AUTO(),
            kv.written,
            (Edit("drop", kv.written, index=kv.index),),
        )
    if ctx.facts is not None or gpu.fp4:
        return  # the Study's NVFP4 gate speaks for the weights
    quant = ctx.arg("--quantization")
    named = set(tokens(ctx.settings.model_id or "")) & {"nvfp4", "fp4"}
    if (quant is not None and quant.value in rules.weight_methods[ctx.engine]) or named:
        ctx.add(
            "nvfp4-without-fp4",
            C.NVFP4_NAMED(gpu=Name(gpu.key), arch=Name(gpu.arch)),
            C.NVFP4_NAMED_FIX(),
            quant.written if quant is not None else None,
        )


def kv_backends(ctx: Ctx) -> None:
    """FP8 KV cache with an attention backend (or MLA backend) that cannot read it on this GPU."""
    gpu = ctx.gpu
    kv = ctx.arg("--kv-cache-dtype")
    if gpu is None or kv is None or not (kv.value or "").lower().startswith(("fp8", "mxfp8")):
        return
    backend = ctx.parsed.value("--attention-backend") or ""
    for row in lint_rules().fp8_kv_backends.for_engine(ctx.engine):
        if backend.lower() != row.backend.lower() or gpu.generation in row.works_on:
            continue
        arg = ctx.arg("--attention-backend")
        why, fix = C.FP8_BACKEND_ROW[(ctx.engine, row.backend)]
        ctx.add(
            "fp8-kv-backend",
            C.FP8_BACKEND(
                backend=Name(shown(backend)),
                gpu=Name(gpu.key),
                generation=Name(gpu.generation),
                reason=why(),
            ),
            fix(),
            "--attention-backend",
            (Edit("drop", arg.written, index=arg.index),) if arg is not None else (),
        )
    st = ctx.facts
    mla = kernel_gates().mla.archs.get(gpu.arch)
    if (
        st is not None
        and st.family.attention_family == "MLA"
        and gpu.vendor == "nvidia"
        and mla is not None
        and mla.status == "warn"
    ):
        ctx.add(
            "fp8-kv-backend",
            C.FP8_BACKEND_MLA(
                gpu=Name(gpu.key), arch=Name(gpu.arch), reason=KERNEL_RULE[("mla", gpu.arch)]()
            ),
            C.FP8_BACKEND_MLA_FIX(),
            kv.written,
            (Edit("drop", kv.written, index=kv.index),),
            severity="warning",  # refused in some releases, not all
        )
