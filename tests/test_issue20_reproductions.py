"""Issue 20's reproductions, each a test (the LeaderWorkerSet placeholders are tested with the
Kubernetes writer), and the bounds that stop uploads from exhausting the server: a config larger
than any real one is refused before parsing, the shared store and the study cache are bounded by
bytes, a session's uploads are counted, and a derived dimension of zero is refused by name."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import InputError
from engine.lint import lint_command
from engine.model import store
from engine.model.config import MAX_CONFIG_BYTES, normalize
from engine.model.loader import LoadedModel, load_catalog, load_model, load_pasted
from tests import gfm, shell_stub
from tests.apptest_util import assert_clean, open_app
from tests.test_text_safety import DOMAIN, RAW_CONTROL, assert_safe_page, live

ROOT = Path(__file__).resolve().parent.parent
QWEN = dict(load_catalog("Qwen/Qwen3-8B").config.raw)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# --- 1. the linter's corrected command arms an inert $(…) ---------------------------------------


def test_1_the_corrected_command_does_not_arm_an_escaped_substitution(tmp_path: Path) -> None:
    box = shell_stub.sandbox(tmp_path)
    text = f'vllm serve Qwen/Qwen3-8B --served-model-name "$NAME\\$(touch {box.marks}/PWNED)"'
    report = lint_command(text)
    assert "$(touch" in report.corrected and '"$NAME$(touch' not in report.corrected
    before = shell_stub.run(box, text)
    after = shell_stub.run(box, report.corrected)
    assert shell_stub.payload_ran(box) == []
    assert after == before


# --- 2. a shared link shows phishing links and fires a tracking image ---------------------------


def _hub_cache(tmp: Path, repo: str, config: dict[str, object]) -> Path:
    sha = "0123456789abcdef0123456789abcdef01234567"
    base = tmp / f"models--{repo.replace('/', '--')}"
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(sha)
    snap = base / "snapshots" / sha
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    return tmp


def test_2_a_hub_config_with_markdown_renders_no_link_or_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub.constants as hf

    links = (
        f"[t][r]\n\n[r]: https://{DOMAIN}/ref <https://{DOMAIN}/a> https://{DOMAIN}/b "
        f"![x](https://{DOMAIN}/pixel.png) [d](data:text/html,x)"
    )
    config = QWEN | {"architectures": [links], "model_type": links}
    config["quantization_config"] = {"quant_method": links}
    monkeypatch.setattr(hf, "HF_HUB_CACHE", str(_hub_cache(tmp_path, "acme/md-model", config)))
    at = open_app(query={"src": "hub", "model": "acme/md-model"})
    for page in ("overview", "family", "software", "flags"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_safe_page(at, page)


def test_2_a_query_value_does_not_echo_as_a_clickable_link() -> None:
    at = open_app(query={"model": f"https://{DOMAIN}/login"})
    assert at.warning
    assert all(live(w.value) == [] for w in at.warning)


# --- 3. uploads exhaust the server --------------------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_3_a_30_mb_upload_is_refused_before_parsing_in_well_under_a_second() -> None:
    data = b'{"pad": "' + b"x" * 30_000_000 + b'"}'
    start = _cpu()
    with pytest.raises(InputError) as err:
        load_model(data, name="big.json")
    assert _cpu() - start < 0.5
    assert err.value.field == "config.json" and f"{MAX_CONFIG_BYTES:,}" in str(err.value)
    with pytest.raises(InputError):
        load_pasted(data.decode())


def test_3_the_3_mb_modelopt_config_still_loads() -> None:
    from tools.nvfp4_config import nvfp4_config_bytes

    data = nvfp4_config_bytes()
    assert 3_000_000 < len(data) < MAX_CONFIG_BYTES
    loaded = load_model(data)
    assert loaded.config.quantization_config is not None


def test_3_the_store_is_bounded_by_bytes_as_well_as_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.budget import BUDGET

    monkeypatch.setattr(BUDGET, "limit", 1024 * 1024)
    # each config holds about 200 KB (a string holds at most 65,536 characters)
    pad = {f"pad{k}": "y" * 50_000 for k in range(4)}
    digests = [
        store.put(LoadedModel(normalize(QWEN | pad | {"n": i}), "upload", f"u{i}.json"))
        for i in range(10)
    ]
    count, held = store.held()
    assert 200_000 < held <= BUDGET.total <= 1024 * 1024
    with pytest.raises(InputError):
        store.get(digests[0])  # the oldest left first
    assert store.get(digests[-1]).name == "u9.json"
    assert count >= 1


def test_3_the_study_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine import study as study_mod
    from engine.budget import BUDGET
    from engine.scenario import make_scenario

    monkeypatch.setattr(BUDGET, "limit", 1_000_000)
    for users in range(1, 12):
        study_mod.study(make_scenario(model="Qwen/Qwen3-8B", users=users))
    count, held = study_mod.cached()
    assert held <= BUDGET.total <= 1_000_000 and 1 <= count < 11


def test_3_a_session_may_load_a_bounded_number_of_configs() -> None:
    from ui.sidebar import MAX_LOADS_PER_SESSION

    at = open_app()
    at.radio(key="w.mode").set_value("paste").run()
    text = json.dumps(QWEN)
    for i in range(MAX_LOADS_PER_SESSION):
        at.text_area(key="w.paste").input(text[:-1] + f', "n": {i}}}').run()
        at.button(key="w.paste_go").click().run()
    assert_clean(at)
    assert not at.error
    at.text_area(key="w.paste").input(text[:-1] + ', "n": -1}').run()
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    assert at.error  # the next one is refused, with a message


def test_3_an_upload_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.model.loader as loader

    calls: list[int] = []
    real = json.loads

    def counting(data: str | bytes, *args: object, **kwargs: object) -> object:
        calls.append(len(data))
        return real(data, *args, **kwargs)  # type: ignore[arg-type]

    at = open_app()
    monkeypatch.setattr(loader.json, "loads", counting)
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(json.dumps(QWEN | {"pad": "z" * 5000})).run()
    at.button(key="w.paste_go").click().run()
    assert_clean(at)
    big = [n for n in calls if n > 5000]
    assert len(big) == 1, calls


# --- 4. terminal escapes pass through -----------------------------------------------------------

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mfake\x1b[0m\x1b]8;;https://evil.example\x07x\x1b]8;;\x07"


@pytest.mark.parametrize("command", ["software", "diagnose", "study", "gates", "plan"])
def test_4_config_strings_reach_the_terminal_without_escapes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    config = QWEN | {"architectures": [ESCAPES + "Qwen3ForCausalLM"], "model_type": ESCAPES}
    assert main([command, json.dumps(config)]) in (0, 2)
    out, err = capsys.readouterr()
    assert not RAW_CONTROL.search(out + err)


def test_4_lint_prints_no_escape(capsys: pytest.CaptureFixture[str]) -> None:
    main(["lint", f"vllm serve Qwen/Qwen3-8B --served-model-name $'{ESCAPES}'"])
    out, _ = capsys.readouterr()
    assert not RAW_CONTROL.search(out)


def test_4_the_markdown_report_keeps_no_escape() -> None:
    from engine.present.study_report import study_markdown
    from engine.scenario import make_scenario
    from engine.study import study

    config = QWEN | {"architectures": [ESCAPES + "Qwen3ForCausalLM"], "model_type": ESCAPES}
    digest = store.put(LoadedModel(normalize(config), "upload", "esc.json"))
    md = study_markdown(study(make_scenario(source="file", model="esc.json", digest=digest)))
    assert not RAW_CONTROL.search(md)


# --- 5. a tiny config crashes Learn -------------------------------------------------------------

TINY = QWEN | {"hidden_size": 8, "num_attention_heads": 32, "num_key_value_heads": 8}
TINY.pop("head_dim", None)


def test_5_a_derived_head_size_of_zero_is_refused_naming_the_field() -> None:
    with pytest.raises(InputError) as err:
        normalize(TINY)
    assert err.value.field == "num_attention_heads" and "head_dim" in str(err.value)


def test_5_the_cli_says_so_in_one_line_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", json.dumps(TINY)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: num_attention_heads:") and len(err.splitlines()) == 1


def test_5_the_learn_page_shows_the_error_not_a_crash() -> None:
    at = open_app()
    at.radio(key="w.mode").set_value("paste").run()
    at.text_area(key="w.paste").input(json.dumps(TINY)).run()
    at.button(key="w.paste_go").click().run()
    for page in ("learn", "kv_cache", "overview"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_clean(at)
        assert any("num_attention_heads" in e.value for e in at.error), page


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"num_key_value_heads": 64}, "num_key_value_heads"),
        ({"num_attention_heads": 32, "num_key_value_heads": 3}, "num_key_value_heads"),
        ({"linear_num_key_heads": 3, "linear_num_value_heads": 8}, "linear_num_key_heads"),
        ({"swa_num_attention_heads": 8, "swa_num_key_value_heads": 3}, "swa_num_key_value_heads"),
    ],
)
def test_5_other_shapes_that_do_not_split_are_refused_by_name(
    changes: dict[str, int], field: str
) -> None:
    with pytest.raises(InputError) as err:
        normalize(QWEN | changes)
    assert err.value.field == field


def test_every_bundled_and_wild_config_still_loads() -> None:
    paths = sorted((ROOT / "data/models").glob("*.json"))
    paths += sorted((ROOT / "tests/fixtures/configs_wild").glob("*.json"))
    for path in paths:
        normalize(json.loads(path.read_text()))


# --- round 2: what the second audit found --------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {"src": "hub", "model": f"https://{DOMAIN}/login"},
        {"model": f"www.{DOMAIN}"},
        {"model": f"pwn@{DOMAIN}"},
        {"model": f"mailto:pwn@{DOMAIN}"},
    ],
)
def test_r2_1_a_link_value_is_no_autolink_once_escapes_are_resolved(query: dict[str, str]) -> None:
    """remark-gfm finds bare URLs, www. and e-mail addresses in the text after backslash
    escapes are resolved: ``https\\://`` was a live link in Chromium."""
    at = open_app(query=query)
    shown = [w.value for w in (*at.warning, *at.error)]
    assert shown
    assert all(gfm.text_links(text) == [] for text in shown), shown


