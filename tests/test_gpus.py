"""The GPU catalog (data/gpus.yaml): values as the sources state them, forgiving lookups."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.hardware.gpus import MAX_GPU_NAME_CHARS, all_gpus, lookup_gpu

REQUIRED_KEYS = {
    "A100 40GB",
    "A100 80GB",
    "H100 SXM",
    "H100 PCIe",
    "H20",
    "H200",
    "GH200",
    "B200",
    "B300",
    "GB200",
    "GB300",
    "L40S",
    "L4",
    "A10G",
    "RTX 3090",
    "RTX 4090",
    "RTX 5090",
    "RTX PRO 6000",
    "MI300X",
    "MI325X",
    "MI355X",
}


def test_catalog_has_every_required_row() -> None:
    assert not REQUIRED_KEYS - {g.key for g in all_gpus()}


def test_every_row_names_its_source() -> None:
    for gpu in all_gpus():
        assert gpu.source.strip(), gpu.key


def test_memory_label_says_gb_or_gib() -> None:
    for gpu in all_gpus():
        assert " GB " in gpu.memory_label or " GiB " in gpu.memory_label, gpu.key


def test_h200_is_141_gb_at_4_8_tb_per_s_on_sm_90() -> None:
    h200 = lookup_gpu("H200")
    assert h200.memory_bytes == 141_000_000_000
    assert h200.memory_label == "141 GB HBM3e"
    assert h200.bandwidth_bytes_per_s == 4.8e12
    assert h200.arch == "sm_90"
    assert h200.compute_capability == (9, 0)
    assert h200.generation == "hopper"
    assert h200.bf16_tflops == 989
    assert h200.fp8 and not h200.fp4
    assert h200.interconnect_gbps == 450


def test_mi300x_memory_is_192_gib_as_rocm_states_it() -> None:
    mi300x = lookup_gpu("MI300X")
    assert mi300x.memory_bytes == 192 * 2**30
    assert mi300x.memory_label == "192 GiB HBM3"
    assert mi300x.compute_capability is None
    assert mi300x.arch == "gfx942"
    assert mi300x.generation == "cdna3"


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("H200", "H200"),
        ("h200", "H200"),
        ("H200 SXM", "H200"),
        ("RTX 4090", "RTX 4090"),
        ("4090", "RTX 4090"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("A100 80GB", "A100 80GB"),
        ("a100-80gb", "A100 80GB"),
        ("A100 40GB", "A100 40GB"),
        ("MI300X", "MI300X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("H100", "H100 SXM"),
        ("h100 pcie", "H100 PCIe"),
        ("rtx pro 6000 blackwell", "RTX PRO 6000"),
        ("GB300 NVL72", "GB300"),
    ],
)
def test_forgiving_names_resolve(name: str, key: str) -> None:
    assert lookup_gpu(name).key == key


def test_unknown_gpu_is_an_input_error_naming_gpu_and_the_closest_keys() -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu("H300")
    assert err.value.field == "gpu"
    assert str(err.value).split(": ", 1)[1].startswith("a known GPU name; closest: ")
    closest = str(err.value).split(": ", 1)[1].split("closest: ")[1].split(", ")
    assert len(closest) == 3
    assert "H200" in closest


def test_bare_a100_is_ambiguous_and_lists_both_memory_sizes() -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu("A100")
    assert str(err.value) == "gpu: a known GPU name; closest: A100 40GB, A100 80GB, A100 80GB PCIe"


@pytest.mark.parametrize(
    ("key", "arch", "generation"),
    [
        ("A100 80GB", "sm_80", "ampere"),
        ("A10G", "sm_86", "ampere"),
        ("L40S", "sm_89", "ada"),
        ("H20", "sm_90", "hopper"),
        ("B200", "sm_100", "blackwell"),
        ("B300", "sm_103", "blackwell"),
        ("GB300", "sm_103", "blackwell"),
        ("RTX 5090", "sm_120", "blackwell-consumer"),
        ("MI355X", "gfx950", "cdna4"),
    ],
)
def test_arch_and_generation(key: str, arch: str, generation: str) -> None:
    gpu = lookup_gpu(key)
    assert (gpu.arch, gpu.generation) == (arch, generation)


def test_fp8_tensor_cores_start_at_ada_and_fp4_at_blackwell() -> None:
    for gpu in all_gpus():
        if gpu.vendor != "nvidia":
            continue
        major, minor = gpu.compute_capability or (0, 0)
        assert gpu.fp8 == ((major, minor) >= (8, 9)), gpu.key
        assert gpu.fp4 == (major >= 10), gpu.key


def test_nvidia_rows_have_a_compute_capability_matching_their_arch() -> None:
    for gpu in all_gpus():
        if gpu.vendor == "nvidia":
            assert gpu.compute_capability is not None
            assert gpu.arch == "sm_{}{}".format(*gpu.compute_capability)


def test_b200_dense_rates_double_per_precision_step() -> None:
    b200 = lookup_gpu("B200")
    assert (b200.bf16_tflops, b200.fp8_tflops, b200.fp4_tflops) == (2250, 4500, 9000)
    assert b200.memory_bytes == 180_000_000_000
    assert b200.interconnect_gbps == 900


def test_lookup_returns_the_same_frozen_row() -> None:
    gpu = lookup_gpu("h200")
    assert gpu is lookup_gpu("H200 SXM")
    with pytest.raises(AttributeError):
        gpu.memory_bytes = 0  # type: ignore[misc]


def test_a_60000_character_gpu_name_is_refused_before_fuzzy_matching() -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu("H" * 60_000)
    assert err.value.field == "gpu"
    assert str(MAX_GPU_NAME_CHARS) in str(err.value)


def test_a_65_character_gpu_name_is_refused_and_64_is_matched() -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu("x" * 65)
    assert err.value.field == "gpu"
    with pytest.raises(InputError) as err:
        lookup_gpu("x" * 64)
    assert str(err.value).split(": ", 1)[1].startswith("a known GPU name; closest: ")


@pytest.mark.parametrize("name", ["H200\n", "H\x00200", "H200\x1b[31m", "H200\x7f"])
def test_a_gpu_name_with_a_control_character_is_refused(name: str) -> None:
    with pytest.raises(InputError) as err:
        lookup_gpu(name)
    assert err.value.field == "gpu"


def test_every_catalog_spelling_fits_the_name_cap() -> None:
    for gpu in all_gpus():
        assert len(gpu.name) <= MAX_GPU_NAME_CHARS, gpu.key
        assert lookup_gpu(gpu.name) is gpu


def test_h100_device_reports_81559_mib() -> None:
    h100 = lookup_gpu("H100")
    assert h100.device_memory_bytes == 81_559 * 2**20
    assert h100.memory_bytes == 80_000_000_000


@pytest.mark.parametrize(
    ("key", "mib"),
    [
        ("A100 80GB", 81_920),
        ("H200", 143_771),
        ("B200", 183_359),
        ("GB200", 189_471),
        ("L40S", 46_068),
        ("RTX 4090", 24_564),
        ("MI300X", 196_288),
    ],
)
def test_device_memory_as_the_device_reports_it(key: str, mib: int) -> None:
    assert lookup_gpu(key).device_memory_bytes == mib * 2**20


def test_every_device_memory_is_within_10_percent_of_the_vendor_figure() -> None:
    for gpu in all_gpus():
        ratio = gpu.device_memory_bytes / gpu.memory_bytes
        assert 0.95 <= ratio <= 1.10, (gpu.key, ratio)


def test_every_device_memory_names_its_source() -> None:
    for gpu in all_gpus():
        assert gpu.device_memory_source.strip(), gpu.key


def test_a_row_without_a_sourced_device_memory_falls_back_to_the_vendor_bytes() -> None:
    for gpu in all_gpus():
        if gpu.device_memory_source.startswith("not found"):
            assert gpu.device_memory_bytes == gpu.memory_bytes // 2**20 * 2**20, gpu.key
