"""The fuzz of the security issue: generated hostile input to every ``python -m engine``
subcommand (study, diagnose, gates, software, plan, lint, backcalc, kernels, called in-process
through ``engine.cli.main``), to the link parser, and to the app's query parameters through
AppTest.

Every case must end in exit code 0, 1 or 2 with no traceback, at most one stderr line on an
error, no ``error: internal`` (the top-level guard catching a bug) and no hang (each case is cut
off by an alarm). Each test writes its counts to ``artifacts/fuzz/<test>.json``: cases, ok,
clean_errors, guarded_errors (one line, but from the top-level guard rather than the code that
read the input), tracebacks, hangs and the slowest case. The examples are derandomized: a run is
repeatable and its time is steady.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cli import main
from engine.scenario import QUERY_KEYS, from_query
from tests.budget import examples
from tests.study_util import english

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "artifacts" / "fuzz"
HANG_S = 10  # an alarm turns a case that runs this long into a failure named "hang"
CATALOG = ["Qwen/Qwen3-8B", "deepseek-ai/DeepSeek-V3", "meta-llama/Meta-Llama-3.1-8B", "Qwen3-8B"]

pytestmark = pytest.mark.timeout(600)


def fuzz_settings(n: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=examples(n),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


# --- values ----------------------------------------------------------------------------------

NUMBERS = [
    "0", "1", "-1", "3", "8", "1024", "65537", str(10**59), "9" * 309, "9" * 5000, "1e308",
    "1e400", "-1e400", "nan", "NaN", "inf", "-inf", "0x10", "1_000", "٣", "８", " 8 ", "",
    "0.5", "0.0000001", "1.0000000001", "2.5", "-0",
]  # fmt: skip
TEXTS = [
    "", " ", "\n", "\r\n", "\x00", "\u2028", "$(touch PWNED)", "`id`", "'", '"', "\\", "--",
    "-h", "--help", "[a](https://evil.example)", "![](https://evil.example/i.png)",
    "../../../../etc/passwd", "/etc/passwd", "/dev/zero", "~", "x" * 300, "é" * 100,
    "H200", "h100 sxm", "RTX 4090", "MI300X", "fp8", "bf16", "auto", "vllm", "sglang",
    "org/name", "a/b/c", "Qwen/Qwen3-8B", "{", "{}", "[]", "null", "{\"a\": 1}",
]  # fmt: skip
VALID = ["1", "2", "4", "8", "16", "32768", "131072", "0.9", "H200", "H100", "B200", "fp8", "auto"]
value = st.one_of(
    st.sampled_from(VALID),
    st.sampled_from(NUMBERS),
    st.sampled_from(TEXTS),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=20),
)

# Config fields the rules read, and what a hostile config.json puts there.
FIELDS = [
    "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "vocab_size", "max_position_embeddings", "sliding_window",
    "kv_lora_rank", "qk_rope_head_dim", "num_experts", "n_routed_experts", "num_experts_per_tok",
    "moe_intermediate_size", "architectures", "model_type", "torch_dtype", "dtype",
    "quantization_config", "text_config", "vision_config", "layer_types", "rope_scaling",
    "auto_map", "num_nextn_predict_layers", "first_k_dense_replace", "linear_num_key_heads",
    "tie_word_embeddings", "compress_ratios", "mlp_only_layers",
]  # fmt: skip
json_value: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([1e308, -1e308, 5e-324, 10**400, 0, -1, 2**31, 2**63]),
        st.text(max_size=12),
        st.sampled_from(TEXTS),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=4)
    ),
    max_leaves=12,
)
BASES = {
    name: json.loads((ROOT / "data/models" / f"{name.replace('/', '__')}.json").read_text())
    for name in ("Qwen/Qwen3-8B", "deepseek-ai/DeepSeek-V3")
}


@st.composite
def hostile_config(draw: st.DrawFn) -> str:
    """A real config.json with a few fields replaced or removed (JSON text: what a paste,
    an upload or ``SOURCE`` carries)."""
    cfg = dict(BASES[draw(st.sampled_from(sorted(BASES)))])
    for field in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3)):
        if draw(st.booleans()):
            cfg[field] = draw(json_value)
        else:
            cfg.pop(field, None)
    text = json.dumps(cfg, allow_nan=True)
    return text if draw(st.integers(0, 9)) else text.replace("1e+308", "1e999")


# --- files a path argument can name ----------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("fuzz")
    out: dict[str, str] = {}

    def put(name: str, data: bytes) -> None:
        (d / name).write_bytes(data)
        out[name] = str(d / name)

    put("config.json", (ROOT / "data/models/Qwen__Qwen3-8B.json").read_bytes())
    put("non_utf8.json", b"\xff\xfe{\x00")
    put("nested.json", b"[" * 100_000)
    put("empty.json", b"")
    put("huge_number.json", b'{"hidden_size": 1' + b"0" * 5000 + b"}")
    put("vllm.log", b"INFO [kv_cache_utils.py:1087] GPU KV cache size: 34,952 tokens\n")
    put("nan.log", b"INFO [kv_cache_utils.py:1087] GPU KV cache size: nan tokens\n")
    put("overflow.log", b"GPU KV cache size: 1" + b"0" * 400 + b" tokens\n")
    put("args.log", b"non-default args: {" + b"'a': 1, " * 3000 + b"\n")
    put("sglang.log", b"KV Cache is allocated. #tokens: 370000, K size: 1e999 GB, V size: 2 GB\n")
    put("metrics.txt", b"vllm:num_gpu_blocks nan\nvllm:kv_cache_usage_perc 1e999\n")
    os.mkfifo(d / "fifo")
    out["fifo"] = str(d / "fifo")
    (d / "dir").mkdir()
    out["dir"] = str(d / "dir")
    out["missing"] = str(d / "missing.json")
    out["dev_zero"] = "/dev/zero"
    out["long"] = str(d / ("x" * 300))
    return out


# --- running a case --------------------------------------------------------------------------


class Hang(Exception):
    pass


@contextlib.contextmanager
def alarm(seconds: int) -> Iterator[None]:
    def ring(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Tally:
    """Counts of outcomes for one fuzz test, written to artifacts/fuzz/<name>.json."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.counts: Counter[str] = Counter()
        self.slowest = 0.0
        self.slowest_case = ""

    def timed(self, seconds: float, case: object) -> None:
        if seconds > self.slowest:
            self.slowest, self.slowest_case = seconds, repr(case)[:300]

    def save(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        data = {
            "cases": sum(self.counts.values()),
            **self.counts,
            "slowest_s": round(self.slowest, 3),
            "slowest_case": self.slowest_case,
        }
        (ARTIFACTS / f"{self.name}.json").write_text(json.dumps(data, indent=1) + "\n")


@pytest.fixture
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    t = Tally(request.node.name)
    yield t
    t.save()


def run_cli(argv: list[str], tally: Tally) -> None:
    """One case: ``python -m engine ARGV`` in-process, judged and counted."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    try:
        with alarm(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except Hang:
        tally.counts["hangs"] += 1
        raise AssertionError(f"hang: {argv!r}"[:2000]) from None
    except BaseException:
        tally.counts["tracebacks"] += 1
        raise
    tally.timed(time.perf_counter() - start, argv)
    text = err.getvalue()
    if "Traceback" in text or "error: internal" in text:
        tally.counts["tracebacks"] += 1
    elif code == 2 and len(text.strip().splitlines()) > 1:
        tally.counts["multi_line_errors"] += 1
    assert code in (0, 1, 2), (code, argv)
    assert "Traceback" not in text and "error: internal" not in text, (text[:500], argv)
    if code == 2:
        assert len(text.strip().splitlines()) == 1 and text.startswith("error: "), text[:500]
        # "error: input: <Type> while reading": the top-level guard, not the code that read it
        tally.counts["guarded_errors" if text.startswith("error: input: ") else "clean_errors"] += 1
    else:
        tally.counts["ok"] += 1


# --- scenario subcommands --------------------------------------------------------------------

SCENARIO_FLAGS = [
    "--gpu", "--gpus", "--nodes", "--engine", "--context", "--users", "--prefix-overlap",
    "--latency-priority", "--kv-dtype", "--memory-fraction", "--tp", "--dp", "--pp",
    "--replicas",
]  # fmt: skip
SWITCHES = ["--images", "--ep", "--no-ep", "--json", "--bogus", "-h"]


@st.composite
def source(draw: st.DrawFn, files: dict[str, str]) -> str:
    kind = draw(st.integers(0, 9))
    if kind <= 3:
        return draw(st.sampled_from(CATALOG))
    if kind <= 6:
        return draw(hostile_config())
    if kind == 7:
        return draw(st.sampled_from(sorted(files.values())))
    return draw(value)


@st.composite
def scenario_argv(draw: st.DrawFn, command: str, files: dict[str, str]) -> list[str]:
    argv = [command, draw(source(files))]
    for flag in draw(st.lists(st.sampled_from(SCENARIO_FLAGS), max_size=3, unique=True)):
        argv.append(f"{flag}={draw(value)}")
    argv += draw(st.lists(st.sampled_from(SWITCHES[:4]), max_size=1))
    if not draw(st.integers(0, 9)):
        argv.append(draw(st.sampled_from(SWITCHES[4:])))
    return argv


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id is a lookup in the local cache only


@pytest.mark.parametrize("command", ["study", "diagnose", "gates", "software", "plan"])
def test_fuzz_scenario_subcommands(command: str, files: dict[str, str], tally: Tally) -> None:
    @fuzz_settings(200)
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        run_cli(data.draw(scenario_argv(command, files)), tally)

    case()


# --- lint --------------------------------------------------------------------------------------

LINT_TEMPLATES = [
    "vllm serve {m} --tensor-parallel-size {v}",
    "vllm serve {m} --gpu-memory-utilization {v} --max-model-len {v}",
    "python3 -m sglang.launch_server --model-path {m} --tp {v} --mem-fraction-static {v}",
    "python -m vllm.entrypoints.openai.api_server --model {m} --{v} {v}",
    "sh -c 'vllm serve {m} --kv-cache-dtype {v}'",
    'bash -c "exec vllm serve {m} --max-num-seqs {v}"',
    "command: [vllm, serve, {m}]\nargs: ['--tensor-parallel-size', '{v}']",
    "containers:\n- command: [python3, -m, sglang.launch_server]\n  args: [--tp-size, '{v}']",
    "{v}",
    "vllm serve {m} {v} {v} {v}",
]


@st.composite
def lint_text(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        depth = draw(st.integers(1, 1500))
        return "sh -c " * depth + "'vllm serve org/m'"
    if kind == 1:
        n = draw(st.integers(1, 9))
        return "a: &a [x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * n)}]\n"
            for i in range(draw(st.integers(1, 6)))
        )
    if kind == 2:
        return draw(st.text(max_size=200))
    template = draw(st.sampled_from(LINT_TEMPLATES))
    return template.replace(
        "{m}", draw(st.sampled_from([*CATALOG, "org/x", "''", "$(id)"]))
    ).replace("{v}", draw(value))


@fuzz_settings(400)
@given(data=st.data())
def test_fuzz_lint(data: st.DataObject, files: dict[str, str], tally: Tally) -> None:
    argv = ["lint", data.draw(lint_text())]
    if data.draw(st.booleans()):
        argv += ["--model", data.draw(source(files))]
    if data.draw(st.booleans()):
        argv += [f"--gpu={data.draw(value)}"]
    if data.draw(st.booleans()):
        argv += [f"--gpus={data.draw(value)}"]
    if data.draw(st.booleans()):
        argv.append("--json")
    run_cli(argv, tally)


# --- backcalc ----------------------------------------------------------------------------------

GOOD_LOG = (
    "INFO [utils.py:253] non-default args: {'max_model_len': 8192}\n"
    "INFO [gpu_worker.py:298] Available KV cache memory: 4.27 GiB\n"
    "INFO [kv_cache_utils.py:1087] GPU KV cache size: 34,952 tokens\n"
)
LOG_LINES = [
    GOOD_LOG,
    "INFO [kv_cache_utils.py:1087] GPU KV cache size: {v} tokens",
    "INFO [gpu_worker.py:298] Available KV cache memory: {v} GiB",
    "INFO [kv_cache_utils.py:1091] Maximum concurrency for {v} tokens per request: {v}x",
    "INFO [utils.py:253] non-default args: {{'max_model_len': {v}, 'tensor_parallel_size': {v}}}",
    "[TP0] KV Cache is allocated. #tokens: {v}, K size: {v} GB, V size: {v} GB",
    "[TP0] max_total_num_tokens={v}, chunked_prefill_size={v}, context_len={v}",
    "vllm:num_gpu_blocks {v}",
    'vllm:cache_config_info{{block_size="{v}",num_gpu_blocks="{v}"}} 1.0',
    "sglang:max_total_num_tokens {v}",
    "non-default args: {{" + "'a': 1, " * 100,
]


@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_backcalc(
    data: st.DataObject, files: dict[str, str], tally: Tally, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    lines = data.draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=5))
    log.write_text("\n".join(ln.replace("{v}", data.draw(value)) for ln in lines) + "\n")
    log_path = data.draw(st.sampled_from([str(log)] * 6 + sorted(files.values())))
    model = data.draw(st.one_of(st.sampled_from(CATALOG[:3]), source(files)))
    argv = ["backcalc", model, "--log", log_path]
    if data.draw(st.booleans()):
        argv += ["--metrics", data.draw(st.sampled_from([str(log), *sorted(files.values())]))]
    if data.draw(st.booleans()):
        argv.append(f"--tp={data.draw(value)}")
    if data.draw(st.booleans()):
        argv.append("--json")
    run_cli(argv, tally)


# --- kernels (argument handling only: a valid run would time the micro-kernels) ------------------


@fuzz_settings(80)
@given(data=st.data())
def test_fuzz_kernels_arguments(data: st.DataObject, files: dict[str, str], tally: Tally) -> None:
    import engine.measure.kernels.__main__  # noqa: F401  # torch's import is not a case's time

    dims = data.draw(
        st.one_of(
            st.sampled_from(sorted(files.values())),
            json_value.map(json.dumps),
            st.builds(lambda v: json.dumps({"preset": v}), value),
            st.sampled_from(['{"a":' * 5000, "[" * 5000, "{}", "{"]),
        )
    )
    argv = ["kernels", "--model-dims", dims, "--only", data.draw(value) + "-no-such-check"]
    for flag in data.draw(
        st.lists(st.sampled_from(["--device", "--concurrency", "--context", "--preset"]))
    ):
        argv.append(f"{flag}={data.draw(value)}")
    run_cli(argv, tally)


# --- the link parser and the app's query parameters ----------------------------------------------

query_key = st.one_of(st.sampled_from([*QUERY_KEYS, "hub", "lang", "page"]), st.text(max_size=12))
query_value = st.one_of(
    value, st.sampled_from(CATALOG), st.sampled_from(["file", "upload", "paste", "hub", "catalog"])
)
queries = st.dictionaries(query_key, st.one_of(query_value, st.lists(query_value, max_size=3)))


@fuzz_settings(500)
@given(params=queries)
def test_fuzz_link_parser(params: dict[str, Any], tally: Tally) -> None:
    start = time.perf_counter()
    with alarm(HANG_S):
        parsed = from_query(params)
    tally.timed(time.perf_counter() - start, params)
    assert parsed.scenario is not None
    for w in english(parsed.notes):
        assert "](" not in w and "![" not in w and "\n" not in w
    tally.counts["ok" if not english(parsed.notes) else "clean_errors"] += 1


@fuzz_settings(100)
@given(params=st.dictionaries(query_key, query_value, max_size=4))
def test_fuzz_app_query_parameters(params: dict[str, str], tally: Tally) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=HANG_S)
    at.query_params.update(params)
    start = time.perf_counter()
    try:
        at.run()
    except RuntimeError:  # AppTest's own timeout
        tally.counts["hangs"] += 1
        raise
    tally.timed(time.perf_counter() - start, params)
    if at.exception:
        tally.counts["tracebacks"] += 1
    assert not at.exception, [e.value for e in at.exception]
    shown = [str(e.value) for kind in ("warning", "error") for e in getattr(at, kind)]
    assert not any("Something went wrong" in t for t in shown), shown
    tally.counts["clean_errors" if shown else "ok"] += 1


# --- the issue's own cases, always among the fuzz cases ------------------------------------------

ISSUE_CASES = [
    ["diagnose", "Qwen/Qwen3-8B", "--tp", str(10**59)],
    ["diagnose", "Qwen/Qwen3-8B", "--gpus", "4", "--tp", "3"],
    ["study", "x" * 300],
    ["plan", "org/" + "x" * 300],
    ["lint", "sh -c " * 1100 + "'vllm serve org/m'"],
    ["lint", "vllm serve org/m --tensor-parallel-size " + "9" * 309],
    ["backcalc", "Qwen/Qwen3-8B", "--log", "/dev/zero"],
    ["kernels", "--model-dims", "/dev/zero"],
    ["kernels", "--model-dims", "[" * 100_000],
    ["study", "Qwen/Qwen3-8B", "--gpu", "H" * 60_000],
    ["plan", json.dumps(BASES["Qwen/Qwen3-8B"] | {"vision_config": {"hidden_size": 1e308}})],
    ["plan", json.dumps(BASES["Qwen/Qwen3-8B"] | {"vision_config": {"depth": "many"}})],
]


def test_fuzz_issue_cases(tally: Tally) -> None:
    import engine.measure.kernels.__main__  # noqa: F401  # torch's import is not a case's time

    for argv in ISSUE_CASES:
        run_cli(argv, tally)


# --- every parser boundary: what Python's parsers raise besides a syntax error ------------------
# json.loads raises ValueError for an integer over 4,300 digits and RecursionError for deep
# nesting; it reads NaN, Infinity and 1e400 (inf), \u0000 and lone surrogate escapes, a BOM
# before bytes, and keeps the last of duplicate keys. Each case, as a file, as JSON text on the
# command line and as an upload (``load_model`` on bytes, what the sidebar calls), must load or
# be refused by an InputError naming the field: never another exception, never the CLI's guard.

QWEN_TEXT = (ROOT / "data/models/Qwen__Qwen3-8B.json").read_text()
QWEN_BYTES = QWEN_TEXT.encode()


def with_field(key: str, raw: str | bytes) -> bytes:
    """Qwen3-8B's config.json with ``"key": raw`` (raw JSON bytes) added or replacing the key."""
    cfg = json.loads(QWEN_TEXT)
    cfg.pop(key, None)
    head = (json.dumps(cfg)[:-1] + f", {json.dumps(key)}: ").encode()
    return head + (raw.encode() if isinstance(raw, str) else raw) + b"}"


LONG = json.dumps("x" * 70_000)
# case -> (bytes, the field the refusal names, or None: the config loads)
BOUNDARY: dict[str, tuple[bytes, str | None]] = {
    "an integer of 5,000 digits": (with_field("pad", "9" * 5000), "config.json"),
    "hidden_size of 5,000 digits": (with_field("hidden_size", "9" * 5000), "config.json"),
    "hidden_size of 4,300 digits": (with_field("hidden_size", "9" * 4300), "hidden_size"),
    "100,000 levels of nesting": (with_field("pad", "[" * 100_000 + "]" * 100_000), "config.json"),
    "65 levels of nesting": (with_field("pad", '{"a":' * 65 + "1" + "}" * 65), "pad" + ".a" * 63),
    "hidden_size 1e400 (inf)": (with_field("hidden_size", "1e400"), "hidden_size"),
    "hidden_size -Infinity": (with_field("hidden_size", "-Infinity"), "hidden_size"),
    "rope_theta NaN": (with_field("rope_theta", "NaN"), "rope_theta"),
    "context 1e308": (with_field("max_position_embeddings", "1e308"), "max_position_embeddings"),
    "num_attention_heads 0.5": (with_field("num_attention_heads", "0.5"), "num_attention_heads"),
    "head_dim 0": (with_field("head_dim", "0"), "head_dim"),
    "head_dim false": (with_field("head_dim", "false"), "head_dim"),
    "vocab_size 0": (with_field("vocab_size", "0"), "vocab_size"),
    "a NUL byte after the object": (QWEN_BYTES + b"\x00", "config.json"),
    "a raw NUL inside a string": (with_field("model_type", b'"a\x00b"'), "config.json"),
    "a \\u0000 escape in model_type": (with_field("model_type", '"qwen3\\u0000x"'), None),
    "bytes that are not UTF-8": (with_field("model_type", b'"a\xffb"'), "config.json"),
    "a surrogate written as UTF-8": (with_field("model_type", b'"\xed\xa0\x80"'), "model_type"),
    "a lone surrogate escape": (with_field("model_type", '"\\ud800"'), "model_type"),
    "a lone surrogate escape in a key": (with_field("pad", '{"\\udfff": 1}'), "pad.\\udfff"),
    "a UTF-8 byte-order mark": (b"\xef\xbb\xbf" + QWEN_BYTES, None),
    "UTF-16 with its byte-order mark": (QWEN_TEXT.encode("utf-16"), None),
    "duplicate keys, the last valid": (with_field("model_type", '"x", "model_type": "qwen"'), None),
    "duplicate keys, the last 0": (with_field("hidden_size", '1, "hidden_size": 0'), "hidden_size"),
    "a string of 70,000 characters": (with_field("model_type", LONG), "model_type"),
    "a key of 70,000 characters": (with_field("x" * 70_000, "1"), "x" * 63 + "…"),
    "9 MiB": (with_field("pad", json.dumps("y" * (9 << 20))), "config.json"),
    "empty": (b"", "config.json"),
    "whitespace": (b" \n\t ", "config.json"),
    "a list": (b"[]", "config.json"),
    "null": (b"null", "config.json"),
    "a number": (b"1e400", "config.json"),
}  # fmt: skip


def _outcome(data: bytes) -> str | None:
    """``None`` when the upload loads, else the field its InputError names."""
    from engine.errors import InputError
    from engine.model.loader import load_model

    try:
        with alarm(HANG_S):
            load_model(data, name="config.json")
    except InputError as err:
        return err.field
    return None


@pytest.mark.parametrize("case", sorted(BOUNDARY))
def test_an_upload_at_a_parser_boundary_loads_or_is_refused_naming_the_field(case: str) -> None:
    data, field = BOUNDARY[case]
    assert _outcome(data) == field


@pytest.mark.parametrize("case", sorted(BOUNDARY))
def test_the_cli_reads_a_parser_boundary_file_in_one_line_without_its_guard(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, field = BOUNDARY[case]
    path = tmp_path / "config.json"
    path.write_bytes(data)
    sources = [str(path)]
    text = data.decode("utf-8", "replace").lstrip("\ufeff")
    if text.startswith("{") and len(text) <= 65_536 and "\ufffd" not in text:
        sources.append(text)  # the same JSON text as an argument, where one can hold it
    for source in sources:
        with alarm(HANG_S):
            code = main(["diagnose", source])
        err = capsys.readouterr().err
        if field is None:
            assert code == 0, err
        else:
            assert code == 2 and len(err.splitlines()) == 1, err
            assert err.startswith(f"error: {field}: "), err  # named, not the CLI's guard


def test_command_line_bytes_that_are_not_utf_8_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    not_utf8 = b"vllm serve m --served-model-name \xff\xfe".decode("utf-8", "surrogateescape")
    for argv in (["lint", not_utf8], ["study", "Qwen/Qwen3-8B", "--gpu", "H200\udcff"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == "error: arguments: UTF-8 text (an argument holds bytes that are not UTF-8)\n"


@pytest.mark.parametrize(
    "command",
    [
        "vllm serve m --tensor-parallel-size " + "9" * 5000,
        "vllm serve m --max-model-len " + "9" * 5000 + " --gpu-memory-utilization 1e400",
        "vllm serve m --gpu-memory-utilization nan --max-num-seqs -Infinity",
        'vllm serve m --hf-overrides \'{"a": ' + "9" * 5000 + "}'",
        "vllm serve m --compilation-config '" + '{"a":' * 3000 + "1" + "}" * 3000 + "'",
        "vllm serve m --served-model-name 'a\x00b'",
        "\ufeffvllm serve m",
        "args: [" * 5000,
    ],
)
def test_lint_reads_hostile_numbers_and_json_in_one_line(command: str, tally: Tally) -> None:
    run_cli(["lint", command], tally)
    assert tally.counts["guarded_errors"] == 0
