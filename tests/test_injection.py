"""Generated text treats every string from a user or a config as data (the security issue's
property test).

Hostile strings (line breaks of every kind, quotes, ``$()``, backticks, ``---`` YAML document
markers, YAML flow syntax, Markdown links and images) go into the config's string fields and
the uploaded file's name, through the real pipeline: ``store.put`` -> ``Scenario(source="file")``
-> ``study()`` -> the script, ``docker run``, the Kubernetes YAML and the JSON report. Then:

* ``bash -n`` accepts the script, and bash's own parser (``declare -f`` prints a function body
  parsed, comments dropped) sees exactly the commands the plan intends, each argv word for word;
* ``yaml.safe_load_all`` returns exactly the intended documents, the container argv word for
  word;
* the JSON report round-trips and carries the hostile text unchanged as a value.

bash only defines a function here, never calls it. It still runs as a restricted shell with an
empty PATH in a scratch folder, and the payloads only ``touch`` a marker, so even a regression
cannot do harm.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InputError
from engine.launch.plan import LEADER, LaunchPlan
from engine.model import store
from engine.model.config import normalize
from engine.model.loader import HF_ID, LoadedModel, load_catalog
from engine.present import k8s, render
from engine.present.study_report import plan_json, study_json
from engine.scenario import Scenario, make_scenario
from engine.study import Study, study
from tests.budget import examples

PAYLOADS = [
    "\ntouch PWNED\n#",
    "\rtouch PWNED\r",
    "\r\ntouch PWNED",
    "\u2028touch PWNED\u2029",
    "\u0085touch PWNED",
    "\x0btouch PWNED\x0c",
    "\x00",
    "$(touch PWNED)",
    "`touch PWNED`",
    "'; touch PWNED; '",
    '"; touch PWNED; "',
    "\\",
    "${IFS}",
    "\n}\ntouch PWNED\n__x() {\n",
    "\n---\n{apiVersion: v1, kind: Pod, metadata: {name: pwned}, spec: {hostPID: true}}\n",
    "\n...\n--- !!python/object:os.system ['touch PWNED']\n",
    "&anchor *anchor ",
    "key: value\n- item\n",
    "[text](https://evil.example/x)",
    "![](https://evil.example/i.png)",
    "<img src=x onerror=alert(1)>",
    "# heading\n",
    ":red[alert]",
    "$$x$$",
]
hostile = st.lists(
    st.one_of(st.sampled_from(PAYLOADS), st.text(max_size=6)), min_size=1, max_size=4
).map("".join)

BASH = shutil.which("bash") or "/bin/bash"


def _base(name: str) -> dict[str, Any]:
    return dict(load_catalog(name).config.raw)


# (catalog config the hostile one is made from, scenario fields): one server on one GPU,
# data-parallel copies on one node, two servers sharing a node (CUDA_VISIBLE_DEVICES), a copy
# spanning two nodes (a case statement per node; a LeaderWorkerSet).
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("Qwen/Qwen3-8B", {"gpus_per_node": 1}),
    ("Qwen/Qwen3-8B", {"gpus_per_node": 8}),
    ("Qwen/Qwen3-8B", {"gpus_per_node": 8, "tp": 4, "replicas": 2, "engine": "sglang"}),
    ("deepseek-ai/DeepSeek-V3", {"gpu": "H100", "gpus_per_node": 8, "nodes": 2}),
]


def hostile_study(shape: int, strings: list[str], name: str) -> Study:
    base, fields = SHAPES[shape]
    cfg = _base(base)
    cfg["architectures"] = [strings[0], strings[1]]
    cfg["model_type"] = strings[2]
    cfg["hidden_act"] = strings[3]
    cfg["auto_map"] = {"AutoModelForCausalLM": strings[4]}  # asks for --trust-remote-code
    cfg["_name_or_path"] = strings[5]
    cfg[strings[6] or "x"] = strings[7]  # an unknown key and value, kept in raw
    loaded = LoadedModel(normalize(cfg), "json", name)
    digest = store.put(loaded)
    return study(make_scenario(source="file", model="upload", digest=digest, **fields))


# --- what bash sees ------------------------------------------------------------------------------

STRUCTURE = ("{", "}", ";;", "esac", "*)")


def bash_commands(text: str, tmp: Path) -> list[list[str]]:
    """The simple commands bash parses out of ``text`` (a script body), as word lists: bash
    prints the body of a function it defined, comments gone, one command per line."""
    body = text.split("\n", 1)[1] if text.startswith("#!") else text
    checked = subprocess.run(
        [BASH, "-n"], input=text, capture_output=True, text=True, timeout=10, check=False
    )
    assert checked.returncode == 0, checked.stderr
    shown = subprocess.run(
        [BASH, "--norc", "--noprofile", "-r", "-c", f"__pb() {{\n{body}\n}}\ndeclare -f __pb"],
        capture_output=True,
        text=True,
        timeout=10,
        cwd=tmp,
        env={"PATH": ""},
        check=False,
    )
    assert shown.returncode == 0 and not shown.stderr, shown.stderr
    assert not any(tmp.iterdir()), "defining the function ran a command"
    out: list[list[str]] = []
    for raw in shown.stdout.splitlines()[1:]:  # the first line is "__pb ()"
        line = raw.strip()
        if line not in STRUCTURE:
            line = line.removesuffix(";").strip()
        if not line or line in STRUCTURE or line.startswith("case ") or line[:-1].isdigit():
            continue
        out.append(shlex.split(line))
    return out


def intended_script_commands(plan: LaunchPlan) -> list[list[str]]:
    """The commands ``render.script`` means to write, from the plan's own fields."""
    out: list[list[str]] = [["set", "-euo", "pipefail"]]
    if any(e.value == "${IFACE_NAME}" for e in plan.env):
        out.append([":", "${IFACE_NAME:?set IFACE_NAME to the network interface that reaches "
                    "the other nodes}"])  # fmt: skip
    out += [["export", f"{e.name}={e.value}"] for e in plan.env]
    multi = any(c.role != "server" for c in plan.commands)
    if multi:
        out.append([":", "${LEADER_ADDR:?set LEADER_ADDR to the address of node 0}"])
    if len(plan.commands) == 1:
        return [*out, list(plan.commands[0].argv)]
    out.append(["NODE=${1:?pass the node number (0 for the first node)}"])
    nodes = sorted({c.node for c in plan.commands})
    for node in nodes:
        commands = [c for c in plan.commands if c.node == node]
        for c in commands:
            prefix = []
            if c.devices is not None:
                prefix = ["CUDA_VISIBLE_DEVICES=" + ",".join(str(d) for d in c.devices)]
            out.append(prefix + list(c.argv) + (["&"] if len(commands) > 1 else []))
        if len(commands) > 1:
            out.append(["wait"])
    out += [["echo", "unknown node: $NODE", "1>&2"], ["exit", "2"]]
    return out


