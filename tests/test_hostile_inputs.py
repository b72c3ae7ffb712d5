"""The security issue's findings, one test each, through the ``python -m engine`` entry point and
the engine functions the app calls: each hostile case is one clear error (or a clean result),
never a traceback, never a server path, and each finishes in under a second.

The measure step's own cases (regexes, overflowing numbers, /dev/zero, FIFOs, byte caps,
``--model-dims`` files) are in tests/test_measure_hostile.py; the GPU-name cap in
tests/test_gpus.py. These go end to end through the CLI and the Scenario.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from pathlib import Path

import pytest
import yaml

from engine.cli import main
from engine.errors import InputError
from engine.model.loader import load_pasted
from engine.scenario import catalog_name, echo, from_query, make_scenario
from tests.study_util import english

pytestmark = pytest.mark.timeout(30)  # a regression fails here instead of hanging the run

# CPU seconds of the calling thread: the bound on the work of each hostile case, which a
# busy machine does not inflate (how fast the app is, is measured by `make bench`)
FAST = 1.0
LINK_NAME = "![](https://evil.example/i.png)[x](https://evil.example).json"
ROOT = Path(__file__).resolve().parent.parent
QWEN = "Qwen/Qwen3-8B"


def run(argv: list[str]) -> tuple[int, str, str, float]:
    """``python -m engine ARGV`` in-process: exit code, stdout, stderr, seconds."""
    out, err = io.StringIO(), io.StringIO()
    start = time.thread_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), time.thread_time() - start


def clean_error(argv: list[str], field: str | None = None) -> str:
    """Run ``argv``: exit 2, one stderr line ``error: <field>: ...``, no traceback, no server
    path, under a second. Returns the line."""
    code, _, err, seconds = run(argv)
    lines = err.strip().splitlines()
    assert code == 2, (code, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal" not in err, err
    assert str(ROOT) not in err, err
    if field is not None:
        assert lines[0].startswith(f"error: {field}"), lines[0]
    assert seconds < FAST, seconds
    return lines[0]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# --- the paste box reads no server files --------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "/etc/passwd",
        "/etc/hostname",
        str(ROOT / "data" / "models" / "Qwen__Qwen3-8B.json"),
        "data/models/Qwen__Qwen3-8B.json",
        "~/.bashrc",
        "Qwen/Qwen3-8B",  # a catalog name: the Catalog mode's job, not the paste box's
        "../../../../etc/shadow",
    ],
)
def test_pasted_text_that_is_a_path_or_a_name_is_refused_as_not_json(text: str) -> None:
    with pytest.raises(InputError, match="JSON text"):
        load_pasted(text)


@pytest.mark.parametrize(
    "name",
    [
        "../../../../etc/passwd",
        "x/../../../../etc/passwd",
        "/etc/passwd",
        "Qwen/../Qwen__Qwen3-8B",
        "a" * 300,
        "a/" + "b" * 260,
        "\x00",
    ],
)
def test_catalog_names_resolve_only_inside_the_bundled_catalog(name: str) -> None:
    assert catalog_name(name) is None
    start = time.thread_time()
    with pytest.raises(InputError):
        make_scenario(model=name)
    assert time.thread_time() - start < FAST


def test_catalog_names_still_resolve_by_any_case_and_by_short_name() -> None:
    assert catalog_name("qwen/qwen3-8b") == QWEN
    assert catalog_name("Qwen3-8B") == QWEN
    assert make_scenario(model="QWEN3-8B").model == QWEN


# --- tracebacks: every case one line -----------------------------------------------------------


def test_tp_10_to_the_59_is_a_bound_not_a_traceback() -> None:
    assert "at most" in clean_error(["diagnose", QWEN, "--tp", str(10**59)], "tp")


def test_tp_3_on_a_32_head_model_says_no_layout_runs() -> None:
    code, _, err, _ = run(["diagnose", QWEN, "--gpus", "4", "--tp", "3"])
    assert code == 2 and err.startswith("error: "), err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "1e-400"])
def test_memory_fraction_that_is_not_finite_or_in_range_is_named(value: str) -> None:
    clean_error(["study", QWEN, f"--memory-fraction={value}"], "memory_fraction")


@pytest.mark.parametrize("argv0", ["study", "diagnose", "gates", "software", "plan"])
@pytest.mark.parametrize("length", [251, 300, 5_000])
def test_a_source_longer_than_a_file_name_is_one_line_without_the_server_path(
    argv0: str, length: int
) -> None:
    """Before: ``OSError: File name too long: '/.../data/models/xxx…'`` (the catalog lookup
    made the text a path under the server's data folder)."""
    clean_error([argv0, "x" * length])
    clean_error([argv0, "org/" + "x" * length])


def test_kernels_takes_its_own_options_through_the_one_cli(tmp_path: Path) -> None:
    """Before: ``kernels --model-dims F`` was 'unrecognized arguments' (argparse REMAINDER)."""
    import engine.measure.kernels.__main__  # noqa: F401  # torch's import is not the case's time

    bad = tmp_path / "dims.json"
    bad.write_bytes(b"\xff\xfe{")
    assert "model-dims" in clean_error(["kernels", "--model-dims", str(bad)])
    clean_error(["kernels", "--model-dims", "/dev/zero"], "model-dims")
    clean_error(["kernels", "--model-dims", '{"a":' * 5_000], "model-dims")


def test_a_vision_config_of_the_wrong_type_is_one_line() -> None:
    cfg = json.loads((ROOT / "data/models/Qwen__Qwen3-8B.json").read_text())
    for vision in ([1, 2], "text", 7):
        clean_error(["diagnose", json.dumps(cfg | {"vision_config": vision})])


@pytest.mark.parametrize("vision", [{"hidden_size": "abc"}, {"hidden_size": 1e308, "depth": 1e308}])
def test_vision_config_fields_of_the_wrong_type_or_huge_never_trace(vision: object) -> None:
    cfg = json.loads((ROOT / "data/models/Qwen__Qwen3-8B.json").read_text())
    code, _, err, seconds = run(["diagnose", json.dumps(cfg | {"vision_config": vision})])
    assert code in (0, 2) and "Traceback" not in err and "internal" not in err, err
    assert seconds < FAST


def test_lint_a_309_digit_tensor_parallel_size_names_the_flag() -> None:
    code, out, err, _ = run(["lint", "vllm serve org/m --tensor-parallel-size " + "9" * 309])
    assert code == 1 and err == ""  # a report (exit 1: an error) naming the flag
    assert "bad-value [--tensor-parallel-size]" in out and "OverflowError" not in out


# --- unbounded work: each case under a second ----------------------------------------------------

ANCHORS = (
    "a: &a [x,x,x,x,x,x,x,x,x]\n"
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "command: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
)


def test_a_yaml_of_nested_aliases_in_lint_is_refused_in_under_a_second() -> None:
    run(["lint", "vllm serve org/model"])  # the lint tables load once, outside the timing
    assert len(clean_error(["lint", ANCHORS])) < 2_000


def test_an_error_line_is_capped_however_much_input_it_quotes() -> None:
    code, _, err, _ = run(["diagnose", "\x00" * 60_000])
    assert code == 2 and len(err) <= 1_001 and "Traceback" not in err


def test_1100_nested_sh_c_in_lint_is_one_line_in_under_a_second() -> None:
    run(["lint", "vllm serve org/model"])  # the lint tables load once, outside the timing
    command = "sh -c " * 1100 + "'vllm serve org/model'"
    code, _, err, seconds = run(["lint", command])
    assert code in (0, 2) and "Traceback" not in err and "RecursionError" not in err, err
    assert seconds < FAST


def test_a_command_of_6000_unknown_flags_lints_in_under_a_second() -> None:
    run(["lint", "vllm serve org/model"])  # the lint tables load once, outside the timing
    command = "vllm serve org/m " + " ".join(f"--a{i}" for i in range(6_000))
    code, _, err, seconds = run(["lint", command])
    assert code in (0, 2) and "Traceback" not in err
    assert seconds < FAST


def test_a_20_kb_non_default_args_line_in_backcalc_is_read_in_under_a_second(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    log.write_text("INFO non-default args: {" + "'a': 1, " * 2_500 + "\n")
    clean_error(["backcalc", QWEN, "--log", str(log)], "log")


def test_backcalc_log_from_dev_zero_is_refused_in_under_a_second() -> None:
    clean_error(["backcalc", QWEN, "--log", "/dev/zero"], "log")


def test_backcalc_log_from_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    clean_error(["backcalc", QWEN, "--log", str(fifo)], "log")


@pytest.mark.parametrize("number", ["1" + "0" * 400, "nan", "inf", "9" * 5_000])
def test_backcalc_numbers_that_overflow_or_are_nan_are_one_line(
    tmp_path: Path, number: str
) -> None:
    log = tmp_path / "server.log"
    log.write_text(f"INFO [kv_cache_utils.py:1087] GPU KV cache size: {number} tokens\n")
    metrics = tmp_path / "metrics.txt"
    metrics.write_text(f"vllm:num_gpu_blocks {number}\n")
    for argv in (
        ["backcalc", QWEN, "--log", str(log)],
        ["backcalc", QWEN, "--log", str(log), "--metrics", str(metrics)],
    ):
        code, _, err, seconds = run(argv)
        assert code in (0, 2) and "Traceback" not in err and "internal" not in err, err
        assert len(err.strip().splitlines()) <= 1 and seconds < FAST


def test_a_60_kb_gpu_link_value_is_refused_before_closest_name_matching() -> None:
    start = time.thread_time()
    parsed = from_query({"gpu": "H" * 60_000})
    assert time.thread_time() - start < FAST
    assert parsed.scenario.gpu == "H200" and "longer than" in english(parsed.notes)[0]
    clean_error(["study", QWEN, "--gpu", "H" * 60_000], "gpu")


def test_a_60_kb_argument_of_any_subcommand_is_refused_at_once() -> None:
    for argv0 in ("study", "plan", "lint", "backcalc", "kernels"):
        clean_error([argv0, "x" * 70_000], "arguments")


# --- the app's link: no traceback, no live Markdown ----------------------------------------------


def test_a_file_link_with_a_300_character_model_falls_back_without_a_server_path() -> None:
    """Before: ``?src=file&model=`` + 252 characters raised ``OSError: File name too long``
    from the catalog lookup while the app read its link (outside any guard)."""
    for model in ("a" * 252, "a/" + "b" * 250, "../../etc/passwd"):
        start = time.thread_time()
        parsed = from_query({"src": "file", "model": model})
        assert time.thread_time() - start < FAST
        assert (
            parsed.scenario.source == "catalog"
            and parsed.scenario.model == "deepseek-ai/DeepSeek-V3"
        )
        assert not any(str(ROOT) in w for w in english(parsed.notes))


@pytest.mark.parametrize(
    "params",
    [
        {"[click](https://evil.example/x)": "1"},
        {"![](https://evil.example/i.png)": "1"},
        {"tp": "[click](https://evil.example/x)"},
        {"gpu": "![](https://evil.example/i.png)"},
        {"model": "<img src=x onerror=alert(1)>"},
        {"src": "hub", "model": "[a](https://evil.example)"},
        {"kv": ":red[alert] $$x$$ `code` **b**"},
        {"x" * 300: "[a](https://evil.example)"},
    ],
)
def test_link_warnings_echo_keys_and_values_without_markdown(params: dict[str, str]) -> None:
    """Before: a crafted link's key or value came back in an ``st.warning`` as a live link or a
    remote image (Markdown)."""
    warnings = english(from_query(params).notes)
    assert warnings
    for w in warnings:
        for active in ("](", "![", "<", "`", "$$", "**", ":red["):
            assert active not in w, w


def test_echo_keeps_plain_names_readable() -> None:
    assert echo("abc") == "'abc'"
    assert echo("H200 SXM/141") == "'H200 SXM/141'"
    assert echo("[a](b)") == "'?a??b?'"
    assert echo("x" * 100).endswith("…'")


@pytest.mark.parametrize("value", ["٣٢", "1_024", "８", "1e3", "0x10", "+8", "-1"])
def test_link_numbers_are_ascii_digits_only(value: str) -> None:
    """Python's int() reads '٣٢' and '1_024'; a link value is digits 0-9 or the default."""
    parsed = from_query({"ctx": value})
    assert parsed.scenario.context == 32_768 and english(parsed.notes)


@pytest.mark.parametrize(
    "value", ["nan", "inf", "1e-400", "1e400", "0x1p-2", "½", "0.9" + "9" * 300]
)
def test_link_memory_fraction_is_a_short_decimal_or_the_default(value: str) -> None:
    parsed = from_query({"mem": value})
    assert parsed.scenario.memory_fraction is None and english(parsed.notes)


# --- info findings -------------------------------------------------------------------------------


def test_a_pasted_config_launches_a_placeholder_path_not_its_display_name() -> None:
    cfg = (ROOT / "data/models/Qwen__Qwen3-8B.json").read_text()
    code, out, err, _ = run(["plan", cfg, "--gpus", "1", "--json"])
    assert code == 0, err
    argv = json.loads(out)["argv"]
    assert "pasted config" not in " ".join(argv) and argv[2].startswith("/")


def test_trust_remote_code_comes_with_a_warning_first_in_every_artefact() -> None:
    cfg = json.loads((ROOT / "data/models/Qwen__Qwen3-8B.json").read_text())
    cfg |= {"architectures": ["SomeUnknownForCausalLM"], "auto_map": {"AutoModel": "m.M"}}
    code, out, err, _ = run(["plan", json.dumps(cfg), "--gpus", "1", "--json"])
    assert code == 0, err
    plan = json.loads(out)
    assert "--trust-remote-code" in plan["argv"]
    assert len(plan["warnings"]) == 1 and "--trust-remote-code" in plan["warnings"][0]
    # the script says it before any flag's reason; the manifest carries it as an annotation
    lines = plan["script"].splitlines()
    first_flag = next(i for i, line in enumerate(lines) if line.startswith("# --"))
    assert any(line.startswith("# WARNING: --trust-remote-code") for line in lines[:first_flag])
    docs = list(yaml.safe_load_all(plan["kubernetes_yaml"]))
    assert plan["warnings"][0] in docs[0]["metadata"]["annotations"].values()
    # a config the engines know needs no remote code and gets no warning
    code, out, _, _ = run(["plan", "Qwen/Qwen3-8B", "--gpus", "1", "--json"])
    assert json.loads(out)["warnings"] == []
