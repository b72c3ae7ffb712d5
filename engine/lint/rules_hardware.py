"""Rules on kernels per GPU: the Study's hardware gates at the command's layout (DSA sparse
kernels, NVFP4 and FP8 weights, MLA backends, from ``data/kernel_gates.yaml`` through
``engine.hardware.gates``), and the KV-cache dtype and attention backend the command pins."""

from __future__ import annotations

from typing import Literal

from engine.hardware.gates import kernel_gates
from engine.hardware.gpus import Gpu
from engine.lint.context import Ctx
from engine.lint.data import lint_rules
from engine.lint.model import tokens
from engine.lint.report import Edit
from engine.present.words import say

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
        said = say(g.fix) if g.fix is not None else ""
        fix = said[:1].upper() + said[1:] + "." if said else ""
        name, reason = say(g.name), say(g.reason)
        if g.kind == "dsa":
            if g.status == "fail":
                ctx.add(
                    "dsa-kernel-missing",
                    f"DSA sparse attention has no kernels on {reason}; the engine stops with "
                    "'No valid attention backend'.",
                    fix or "Serve it on Hopper or datacenter Blackwell.",
                )
            elif dsa_kernel_path(gpu) == "sm120":
                ctx.add("dsa-kernel-sm120", f"DSA on {reason}.", fix or "Load-test it.")
            else:
                ctx.add("kernel-fallback", f"DSA on {reason}.", fix or "Follow the vendor recipe.")
        elif g.kind == "nvfp4_weights":
            quant = ctx.arg("--quantization")
            ctx.add(
                "nvfp4-without-fp4",
                f"NVFP4 weights: {reason}; the 4-bit kernels are missing (at best a slow "
                "fallback), so the point of the checkpoint is lost.",
                fix or "Use the FP8 or BF16 checkpoint.",
                quant.written if quant is not None else None,
            )
        elif g.kind == "fp8_kv":
            if kv_flag is not None:
                ctx.add(
                    "fp8-kv-storage-only",
                    f"{reason}.",
                    "Keep it for the capacity; compare with `--kv-cache-dtype auto` for speed.",
                    kv_flag.written,
                )
        elif g.status == "fail":
            ctx.add("kernel-fallback", f"{name}: {reason}.", fix or "See the Hardware page.")
        else:
            ctx.add("kernel-fallback", f"{name}: {reason}.", fix or "Expect slower kernels.")


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
            f"`{kv.written} {kv_value}` needs FP4 hardware (Blackwell); {gpu.key} ({gpu.arch}) "
            "has none.",
            "Use `--kv-cache-dtype fp8` (Hopper, Ada) or leave it on auto.",
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
            f"`{kv.written} {kv_value}` is a datacenter-Blackwell FlashMLA-sparse layout; "
            f"{gpu.key} ({gpu.generation}) cannot use it.",
            "Leave the KV dtype on auto.",
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
            f"NVFP4 weights on {gpu.key} ({gpu.arch}), which has no FP4 tensor cores: NVFP4 "
            "needs Blackwell; the 4-bit kernels are missing (at best a slow fallback).",
            "Use the FP8 checkpoint (Hopper, Ada) or BF16, with the matching `--quantization`.",
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
        ctx.add(
            "fp8-kv-backend",
            f"`--attention-backend {backend}` with an FP8 KV cache on {gpu.key} "
            f"({gpu.generation}): {row.message}",
            row.fix,
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
            f"MLA with an FP8 KV cache on {gpu.key} ({gpu.arch}): {mla.reason}.",
            "Use `--kv-cache-dtype auto` on this GPU.",
            kv.written,
            (Edit("drop", kv.written, index=kv.index),),
            severity="warning",  # refused in some releases, not all
        )
