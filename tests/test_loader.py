"""Loading from every source, and bad input that names the field."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import InputError
from engine.model.config import normalize
from engine.model.loader import MODELS_DIR, catalog_names, load_model, parse_json_bytes

ROOT = Path(__file__).resolve().parent.parent
LLAMA = json.loads((MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json").read_text())


def test_every_shared_config_is_bundled_with_its_sources() -> None:
    names = catalog_names()
    assert len(names) == 37 + 7  # shared/configs and its newest/
    assert (MODELS_DIR / "SOURCES.md").is_file()
    for n in names:
        assert f"{n.replace('/', '__', 1)}.json" in (MODELS_DIR / "SOURCES.md").read_text()


def test_sources_path_json_text_dict_bytes_and_catalog_agree() -> None:
    path = MODELS_DIR / "meta-llama__Meta-Llama-3.1-8B.json"
    via = [
        load_model(str(path)),
        load_model(path.read_text()),
        load_model(LLAMA),
        load_model(path.read_bytes()),
        load_model("meta-llama/Meta-Llama-3.1-8B"),
        load_model("Meta-Llama-3.1-8B"),
    ]
    assert {m.config.hidden_size for m in via} == {4096}
    assert [m.source for m in via] == ["file", "json", "json", "upload", "catalog", "catalog"]


def test_text_config_is_flattened_and_vision_kept() -> None:
    cfg = load_model("Qwen/Qwen3-VL-32B-Instruct").config
    assert cfg.num_hidden_layers == 64 and cfg.num_key_value_heads == 8
    assert cfg.vision_config is not None


def test_bare_infinity_is_accepted() -> None:
    cfg = load_model("nvidia/Nemotron-H-56B-Base-8K").config
    assert cfg.field("time_step_limit")[1] == float("inf")


def test_aliases_are_normalised() -> None:
    cfg = normalize(
        {"n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "model_type": "gpt2"}
    )
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads) == (768, 12, 12)
    assert cfg.num_key_value_heads == 12


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"{not json", "config.json"),
        (b"\xff\xfe\x00garbage", "config.json"),
        (b"[1, 2]", "config.json"),
        (
            json.dumps({k: v for k, v in LLAMA.items() if k != "hidden_size"}).encode(),
            "hidden_size",
        ),
        (json.dumps(LLAMA | {"num_hidden_layers": "32"}).encode(), "num_hidden_layers"),
        (json.dumps(LLAMA | {"hidden_size": -4096}).encode(), "hidden_size"),
        (json.dumps(LLAMA | {"hidden_size": 10**12}).encode(), "hidden_size"),
        (json.dumps(LLAMA | {"num_key_value_heads": 7}).encode(), "num_key_value_heads"),
        (json.dumps(LLAMA | {"head_dim": 1.5}).encode(), "head_dim"),
        (json.dumps(LLAMA | {"rope_theta": float("nan")}).encode(), "rope_theta"),
        (b" " * 10_000_000, "config.json"),
        (b"", "config.json"),
    ],
)
def test_bad_input_names_the_field(data: bytes, field: str) -> None:
    with pytest.raises(InputError) as err:
        load_model(data)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")


def test_unknown_source_string_is_a_clear_error() -> None:
    with pytest.raises(InputError, match="model: "):
        load_model("definitely not a model")


def test_parse_rejects_deep_nesting() -> None:
    with pytest.raises(InputError):
        parse_json_bytes(b"[" * 100_000 + b"]" * 100_000)


def _hub_cache(tmp: Path, repo: str, config: dict[str, object]) -> Path:
    """The layout huggingface_hub reads offline: refs/main -> snapshots/<sha>/config.json."""
    sha = "0123456789abcdef0123456789abcdef01234567"
    base = tmp / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(sha)
    snap = base / "snapshots" / sha
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return tmp


def _run_cli(args: list[str], env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = os.environ | env_extra
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_hub_id_loads_config_from_a_local_hub_cache(tmp_path: Path) -> None:
    cache = _hub_cache(tmp_path, "acme/tiny-llama", LLAMA)
    res = _run_cli(
        ["diagnose", "acme/tiny-llama", "--json"],
        {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["model"] == "acme/tiny-llama"
    assert out["kv_bytes_per_token"] == 131_072


def test_hub_offline_miss_points_to_catalog_and_upload(tmp_path: Path) -> None:
    res = _run_cli(
        ["diagnose", "acme/not-cached"], {"HF_HUB_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    )
    assert res.returncode == 2
    assert res.stderr.startswith("error: model: ")
    assert "bundled catalog" in res.stderr and "upload" in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_unreachable_hub_fails_fast_with_offline_message(tmp_path: Path) -> None:
    # port 9 (discard) on loopback has no listener here: the probe is refused at once
    env = {
        "HF_HUB_CACHE": str(tmp_path),
        "HF_HUB_OFFLINE": "0",
        "HF_ENDPOINT": "http://127.0.0.1:9",
    }
    res = _run_cli(["diagnose", "acme/not-cached"], env)
    assert res.returncode == 2
    assert "cannot be reached" in res.stderr and "upload" in res.stderr


def test_load_files_takes_a_single_config_of_any_name() -> None:
    from engine.model.loader import load_files

    loaded = load_files({"my-model.json": json.dumps(LLAMA).encode()}, name="my-model.json")
    assert loaded.source == "upload" and loaded.config.hidden_size == 4096
    assert loaded.checkpoint is None and loaded.files == ("config.json",)


@pytest.mark.parametrize(
    ("files", "field"),
    [
        ({"config.json": b"{}", "weights.bin": b"x"}, "weights.bin"),
        ({"a.json": b"{}", "b.json": b"{}"}, "config.json"),
        (
            {"config.json": json.dumps(LLAMA).encode(), "hf_quant_config.json": b"[1]"},
            "hf_quant_config.json",
        ),
        (
            {
                "config.json": json.dumps(LLAMA).encode(),
                "model.safetensors.index.json": b'{"weight_map": {}}',
            },
            "model.safetensors.index.json.metadata",
        ),
        (
            {
                "config.json": json.dumps(LLAMA).encode(),
                "model.safetensors.index.json": b'{"metadata": {"total_size": -5}}',
            },
            "model.safetensors.index.json.metadata.total_size",
        ),
        ({"config.json": b"\xff\xfe\xfd"}, "config.json"),
    ],
)
def test_load_files_errors_name_the_file(files: dict[str, bytes], field: str) -> None:
    from engine.model.loader import load_files

    with pytest.raises(InputError) as err:
        load_files(files)
    assert err.value.field == field


def test_index_metadata_is_read_without_the_weight_map_when_it_comes_first() -> None:
    from engine.model.loader import parse_index

    data = json.dumps(
        {
            "metadata": {"total_size": 16060522496, "total_parameters": 8030261248},
            "weight_map": {f"t{i}": "a.safetensors" for i in range(10)},
        }
    ).encode()
    idx = parse_index(data, "upload")
    assert (idx.total_size, idx.total_parameters, idx.tensors) == (16060522496, 8030261248, None)
    late = json.dumps({"weight_map": {"t": "a"}, "metadata": {"total_size": "42"}}).encode()
    assert parse_index(late, "upload").tensors == 1


def test_hub_id_with_companions_loads_from_the_cli(tmp_path: Path) -> None:
    cache = _hub_cache(tmp_path, "acme/fp4-llama", LLAMA)
    snap = next((cache / "models--acme--fp4-llama" / "snapshots").iterdir())
    (snap / "hf_quant_config.json").write_text(
        json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}})
    )
    res = _run_cli(
        ["diagnose", "acme/fp4-llama", "--json"],
        {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"},
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["checkpoint_format"] == "nvfp4"