def check_script(plan: LaunchPlan, tmp: Path) -> None:
    assert bash_commands(render.script(plan), tmp) == intended_script_commands(plan)


def check_shell_and_docker(plan: LaunchPlan, tmp: Path) -> None:
    assert bash_commands(render.shell(plan), tmp) == [list(plan.commands[0].argv)]
    for c in plan.commands:
        (words,) = bash_commands(render.docker(plan, c), tmp)
        image = words.index(plan.image)
        assert words[:2] == ["docker", "run"]
        assert words[image + 1 :] == render.container_args(plan, c)


def check_yaml(plan: LaunchPlan, tmp: Path) -> None:
    name = k8s.manifest_name(plan.model_name)
    docs = list(yaml.safe_load_all(k8s.kubernetes_yaml(plan, name)))
    multi = plan.nodes_per_copy > 1
    kinds = ["LeaderWorkerSet" if multi else "Deployment", "Service"]
    kinds += ["ConfigMap"] if plan.servers > 1 else []
    assert [d["kind"] for d in docs] == kinds
    assert all(d["metadata"]["name"].startswith(name) for d in docs)
    if not multi:
        (c,) = docs[0]["spec"]["template"]["spec"]["containers"]
        assert c["command"] + c["args"] == list(plan.commands[0].argv)
        return
    tpl = docs[0]["spec"]["leaderWorkerTemplate"]
    for key, role in (("leaderTemplate", "leader"), ("workerTemplate", "worker")):
        (c,) = tpl[key]["spec"]["containers"]
        assert c["command"] == ["/bin/sh", "-c"]
        (words,) = bash_commands(c["args"][0], tmp)
        argv = next(x for x in plan.commands if x.role == role).argv
        assert words[0] == "exec" and len(words) == len(argv) + 1
        fixed = [
            a
            for a, b in zip(words[1:], argv, strict=True)
            if a != b and LEADER not in b and not a.startswith("$")
        ]
        assert fixed == []


