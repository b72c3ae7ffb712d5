"""The GPU catalog: ``data/gpus.yaml`` validated once, served as frozen ``Gpu`` rows.

``memory_bytes`` is the capacity as the vendor states it; ``device_memory_bytes`` is what the
device itself reports (nvidia-smi "Total" MiB, rocm-smi VRAM), which is what the engines read.

Every number comes from the YAML row, which names its source; this module only parses,
checks consistency (an FP8 rate implies FP8 support, NVIDIA rows carry a compute capability
that matches their ``sm_XY`` arch) and resolves forgiving names ("h200", "4090", "a100-80gb").
"""

from __future__ import annotations

import difflib
import re
import statistics
import unicodedata
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine import errors as E
from engine.decision import Code, Decision, Name
from engine.errors import InputError
from engine.rules import DATA_DIR, load_data

GPUS_YAML = DATA_DIR / "gpus.yaml"

# Bytes per unit as the vendor writes it; the label keeps the unit so GB and GiB never mix silently.
_UNIT_BYTES: dict[str, int] = {"GB": 10**9, "GiB": 2**30}

# The longest name a lookup accepts. Every key, name and alias in the catalog is shorter; the cap
# keeps difflib's closest-name ranking (quadratic in the input) off hostile inputs: a 60 KB
# ``?gpu=`` value once took 9 s per page.
MAX_GPU_NAME_CHARS = 64

# Words that carry no identity in a GPU name ("NVIDIA GeForce RTX 4090" == "RTX 4090").
_NOISE_WORDS = frozenset({"nvidia", "amd", "instinct", "geforce", "tesla", "gpu"})


@dataclass(frozen=True)
class Gpu:
    """One accelerator as the serving rules see it; ``source`` says where each number was read."""

    key: str
    name: str
    vendor: str
    memory_bytes: int
    memory_label: str
    device_memory_bytes: int
    device_memory_source: str
    bandwidth_bytes_per_s: float
    arch: str
    compute_capability: tuple[int, int] | None
    bf16_tflops: float
    fp8_tflops: float | None
    fp4_tflops: float | None
    fp8: bool
    fp4: bool
    interconnect: str
    interconnect_gbps: float
    node_gpus: int  # GPUs linked at interconnect_gbps (an HGX node: 8; an NVL72 rack: 72)
    tray_gpus: int | None  # MNNVL: GPUs of one machine of the NVLink domain (None: no MNNVL)
    mnnvl_source: str
    scale_up_topology: Literal["switch", "mesh"]  # NVSwitch / PCIe switch, or links GPU to GPU
    peer_link_gbps: float | None  # one GPU-to-GPU link of a mesh, one direction (GB/s)
    scale_up_source: str
    network_bytes_per_s: float  # per GPU, one direction, to GPUs outside that domain
    network_source: str
    source: str
    note: str
    # the measured Maximum Achievable Matmul FLOPS (data/gpus.yaml matmul); None: not measured
    matmul_bf16_tflops: float | None = None
    matmul_fp8_tflops: float | None = None
    matmul_source: str = ""
    host_link_bytes_per_s: float = 0.0  # per GPU, one direction, to its host's memory
    host_link_source: str = ""

    @property
    def interconnect_bytes_per_s(self) -> float:
        """Per-GPU, one-direction bandwidth of the scale-up link (NVLink, Infinity Fabric or
        PCIe), in bytes/s."""
        return self.interconnect_gbps * 1e9

    def group_bytes_per_s(self, group: int) -> float:
        """Per-GPU, one-direction bandwidth a collective over ``group`` GPUs of one scale-up
        domain gets: through a switch every group gets the GPU's whole link; in a full mesh
        (Infinity Fabric) a GPU reaches each of the other group - 1 members over its own link,
        so the group gets (group - 1) links, at most the aggregate."""
        if self.scale_up_topology == "mesh" and self.peer_link_gbps is not None:
            return min(self.interconnect_gbps, (group - 1) * self.peer_link_gbps) * 1e9
        return self.interconnect_bytes_per_s

    def dense_tensor_flops(self, dtype: str) -> float:
        """Peak dense tensor-core FLOP/s for GEMMs run in ``dtype`` (bf16, fp8, fp4); a dtype the
        GPU has no tensor cores for runs at the next wider one it has."""
        if dtype == "fp4" and self.fp4_tflops is not None:
            return self.fp4_tflops * 1e12
        if dtype in ("fp4", "fp8") and self.fp8_tflops is not None:
            return self.fp8_tflops * 1e12
        return self.bf16_tflops * 1e12

    def gemm_dtype(self, dtype: str) -> str:
        """The tensor cores a GEMM in ``dtype`` runs on here: the next wider dtype the GPU has
        tensor cores for (as ``dense_tensor_flops`` reads the peak)."""
        if dtype == "fp4" and self.fp4_tflops is not None:
            return "fp4"
        if dtype in ("fp4", "fp8") and self.fp8_tflops is not None:
            return "fp8"
        return "bf16"

    def measured_matmul_share(self, dtype: str) -> float | None:
        """The share of the dense peak a matmul in ``dtype`` reached at its best shape on this
        GPU (the measured MAMF over the datasheet's peak), or None where it was not measured.
        FP4, and FP8 where only BF16 was measured, take the nearest measured dtype's share."""
        runs = self.gemm_dtype(dtype)
        if runs != "bf16" and self.fp8_tflops is not None and self.matmul_fp8_tflops:
            return self.matmul_fp8_tflops / self.fp8_tflops
        if self.matmul_bf16_tflops:
            return self.matmul_bf16_tflops / self.bf16_tflops
        return None

    def matmul_share(self, dtype: str) -> float:
        """The share of the dense peak a matmul in ``dtype`` reaches at best on this GPU: its
        own measurement, else the median of the measured GPUs of its vendor that run ``dtype``
        on the same tensor cores (data/gpus.yaml matmul)."""
        own = self.measured_matmul_share(dtype)
        if own is not None:
            return own
        return _vendor_matmul_share(self.vendor, self.gemm_dtype(dtype))

    def achievable_tensor_flops(self, dtype: str) -> float:
        """The dense tensor FLOP/s a matmul in ``dtype`` reaches at its best shape: the peak
        (``dense_tensor_flops``) × ``matmul_share``."""
        return self.dense_tensor_flops(dtype) * self.matmul_share(dtype)

    @property
    def generation(self) -> str:
        """One of ampere, ada, hopper, blackwell, blackwell-consumer, cdna3, cdna4."""
        return _catalog().generations[self.arch]