def test_r2_2_a_config_with_a_5000_digit_integer_is_refused_naming_what_was_expected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = json.dumps(QWEN)[:-1] + ', "pad": ' + "9" * 5000 + "}"
    with pytest.raises(InputError) as err:
        load_model(config.encode(), name="config.json")
    assert err.value.field == "config.json" and "4,300 digits" in str(err.value)
    assert main(["diagnose", config]) == 2
    assert capsys.readouterr().err.startswith("error: config.json: integers of at most 4,300")


def test_r2_3_a_config_string_cannot_fake_a_line_of_cli_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake = "Qwen3ForCausalLM\nFAKE LINE\u2028\u202e"
    config = QWEN | {"architectures": [fake], "torch_dtype": "bfloat16\r\nfake"}
    for command in ("software", "diagnose", "study"):
        assert main([command, json.dumps(config)]) == 0
        out = capsys.readouterr().out
        assert "\nFAKE LINE" not in out and "\nfake" not in out, command
        assert "\u2028" not in out and "\u202e" not in out
    assert main(["software", json.dumps(config)]) == 0
    assert "Qwen3ForCausalLM\\nFAKE LINE\\u2028\\u202e" in capsys.readouterr().out


def test_r2_4_a_head_dim_of_zero_is_refused_naming_it() -> None:
    with pytest.raises(InputError) as err:
        normalize(QWEN | {"head_dim": 0})
    assert err.value.field == "head_dim"