def check_json(st_: Study) -> None:
    report = study_json(st_)
    text = json.dumps(report, ensure_ascii=False)
    assert json.loads(text) == report
    # The file's name is a value, whole (the store keys a config by its bytes, so the name
    # is the one last uploaded with these bytes).
    assert report["model"]["name"] == st_.model.name
    for view in st_.engines.values():
        if view.plan is not None:
            p = plan_json(view.plan)
            assert json.loads(json.dumps(p)) == p


@pytest.mark.parametrize("shape", range(len(SHAPES)))
@settings(
    max_examples=examples(60),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(strings=st.lists(hostile, min_size=8, max_size=8), name=hostile)
def test_hostile_config_strings_stay_data_in_every_artefact(
    shape: int, strings: list[str], name: str, tmp_path: Path
) -> None:
    scratch = tmp_path / "run"
    scratch.mkdir(exist_ok=True)
    try:
        st_ = hostile_study(shape, strings, name)
    except InputError:
        return  # refused at the boundary with a named field: nothing was generated
    for view in st_.engines.values():
        if view.plan is None:
            continue
        check_script(view.plan, scratch)
        check_shell_and_docker(view.plan, scratch)
        check_yaml(view.plan, scratch)
    check_json(st_)


def test_the_issue_examples_stay_in_comments(tmp_path: Path) -> None:
    """The reported cases: a newline in ``architectures`` and in the file name, and a YAML
    document marker with a privileged Pod in the name."""
    pod = "\n---\n{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {hostPID: true}}\n"
    strings = ["X\ntouch PWNED\n#", "Y", "m\ntouch PWNED", "silu", "a.B", "n", "k", "v"]
    st_ = hostile_study(3, strings, "model\ntouch PWNED\n#" + pod)
    for view in st_.engines.values():
        assert view.plan is not None
        script = render.script(view.plan)
        assert not [ln for ln in script.splitlines() if ln.strip().startswith("touch")]
        check_script(view.plan, tmp_path)
        check_yaml(view.plan, tmp_path)
        assert "Pod" not in [d["kind"] for d in yaml.safe_load_all(k8s.kubernetes_yaml(
            view.plan, k8s.manifest_name(view.plan.model_name)))]  # fmt: skip


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(text=hostile)
def test_hostile_names_never_reach_a_command_line(text: str) -> None:
    """A hub id, a catalog name or a GPU name with hostile text is refused by the Scenario
    (so it can never be an argv word), and a manifest name is always a DNS label."""
    for fields in ({"source": "hub", "model": text}, {"model": text}, {"gpu": text}):
        try:
            s = make_scenario(**fields)
        except InputError:
            continue
        assert isinstance(s, Scenario)
        assert HF_ID.match(s.model) and s.gpu.isprintable()
    assert k8s._DNS_LABEL.match(k8s.manifest_name(text))
    assert "\n" not in render.comment(text) and render.comment(text).startswith("# ")


def test_comment_folds_every_line_break_bash_yaml_or_markdown_knows() -> None:
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    assert render.one_line("a" + breaks + "b") == "a b"
    assert len(render.comment("x" + breaks + "touch PWNED").splitlines()) == 1