class _Memory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float = Field(gt=0)
    unit: Literal["GB", "GiB"]
    type: str


class _DeviceMemory(BaseModel):
    """The total the device reports (nvidia-smi "Total" MiB or rocm-smi VRAM / 2^20)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mib: int = Field(gt=0)
    source: str = Field(min_length=1)


class _ScaleUp(BaseModel):
    """How the GPUs of one domain are wired: ``mesh``, a direct link to each peer of
    ``peer_gbps`` (one direction); absent, a switch that gives every GPU its whole bandwidth
    toward any group."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topology: Literal["mesh"]
    peer_gbps: float = Field(gt=0)
    source: str = Field(min_length=1)


SWITCH_SOURCE = (
    "NVSwitch / PCIe switch: every GPU reaches any group of its domain at its whole per-GPU "
    "bandwidth (data/gpus.yaml header)"
)


class _GpuRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=1)
    name: str = Field(min_length=1)
    aliases: list[str] = []
    vendor: Literal["nvidia", "amd"]
    memory: _Memory
    device_memory: _DeviceMemory
    bandwidth_tb_s: float = Field(gt=0)
    arch: str
    compute_capability: tuple[int, int] | None
    bf16_tflops: float = Field(gt=0)
    fp8_tflops: float | None = Field(default=None, gt=0)
    fp4_tflops: float | None = Field(default=None, gt=0)
    fp8: bool
    fp4: bool
    interconnect: str
    interconnect_gbps: float = Field(gt=0)
    node_gpus: int = Field(ge=1)
    mnnvl: _Mnnvl | None = None
    scale_up: _ScaleUp | None = None
    network_gbps: float = Field(gt=0)
    network_source: str = Field(min_length=1)
    host_link: _HostLink
    source: str = Field(min_length=1)
    note: str = ""
    matmul: _Matmul | None = None

    @model_validator(mode="after")
    def _consistent(self) -> _GpuRow:
        if self.fp8_tflops is not None and not self.fp8:
            raise ValueError(f"{self.key}: fp8_tflops given but fp8 is false")
        if self.fp4_tflops is not None and not self.fp4:
            raise ValueError(f"{self.key}: fp4_tflops given but fp4 is false")
        if self.vendor == "nvidia":
            if self.compute_capability is None:
                raise ValueError(f"{self.key}: NVIDIA rows need a compute_capability")
            major, minor = self.compute_capability
            if self.arch != f"sm_{major}{minor}":
                raise ValueError(f"{self.key}: arch {self.arch} is not sm_{major}{minor}")
        elif self.compute_capability is not None:
            raise ValueError(f"{self.key}: AMD rows have no CUDA compute capability")
        if self.scale_up is not None and self.scale_up.peer_gbps > self.interconnect_gbps:
            raise ValueError(f"{self.key}: one peer link is faster than the GPU's aggregate")
        if self.matmul is not None:
            if self.matmul.bf16_tflops > self.bf16_tflops:
                raise ValueError(f"{self.key}: a measured BF16 matmul above the BF16 peak")
            fp8 = self.matmul.fp8_tflops
            if fp8 is not None and (self.fp8_tflops is None or fp8 > self.fp8_tflops):
                raise ValueError(f"{self.key}: a measured FP8 matmul above the FP8 peak")
        return self


