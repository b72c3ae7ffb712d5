"""What one GPU achieves: HBM bandwidth, tensor throughput per dtype, and its links.

HBM: the catalog's bandwidth (``data/gpus.yaml``) × a fitted fraction (``data/perf.yaml``).
Tensor throughput: the matmul ceiling measured on that GPU model (the catalog's peak × the share
of it a matmul reaches at its best shape, ``Gpu.achievable_tensor_flops``: 80 % of BF16 peak on
an H100 SXM, 51 % on an MI300X) × one fitted fraction for serving's GEMMs and attention. Or the
rates a ``Calibration`` measured on the GPU itself. Collectives pay a latency plus bytes over the
link: NVLink / Infinity Fabric / PCIe inside the GPU's scale-up domain (``node_gpus``), the network
per GPU beyond it. Inside the domain the bandwidth depends on the wiring (``Gpu.
group_bytes_per_s``): through NVSwitch every group gets the GPU's whole link, in an Infinity
Fabric mesh a group of k GPUs gets k − 1 of its 7 links.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.hardware.gpus import Gpu
from engine.perf.calibration import Calibration
from engine.perf.factors import Factors

GemmDtype = Literal["bf16", "fp8", "fp4"]
FP4_FORMATS = ("nvfp4", "mxfp4")


@dataclass(frozen=True)
class Link:
    bytes_per_s: float  # achieved, one direction, per GPU
    latency_s: float


@dataclass(frozen=True)
class Rates:
    hbm_bytes_per_s: float
    attention_bytes_per_s: float
    bf16_flops: float
    fp8_flops: float
    fp4_flops: float
    gpu: Gpu  # its scale-up wiring: the bandwidth a group of k GPUs gets
    bus_efficiency: float
    collective_latency_s: float
    network: Link
    node_gpus: int
    measured: bool  # from a Calibration

    def flops(self, dtype: GemmDtype) -> float:
        if dtype == "fp4":
            return self.fp4_flops
        return self.fp8_flops if dtype == "fp8" else self.bf16_flops

    def link(self, group: int, gpus_per_node: int) -> Link:
        """The link a collective over ``group`` GPUs runs on: the scale-up domain when the group
        fits in one node (or in the GPU's NVLink domain), at the bandwidth its wiring gives a
        group that size; the network otherwise."""
        if group > max(gpus_per_node, self.node_gpus):
            return self.network
        bandwidth = self.gpu.group_bytes_per_s(group) * self.bus_efficiency
        return Link(bandwidth, self.collective_latency_s)

    def p2p(self, span: int, gpus_per_node: int) -> Link:
        """One GPU sending to one other (a pipeline hand-off) in a copy of ``span`` GPUs: over
        the network when the copy leaves the domain, else over one pair's link."""
        if span > max(gpus_per_node, self.node_gpus):
            return self.network
        return self.link(2, gpus_per_node)


def achieved_rates(
    gpu: Gpu, f: Factors, collective_latency: float, calibration: Calibration | None = None
) -> Rates:
    """The GPU's rates: the catalog's × the fitted fractions (or a calibration's); a collective
    inside the scale-up domain pays ``collective_latency`` (the software stack's)."""
    eff = f.bus_efficiency.value
    latency = collective_latency
    network = Link(gpu.network_bytes_per_s * eff, f.network_latency_seconds.value)
    tensor = f.tensor_fraction.value
    bf16 = gpu.achievable_tensor_flops("bf16") * tensor
    fp8 = gpu.achievable_tensor_flops("fp8") * tensor
    fp4 = gpu.achievable_tensor_flops("fp4") * tensor
    hbm = gpu.bandwidth_bytes_per_s * f.hbm_fraction.value
    if calibration is None:
        return Rates(hbm, hbm, bf16, fp8, fp4, gpu, eff, latency, network, gpu.node_gpus, False)
    hbm = calibration.hbm_bytes_per_s
    attention = calibration.decode_attention_bytes_per_s or hbm
    measured_fp8 = calibration.fp8_gemm_flops
    fp8_m = measured_fp8 if measured_fp8 is not None else calibration.bf16_gemm_flops * fp8 / bf16
    # FP4 is not timed: it keeps the catalog's ratio to the measured FP8 rate
    fp4_m = fp8_m * fp4 / fp8
    return Rates(
        hbm, attention, calibration.bf16_gemm_flops, fp8_m, fp4_m, gpu, eff, latency, network,
        gpu.node_gpus, True,
    )  # fmt: skip


def gemm_dtype(bits_per_weight: float, weight_dtype: str, gpu: Gpu) -> GemmDtype:
    """The dtype a GEMM runs in for weights stored at ``bits_per_weight``: 8-bit floats on FP8
    tensor cores where the GPU has them (else weight-only, dequantised to BF16, as vLLM's Marlin
    path does); 4-bit floats (NVFP4 / MXFP4) on FP4 tensor cores where it has them, else BF16
    (Hopper runs MXFP4 experts as W4A16); integer 4-bit (AWQ, GPTQ) in BF16."""
    if bits_per_weight >= 12:
        return "bf16"
    if bits_per_weight >= 6:
        return "fp8" if gpu.fp8 else "bf16"
    if weight_dtype in FP4_FORMATS and gpu.fp4:
        return "fp4"
    return "bf16"
