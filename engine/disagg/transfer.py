"""A request's KV on its way from the prefill pool to the decode pool: the bytes its cache specs
give at its prompt, over the link between the pools, added to its time to first token.

The link is the GPU catalog's (``data/gpus.yaml``): when both pools fit one node, the GPUs'
scale-up link (NVLink through a switch; one Infinity Fabric peer link on a mesh; PCIe on a GPU
without either); otherwise the node's network, one RDMA NIC per GPU (``network_gbps``). Each GPU
of the request's rank group moves its own share over its own link at once (a decode rank reads
its share of every layer; a prefill rank sends what its share of the decode ranks need), so the
transfer takes the larger of the two per-GPU shares over one GPU's link.

The bytes are the engine's own accounting (``engine.kv.sizing``) at each pool's attention TP:
full and sliding-window attention per KV head (a window holds at most its window), an MLA latent
on every TP rank (replicated: each decode rank receives the whole latent), a DSA indexer's keys,
and a linear mixer's constant state (``bytes_per_request`` at the prompt's length).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from engine.decision import Code, Decimal, Decision, Name
from engine.engines.memory import Split
from engine.hardware.gpus import Gpu
from engine.kv.sizing import KvSizing
from engine.launch.layout import stage_share
from engine.model.config import ModelConfig

LinkKind = Literal["scale_up", "network"]

LINK_SCALE_UP = Code("disagg.link.scale_up", "name", "gbps")
LINK_NETWORK = Code("disagg.link.network", "gbps")


@dataclass(frozen=True)
class Link:
    """The link a request's KV crosses between the pools: its kind, one GPU's bandwidth in one
    direction (bytes/s), and why it is that link."""

    kind: LinkKind
    bytes_per_s: float
    why: Decision
    source: str

    @property
    def gbps(self) -> float:
        """GB/s (10^9 bytes) one direction, as the catalog states it."""
        return self.bytes_per_s / 1e9


def scale_up_link(gpu: Gpu) -> Link:
    """Both pools on one node: the GPUs' own scale-up link, one GPU to one other (a switch gives
    the whole link; a mesh one peer link)."""
    rate = gpu.group_bytes_per_s(2)
    why = LINK_SCALE_UP(name=Name(gpu.interconnect), gbps=Decimal(rate / 1e9, 1, "GB/s"))
    return Link("scale_up", rate, why, gpu.scale_up_source or gpu.source)


def network_link(gpu: Gpu) -> Link:
    """Pools on different nodes: each GPU's share of the node's network (its RDMA NIC)."""
    rate = gpu.network_bytes_per_s
    why = LINK_NETWORK(gbps=Decimal(rate / 1e9, 1, "GB/s"))
    return Link("network", rate, why, gpu.network_source)


@dataclass(frozen=True)
class Transfer:
    """One request's KV moved between the pools."""

    tokens: int  # the prompt's tokens whose KV moves
    bytes: int  # every byte that crosses the link for one request
    received_per_gpu: int  # bytes each GPU of the decode worker's rank group receives
    sent_per_gpu: int  # bytes each GPU of the prefill worker's rank group sends
    receivers: int  # GPUs of the decode rank group that hold the request (attention TP x PP)
    senders: int  # GPUs of the prefill rank group that computed it
    link: Link

    @property
    def seconds(self) -> float:
        return max(self.received_per_gpu, self.sent_per_gpu) / self.link.bytes_per_s

    @property
    def formula(self) -> str:
        """The numbers behind the time, operators and units only."""
        most = max(self.received_per_gpu, self.sent_per_gpu)
        return (
            f"max({self.received_per_gpu:,} B, {self.bytes:,} B / {self.senders})"
            f" / {self.link.gbps:g} GB/s = {most:,} B / {self.link.gbps:g} GB/s"
            f" = {self.seconds * 1e3:.4g} ms"
        )


def kv_transfer(
    decode_kv: KvSizing,
    isl: int,
    prefill: Split,
    decode: Split,
    cfg: ModelConfig,
    link: Link,
) -> Transfer:
    """The KV of a prompt of ``isl`` tokens moved from a prefill worker cut as ``prefill`` to a
    decode worker cut as ``decode`` (``decode_kv``: the decode engine's sizing at its attention
    TP; a DP-attention request lives on one rank's TP group)."""
    receivers = decode.tp * decode.pp
    senders = prefill.tp * prefill.pp
    whole = decode_kv.bytes_per_request(isl)  # one decode TP rank, every layer
    per_gpu = math.ceil(whole * stage_share(cfg, decode.pp))
    total = whole * decode.tp  # the decode ranks' shares, every layer once per rank
    return Transfer(isl, total, per_gpu, math.ceil(total / senders), receivers, senders, link)
