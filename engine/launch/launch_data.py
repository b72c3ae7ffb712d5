"""``data/launch.yaml``, read and validated once: the facts a launch command and its deployment
are built from (port, images, prefill chunks, MTP, LMCache, Kubernetes, routers, multi-node ports,
base-checkpoint naming, the layout search's thresholds), each with its source."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import Field

from engine.rules import DATA_DIR, Strict, load_data
from engine.scenario import Engine

LAUNCH_YAML = DATA_DIR / "launch.yaml"


class _EngineImages(Strict):
    vllm: str
    sglang: str


class _Entrypoint(Strict):
    vendor: Literal["nvidia", "amd"]
    engine: Engine


class _Images(Strict):
    nvidia: _EngineImages
    amd: _EngineImages
    entrypoint_serves: _Entrypoint
    source: str = Field(min_length=1)


class _PrefillChunk(Strict):
    latency: int = Field(gt=0)
    balanced: int = Field(gt=0)
    throughput: int = Field(gt=0)
    images: int = Field(gt=0)
    source: str = Field(min_length=1)

    def for_priority(self, priority: str) -> int:
        chunk: int = getattr(self, priority)
        return chunk


class _Mtp(Strict):
    vllm_num_speculative_tokens: int = Field(ge=1)
    sglang_num_steps: int = Field(ge=1)
    sglang_eagle_topk: int = Field(ge=1)
    sglang_num_draft_tokens: int = Field(ge=2)
    source: str = Field(min_length=1)


class _LmCache(Strict):
    chunk_size: int = Field(gt=0)
    source: str = Field(min_length=1)


class _ModelCache(Strict):
    claim: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    mount_path: str = Field(pattern=r"^/")
    source: str = Field(min_length=1)


class _HfToken(Strict):
    secret: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
    key: str = Field(min_length=1)
    env: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    source: str = Field(min_length=1)


class _Probes(Strict):
    period_seconds: int = Field(ge=1)
    read_gib_per_second: float = Field(gt=0)
    warmup_seconds: int = Field(ge=0)
    source: str = Field(min_length=1)


class _MultiNodeNetwork(Strict):
    host_network: bool
    capabilities: list[str]
    rdma_resource: str = Field(pattern=r"^[a-z0-9][-a-z0-9.]*/[A-Za-z0-9][-A-Za-z0-9_.]*$")
    rdma_source: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _PodRequests(Strict):
    cpu_per_gpu: int = Field(ge=1)
    memory_gib_per_gpu: int = Field(ge=1)
    source: str = Field(min_length=1)


class _ComputeDomain(Strict):
    api_version: str = Field(min_length=1)
    claim: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    clique_label: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _Kubernetes(Strict):
    shm_size: str = Field(pattern=r"^\d+(Mi|Gi)$")
    source: str = Field(min_length=1)
    model_cache: _ModelCache
    hf_token: _HfToken
    probes: _Probes
    pod_requests: _PodRequests
    compute_domain: _ComputeDomain
    multi_node_network: _MultiNodeNetwork


class _Router(Strict):
    argv: list[str] = Field(min_length=1)
    # the same router started by hand beside a launch script: the servers listed by address
    script_argv: list[str] = Field(min_length=1)
    policy: str = Field(min_length=1)
    image: str | None = None
    source: str = Field(min_length=1)


class _NicEnv(Strict):
    vars: list[str] = Field(min_length=1)
    placeholder: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    pod_interface: str = Field(min_length=1)
    source: str = Field(min_length=1)


class _MnnvlVar(Strict):
    name: str = Field(pattern=r"^[A-Z_][A-Z0-9_]*$")
    value: str
    engine: Engine | None = None  # None: both engines read it


class _Mnnvl(Strict):
    env: list[_MnnvlVar] = Field(min_length=1)
    env_source: str = Field(min_length=1)
    all_to_all: dict[Engine, str]
    all_to_all_source: str = Field(min_length=1)


class _MultiNode(Strict):
    vllm_dp_rpc_port: int = Field(ge=1, le=65535)
    vllm_master_port: int = Field(ge=1, le=65535)
    sglang_dist_init_port: int = Field(ge=1, le=65535)
    nic_env: _NicEnv
    mnnvl: _Mnnvl
    hybrid_lb_source: str = Field(min_length=1)
    source: str = Field(min_length=1)

    @property
    def ports(self) -> dict[str, int]:
        return {
            "dp_rpc": self.vllm_dp_rpc_port,
            "master": self.vllm_master_port,
            "dist_init": self.sglang_dist_init_port,
        }


class _BaseCheckpoints(Strict):
    marker_tokens: list[str]
    instruct_named: dict[str, list[str]]
    source: str = Field(min_length=1)


class LaunchFacts(Strict):
    """``data/launch.yaml``: the facts a launch command and its deployment are built from."""

    port: int = Field(ge=1, le=65535)
    base_checkpoints: _BaseCheckpoints
    images: _Images
    prefill_chunk: _PrefillChunk
    mtp: _Mtp
    lmcache: _LmCache
    kubernetes: _Kubernetes
    routers: dict[Engine, _Router]
    multi_node: _MultiNode
    layout: dict[str, Any]


@cache
def launch_facts() -> LaunchFacts:
    """``data/launch.yaml``, read and validated once."""
    return load_data(LaunchFacts, LAUNCH_YAML.name)