class _Mnnvl(BaseModel):
    """Machines of ``tray_gpus`` GPUs sharing one NVLink domain of the row's ``node_gpus``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tray_gpus: int = Field(ge=1)
    source: str = Field(min_length=1)


class _HostLink(BaseModel):
    """The GPU's link to its host's memory (PCIe, NVLink-C2C), one direction, GB/s."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gbps: float = Field(gt=0)
    source: str = Field(min_length=1)


class _Matmul(BaseModel):
    """A measured Maximum Achievable Matmul FLOPS (dense TFLOPS at the best shape found)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bf16_tflops: float = Field(gt=0)
    fp8_tflops: float | None = Field(default=None, gt=0)
    source: str = Field(min_length=1)


class _CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    generations: dict[str, str]
    gpus: list[_GpuRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _known_arches_and_unique_names(self) -> _CatalogFile:
        seen: dict[str, str] = {}
        for row in self.gpus:
            if row.arch not in self.generations:
                raise ValueError(f"{row.key}: arch {row.arch} has no entry in generations")
            for spelling in (row.key, row.name, *row.aliases):
                norm = _normalize(spelling)
                if seen.get(norm, row.key) != row.key:
                    raise ValueError(f"name {spelling!r} is used by {seen[norm]} and {row.key}")
                seen[norm] = row.key
        return self


@dataclass(frozen=True)
class _Catalog:
    gpus: tuple[Gpu, ...]
    generations: dict[str, str]
    by_name: dict[str, str]  # normalized spelling -> key
    aliases: dict[str, tuple[str, ...]]  # key -> the catalog's other spellings


def _normalize(name: str) -> str:
    tokens = re.split(r"[^a-z0-9]+", name.lower())
    return "".join(t for t in tokens if t and t not in _NOISE_WORDS)


def _to_gpu(row: _GpuRow) -> Gpu:
    mem = row.memory
    return Gpu(
        key=row.key,
        name=row.name,
        vendor=row.vendor,
        memory_bytes=round(mem.value * _UNIT_BYTES[mem.unit]),
        memory_label=f"{mem.value:g} {mem.unit} {mem.type}",
        device_memory_bytes=row.device_memory.mib * 2**20,
        device_memory_source=row.device_memory.source,
        bandwidth_bytes_per_s=float(round(row.bandwidth_tb_s * 1e12)),
        arch=row.arch,
        compute_capability=row.compute_capability,
        bf16_tflops=row.bf16_tflops,
        fp8_tflops=row.fp8_tflops,
        fp4_tflops=row.fp4_tflops,
        fp8=row.fp8,
        fp4=row.fp4,
        interconnect=row.interconnect,
        interconnect_gbps=row.interconnect_gbps,
        node_gpus=row.node_gpus,
        tray_gpus=row.mnnvl.tray_gpus if row.mnnvl is not None else None,
        mnnvl_source=row.mnnvl.source if row.mnnvl is not None else "",
        scale_up_topology="mesh" if row.scale_up is not None else "switch",
        peer_link_gbps=row.scale_up.peer_gbps if row.scale_up is not None else None,
        scale_up_source=row.scale_up.source if row.scale_up is not None else SWITCH_SOURCE,
        network_bytes_per_s=row.network_gbps * 1e9,
        network_source=row.network_source,
        source=row.source,
        note=row.note,
        matmul_bf16_tflops=row.matmul.bf16_tflops if row.matmul else None,
        matmul_fp8_tflops=row.matmul.fp8_tflops if row.matmul else None,
        matmul_source=row.matmul.source if row.matmul else "",
        host_link_bytes_per_s=row.host_link.gbps * 1e9,
        host_link_source=row.host_link.source,
    )


@cache
def _catalog() -> _Catalog:
    parsed = load_data(_CatalogFile, GPUS_YAML.name)
    by_name: dict[str, str] = {}
    for row in parsed.gpus:
        for spelling in (row.key, row.name, *row.aliases):
            by_name[_normalize(spelling)] = row.key
    return _Catalog(
        gpus=tuple(_to_gpu(r) for r in parsed.gpus),
        generations=dict(parsed.generations),
        by_name=by_name,
        aliases={r.key: tuple(r.aliases) for r in parsed.gpus},
    )


@cache
def _vendor_matmul_share(vendor: str, runs: str) -> float:
    """The median measured matmul share over the catalog's GPUs of ``vendor`` that run ``runs``
    GEMMs on their own tensor cores, each measurement once (the A100 40 GB and 80 GB rows cite
    one; over every such GPU where none of the vendor's was measured)."""
    gpus = [g for g in _catalog().gpus if g.gemm_dtype(runs) == runs]
    for pool in ([g for g in gpus if g.vendor == vendor], gpus):
        shares = {
            (g.matmul_bf16_tflops, g.bf16_tflops)
            + ((g.matmul_fp8_tflops, g.fp8_tflops) if runs != "bf16" else ()): s
            for g in pool
            if (s := g.measured_matmul_share(runs)) is not None
        }
        if shares:
            return statistics.median(shares.values())
    return 1.0  # a catalog without a single measurement: the peak


def all_gpus() -> list[Gpu]:
    """Every catalog row, in file order."""
    return list(_catalog().gpus)


def aliases(key: str) -> tuple[str, ...]:
    """The other spellings ``lookup_gpu`` accepts for ``key``, as the catalog lists them (its
    display name, case, spaces and vendor words aside)."""
    return _catalog().aliases.get(key, ())


def note_code(key: str) -> str:
    """The code that words a GPU's note: ``gpu.note.a100_80gb_pcie``."""
    return "gpu.note." + re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


# What the data says about a row's figures, worded once per language (data/i18n/<lang>/gpus.yaml;
# a test keeps the English equal to the note in gpus.yaml, as a reader sees it).
GPU_NOTE = {g.key: Code(note_code(g.key)) for g in all_gpus() if g.note}


def gpu_note(gpu: Gpu) -> Decision | None:
    """The GPU's note as a decision (None: the row has no note)."""
    code = GPU_NOTE.get(gpu.key)
    return code() if code is not None else None


def _common_prefix_len(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _closest(query: str, n: int = 3) -> list[str]:
    """Keys ranked by similarity; a spelling that contains the query (e.g. "a100") ranks first,
    then a shared prefix ("mi400" is nearer "mi300x" than "rtx4090")."""
    cat = _catalog()
    best: dict[str, float] = {}
    for norm, key in cat.by_name.items():
        score = difflib.SequenceMatcher(None, query, norm).ratio()
        if query and (query in norm or norm in query):
            score += 1.0
        prefix = _common_prefix_len(query, norm)
        score += 0.5 * prefix / max(len(query), 1)
        best[key] = max(best.get(key, 0.0), score)
    order = {g.key: i for i, g in enumerate(cat.gpus)}
    ranked = sorted(best, key=lambda k: (-best[k], order[k]))
    return ranked[:n]


def lookup_gpu(name: str) -> Gpu:
    """Resolve a GPU by key, display name or alias, ignoring case, spaces, dashes and vendor words.

    "H200", "h200", "H200 SXM", "RTX 4090", "4090", "A100 80GB", "a100-80gb" and "MI300X" all
    resolve. An ambiguous or unknown name raises ``InputError("gpu", ...)`` listing the closest
    keys (a bare "A100" is ambiguous: 40 GB and 80 GB parts differ in what fits). A name longer
    than ``MAX_GPU_NAME_CHARS`` or holding a control character is refused before any matching.
    """
    if len(name) > MAX_GPU_NAME_CHARS or any(unicodedata.category(c) == "Cc" for c in name):
        raise InputError(
            "gpu",
            f"a GPU name of at most {MAX_GPU_NAME_CHARS} characters, without control characters",
            expects=E.GPU_NAME(most=MAX_GPU_NAME_CHARS),
        )
    cat = _catalog()
    key = cat.by_name.get(_normalize(name))
    if key is None:
        closest = _closest(_normalize(name))
        raise InputError(
            "gpu",
            f"a known GPU name; closest: {', '.join(closest)}",
            expects=E.KNOWN_GPU(closest=tuple(Name(c) for c in closest)),
        )
    return next(g for g in cat.gpus if g.key == key)
