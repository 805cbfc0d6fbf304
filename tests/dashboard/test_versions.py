"""The Kubernetes release in the dashboard: every run shows the release it mirrored, and the
history page's what-if evaluates a pod as the run's release or another one the form names."""

from __future__ import annotations

import json

from flask.testing import FlaskClient
from markupsafe import escape
from sqlalchemy import Engine, select, update

from kaudit import versions
from kaudit.store.models import Run
from kaudit.versions import KubernetesVersion
from tests.conftest import MADE_UP
from tests.dashboard.test_whatif import MANIFEST


def test_runs_and_traces_carry_their_release(client: FlaskClient) -> None:
    runs = client.get("/api/v1/runs").get_json()["runs"]
    assert [r["kubernetesVersion"] for r in runs] == ["v1.34.2", "v1.34.2"]
    assert client.get("/api/v1/runs/default").get_json()["run"]["kubernetesVersion"] == "v1.34.2"
    (trace,) = client.get("/api/v1/traces").get_json()["traces"]
    assert trace["kubernetesVersion"] == "v1.34.2"  # the sample's header names it
    page = client.get("/runs/default").get_data(as_text=True)
    assert 'Kubernetes <b id="run-kubernetes">v1.34.2</b>' in page
    config = client.get("/runs/packing/config").get_data(as_text=True)
    assert '<b id="config-kubernetes">v1.34.2</b>' in config
    assert client.get("/-/config/packing").get_json()["kubernetesVersion"] == "v1.34.2"
    assert "v1.34.2" in client.get("/-/versions").get_json()["kubernetesReleases"]


def test_a_run_page_shows_the_features_its_trace_uses_that_kaudit_does_not_model(
        client: FlaskClient, sample_runs: Engine) -> None:
    assert 'id="run-warnings"' not in client.get("/runs/default").get_data(as_text=True)
    message = ("Kubernetes v1.37.2 turns on DRAConsumableCapacity, which kaudit does not model: "
               "ResourceSlice s uses it (device capacity requestPolicy, at t.jsonl:9)")
    with sample_runs.begin() as connection:
        summary = connection.scalar(select(Run.summary).where(Run.name == "default"))
        found = {**json.loads(summary or "{}"), "unmodelledFeatures": [
            {"gate": "DRAConsumableCapacity", "message": message}]}
        connection.execute(update(Run).where(Run.name == "default")
                           .values(summary=json.dumps(found)))
    page = client.get("/runs/default").get_data(as_text=True)
    assert f'<ul id="run-warnings" class="note">\n  <li>{escape(message)}</li>' in page


def test_the_history_page_offers_the_supported_releases(
        client: FlaskClient, second_release: KubernetesVersion) -> None:
    page = client.get("/runs/default/history").get_data(as_text=True)
    assert '<select id="whatif-version" name="kubernetesVersion"' in page
    assert "<option value=\"\">the run's (v1.34.2)</option>" in page
    assert '<option value="v1.34.2">v1.34.2</option>' in page
    assert f'<option value="{MADE_UP}">{MADE_UP}</option>' in page


def test_the_what_if_evaluates_as_the_runs_release_or_the_one_asked_for(
        client: FlaskClient, second_release: KubernetesVersion) -> None:
    own = client.post("/api/v1/runs/default/whatif?t=240", data=MANIFEST).get_json()
    assert own["kubernetesVersion"] == "v1.34.2" and own["notices"] == []
    other = client.post("/api/v1/runs/default/whatif?t=240&kubernetesVersion=1.99",
                        data=MANIFEST)
    assert other.status_code == 200, other.get_json()
    body = other.get_json()
    assert body["kubernetesVersion"] == MADE_UP and body["notices"] == []
    assert body["pod"] == "web/probe" and body["evaluation"]["selectedNode"] is None


def test_an_unsupported_release_is_a_400_naming_the_field(
        client: FlaskClient, second_release: KubernetesVersion) -> None:
    answer = client.post("/api/v1/runs/default/whatif?kubernetesVersion=v1.20", data=MANIFEST)
    assert answer.status_code == 400
    assert answer.get_json()["error"].startswith(
        "kubernetesVersion: unsupported Kubernetes version 'v1.20': kaudit supports v1.34.2, "
        f"{MADE_UP}")
    long = client.post("/api/v1/runs/default/whatif?kubernetesVersion=" + "1" * 65,
                       data=MANIFEST)
    assert long.status_code == 400
    assert long.get_json()["error"] == "kubernetesVersion: longer than 64 characters"


def test_a_run_of_a_release_no_longer_mirrored_is_evaluated_as_the_nearest(
        client: FlaskClient, sample_runs: Engine) -> None:
    with sample_runs.begin() as connection:
        connection.execute(update(Run).where(Run.name == "default")
                           .values(kubernetes_version="v1.30.1"))
    body = client.post("/api/v1/runs/default/whatif?t=240", data=MANIFEST).get_json()
    assert body["kubernetesVersion"] == "v1.34.2"
    supported = ", ".join(v.name for v in versions.SUPPORTED)
    assert body["notices"] == [
        f"run 'default' was replayed as Kubernetes v1.30.1, which kaudit does not mirror (it "
        f"supports {supported}): using v1.34.2, the nearest (kubernetesVersion to choose)"]
