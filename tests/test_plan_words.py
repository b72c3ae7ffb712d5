"""The launch plan and its formulas speak the reader's language: every warning and note is a
decision, every recipe reason and known issue is worded in both catalogs, and the Korean report
and launch script carry no English sentence outside names, flags, code and citations."""

from __future__ import annotations

import re

import pytest
import yaml
from apptest_util import open_app

from engine.decision import Decision
from engine.i18n import catalog
from engine.launch.known_issues import known_issues, symptom
from engine.launch.plan import LaunchPlan
from engine.present.artifacts import docker_script, launch_artifacts
from engine.present.render import one_line, script
from engine.present.study_report import plan_json, study_markdown
from engine.rules import DATA_DIR
from engine.scenario import make_scenario
from engine.study import Study, study
from engine.text.words import say
from tools.lang_check import check
from tools.lang_names import catalog_words

# the browser test's scenarios, and a model whose weights are 13 × one GPU
CASES = {
    "default": {},
    "blocked": {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "RTX 4090", "gpus_per_node": 8},
    "dense": {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "A100 80GB",
        "gpus_per_node": 4,
        "users": 32,
    },
    "too big": {"model": "moonshotai/Kimi-K2-Instruct", "gpu": "H100", "gpus_per_node": 1},
}


def _study(case: str) -> Study:
    return study(make_scenario(**CASES[case]))


def _plans(st: Study) -> list[LaunchPlan]:
    return [v.plan for v in st.engines.values() if v.plan is not None]


def _prose(markdown: str) -> list[str]:
    """The Markdown's lines a reader reads as text: fences, code spans and table pipes out."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines += re.sub(r"`[^`]*`", " ", line).split("|")
    return lines


def test_known_issue_symptoms_in_english_are_the_datas_own() -> None:
    en = catalog("en")
    for issue in known_issues():
        assert en["code." + symptom(issue).code] == issue.symptom, issue.id


def test_every_recipe_reason_id_is_worded_in_both_languages() -> None:
    data = yaml.safe_load((DATA_DIR / "recipes.yaml").read_text(encoding="utf-8"))
    ids = [v["reason"] for row in data["env"] for v in row["vars"]]
    ids += [f["reason"] for row in data["base_flags"] for f in row["flags"]]
    assert len(ids) > 40
    for lang in ("en", "ko"):
        words = catalog(lang)
        assert all(f"code.recipe.note.{i}" in words for i in ids), lang


@pytest.mark.parametrize("case", list(CASES))
def test_warnings_and_notes_are_decisions_with_codes_in_the_json(case: str) -> None:
    for plan in _plans(_study(case)):
        assert all(isinstance(d, Decision) for d in (*plan.warned, *plan.noted))
        out = plan_json(plan)
        assert out["warnings"] == [say(w) for w in plan.warned]
        assert out["notes"] == [say(n) for n in plan.noted]
        assert [c["code"] for c in out["note_codes"]] == [n.code for n in plan.noted]


@pytest.mark.parametrize("case", list(CASES))
def test_the_korean_report_has_no_english_sentence(case: str) -> None:
    found = check(_prose(study_markdown(_study(case), "ko")), "ko", catalog_words(), frozenset())
    assert not found, [f.line for f in found]


@pytest.mark.parametrize("case", list(CASES))
def test_the_korean_scripts_comments_have_no_english_sentence(case: str) -> None:
    for plan in _plans(_study(case)):
        reasons = [
            say(d, "ko")
            for d in (
                *(f.why for f in plan.flags),
                *(x.why for x in plan.left_to_engine),
                *(e.why for e in plan.env),
                *plan.warned,
                *plan.noted,
            )
        ]
        assert all(r in script(plan, "ko") for r in reasons if "\n" not in r)
        # every comment line, its citations (in brackets at the end) and code spans left out
        comments = [
            re.sub(r"`[^`]*`", " ", re.sub(r" \[[^\]]*\]$", "", line[2:]))
            for text in (script(plan, "ko"), docker_script(plan, "ko"))
            for line in text.splitlines()
            if line.startswith("# ")
        ]
        found = check(comments, "ko", catalog_words(), frozenset())
        assert not found, [f.line for f in found]


def test_a_blocked_docker_script_stops_in_the_readers_language() -> None:
    st = _study("too big")
    plan = st.plan
    assert plan is not None and not plan.runnable
    reason = one_line(say(plan.blocked_by[0], "ko"))
    text = docker_script(plan, "ko")
    assert reason in text
    assert text.index(reason) < text.index("exit 1") < text.index("\ndocker run")
    assert next(a for a in launch_artifacts(st, plan, "ko") if a.kind == "docker").text == text


def test_every_alternative_link_on_overview_keeps_the_readers_language() -> None:
    query = {
        "model": "meta-llama/Llama-3.1-70B-Instruct",
        "gpu": "A100 80GB",
        "gpus": "4",
        "users": "32",
        "engine": "sglang",
        "lang": "ko",
    }
    at = open_app("overview", query)
    links = [
        link
        for md in at.markdown
        for link in re.findall(r"\]\((\?[^)]*)\)", str(md.value))
        if "model=" in link
    ]
    assert len(links) > 3  # the first few and those under "more ways"
    assert all("lang=ko" in link for link in links), links
