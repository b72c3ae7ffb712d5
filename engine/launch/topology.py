"""Which GPUs of a deployment reach each other over NVLink: one node's, or, where the machines of
a rack share one NVLink domain (GB200 / GB300 NVL72: trays of 4 GPUs, ``data/gpus.yaml``
``mnnvl``), every node of the deployment up to the rack. A copy that spans trays of one domain is
one NVLink domain for the layout search, the speed model's collectives and the manifests (an IMEX
channel, the NCCL MNNVL variables), not nodes joined by a network."""

from __future__ import annotations

from engine.engines.memory import Split
from engine.hardware.gpus import Gpu


def nvlink_gpus(gpu: Gpu, per_node: int) -> int:
    """GPUs one NVLink domain holds: the node's, or the rack's where its machines share one
    (Multi-Node NVLink)."""
    if gpu.tray_gpus is None:
        return per_node
    return max(per_node, gpu.node_gpus)


def multi_node_nvlink(gpu: Gpu, split: Split, per_node: int) -> bool:
    """A copy that spans nodes and stays inside one NVLink domain (MNNVL)."""
    return split.gpus > per_node and split.gpus <= nvlink_gpus(gpu, per_node)


def over_network(gpu: Gpu, group: int, per_node: int) -> bool:
    """A group of GPUs that leaves the NVLink domain: its traffic crosses the network."""
    return group > nvlink_gpus(gpu, per_node)
