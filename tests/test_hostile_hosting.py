"""Hosting for a team: the container and the app's own Kubernetes manifest keep the settings a
shared deployment needs (health check, sticky sessions, one cookie secret, not root, no
tracebacks in the browser, bounded uploads)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _docs() -> dict[str, Any]:
    return {d["kind"]: d for d in yaml.safe_load_all((ROOT / "deploy/kubernetes.yaml").read_text())}


def test_the_deployment_checks_health_on_streamlits_endpoint() -> None:
    (app,) = _docs()["Deployment"]["spec"]["template"]["spec"]["containers"]
    for probe in ("readinessProbe", "livenessProbe"):
        assert app[probe]["httpGet"]["path"] == "/_stcore/health"
    assert app["ports"][0]["containerPort"] == 8501 and "EXPOSE 8501" in DOCKERFILE


def test_replicas_share_one_cookie_secret_and_clients_stick_to_one_replica() -> None:
    docs = _docs()
    assert docs["Deployment"]["spec"]["replicas"] > 1
    (app,) = docs["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert "STREAMLIT_SERVER_COOKIE_SECRET" in {e["name"] for e in app["env"]}
    assert docs["Service"]["spec"]["sessionAffinity"] == "ClientIP"


def test_the_app_runs_as_non_root_read_only_and_without_error_details() -> None:
    pod = _docs()["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert "USER 10001" in DOCKERFILE
    assert '"--client.showErrorDetails", "none"' in DOCKERFILE


def test_streamlits_upload_limit_is_the_config_loaders_cap() -> None:
    import tomllib

    from engine.model.config import MAX_CONFIG_BYTES, MAX_CONFIG_MIB

    assert MAX_CONFIG_BYTES == MAX_CONFIG_MIB * 1024 * 1024  # Streamlit counts MiB
    toml = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert toml["server"]["maxUploadSize"] == MAX_CONFIG_MIB
    assert f'"--server.maxUploadSize", "{MAX_CONFIG_MIB}"' in DOCKERFILE


def test_forty_distinct_7_mib_pastes_from_new_sessions_keep_the_server_within_its_bound() -> None:
    """The issue's memory attack on a real server: each paste from a new session (which then
    closes), four kinds in turn (accepted, too large to hold, broken JSON); the server's
    resident memory (and its config reader's) after, and at its peak, stays within the idle
    server + the caches' budget + the worker + the pastes in flight (README)."""
    from tools.app_server import app_server
    from tools.bench_attacks import TEST_KINDS, memory_attack

    pids: list[int] = []
    with app_server(on_start=pids.append) as base:
        m = memory_attack(base, pids[0], 40, TEST_KINDS, at_once=4, page="family")
    assert m.within, (m.idle, m.after, m.peak, m.bound)
