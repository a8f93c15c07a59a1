"""A recorded world: answers of a live source kept through the proxy and served again by the replay."""

import json
from datetime import UTC, datetime

import httpx2

from diagnosis.evaluation.recording import Recording, RecordingProxy, ReplayServer, recording_subjects
from tests.loki_server import FakeLoki

STREAMS = [
    {"stream": {"service": "billing", "level": "error"}, "lines": [{"seconds_ago": 5, "line": "boom"}]}
]
RECORDED_AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def record(tmp_path, *requests) -> Recording:
    with FakeLoki(STREAMS, tenant="team-a") as loki, RecordingProxy({"loki": loki.url}) as proxy:
        for path, params in requests:
            httpx2.get(f"{proxy.url('loki')}{path}", params=params, headers={"X-Scope-OrgID": "team-a"})
        recording = proxy.recording(recorded_at=RECORDED_AT)
    recording.write(tmp_path)
    return Recording.read(tmp_path)


def test_a_replayed_request_gets_the_recorded_answer_byte_for_byte(tmp_path):
    query = {"query": '{service="billing"}', "limit": "10"}
    with FakeLoki(STREAMS, tenant="team-a") as loki:
        live = httpx2.get(
            f"{loki.url}/loki/api/v1/label/service/values", headers={"X-Scope-OrgID": "team-a"}
        ).text
    recording = record(
        tmp_path, ("/loki/api/v1/label/service/values", {}), ("/loki/api/v1/query_range", query)
    )

    with ReplayServer(recording) as replay:
        values = httpx2.get(
            f"{replay.url('loki')}/loki/api/v1/label/service/values", headers={"X-Scope-OrgID": "team-a"}
        )
        lines = httpx2.get(
            f"{replay.url('loki')}/loki/api/v1/query_range", params=query, headers={"X-Scope-OrgID": "team-a"}
        )

    assert values.status_code == 200 and values.text == live
    assert lines.json()["data"]["result"][0]["values"][0][1] == "boom"
    assert recording.recorded_at == RECORDED_AT and recording.sources == ["loki"]


def test_a_request_the_recording_lacks_fails_and_is_named(tmp_path):
    recording = record(tmp_path, ("/loki/api/v1/labels", {}))

    with ReplayServer(recording) as replay:
        other_tenant = httpx2.get(f"{replay.url('loki')}/loki/api/v1/labels", headers={"X-Scope-OrgID": "b"})
        unrecorded = httpx2.get(f"{replay.url('loki')}/loki/api/v1/query_range", params={"query": '{a="b"}'})

    assert other_tenant.status_code == 502 and unrecorded.status_code == 502
    assert "not in the recording: loki /loki/api/v1/query_range?query=" in unrecorded.text
    assert len(replay.misses) == 2


def test_a_request_is_matched_whatever_its_timeout_and_limit(tmp_path):
    asked = {"query": '{service="billing"}'}
    recording = record(tmp_path, ("/loki/api/v1/query_range", {**asked, "limit": "10"}))

    with ReplayServer(recording) as replay:
        bounded = httpx2.get(
            f"{replay.url('loki')}/loki/api/v1/query_range",
            params={**asked, "limit": "100", "timeout": "2.5"},
            headers={"X-Scope-OrgID": "team-a"},
        )

    assert bounded.status_code == 200
    assert bounded.json()["data"]["result"][0]["values"][0][1] == "boom"


def test_subjects_are_read_from_the_recorded_rules_and_label_values():
    rules = {
        "status": "success",
        "data": {
            "groups": [
                {
                    "rules": [
                        {"name": "DiskFull", "labels": {"service": "vault"}, "alerts": []},
                        {"name": "Lag", "labels": {}, "alerts": [{"labels": {"service": "ledger"}}]},
                    ]
                }
            ]
        },
    }
    recording = Recording.model_validate(
        {
            "recorded_at": RECORDED_AT,
            "sources": ["prometheus"],
            "exchanges": [
                {
                    "source": "prometheus",
                    "path": "/api/v1/rules",
                    "params": [["type", "alert"]],
                    "status": 200,
                    "content_type": "application/json",
                    "body": json.dumps(rules),
                },
                {
                    "source": "loki",
                    "path": "/loki/api/v1/label/service/values",
                    "params": [],
                    "status": 200,
                    "content_type": "application/json",
                    "body": '{"status": "success", "data": ["mailer"]}',
                },
            ],
        }
    )

    services, alerts = recording_subjects(recording)

    assert services == {"vault", "ledger", "mailer"}
    assert alerts == {("DiskFull", "vault"), ("Lag", "ledger")}


def test_subjects_follow_the_teams_service_labels_down_to_job():
    rules = {
        "status": "success",
        "data": {
            "groups": [
                {
                    "rules": [
                        {"name": "ProbeFailed", "labels": {}, "alerts": [{"labels": {"job": "blackbox"}}]},
                        {
                            "name": "Evicting",
                            "labels": {"service": "cache"},
                            "alerts": [{"labels": {"service": "cache", "job": "redis"}}],
                        },
                        {"name": "Watchdog", "labels": {}, "alerts": [{"labels": {}}]},
                    ]
                }
            ]
        },
    }
    exchange = {"source": "prometheus", "params": [], "status": 200, "content_type": "application/json"}
    recording = Recording.model_validate(
        {
            "recorded_at": RECORDED_AT,
            "sources": ["prometheus"],
            "exchanges": [
                exchange | {"path": "/api/v1/rules", "body": json.dumps(rules)},
                exchange | {"path": "/api/v1/label/job/values", "body": '{"data": ["node", "redis"]}'},
            ],
        }
    )

    services, alerts = recording_subjects(recording, service_labels=("service", "app", "job"))

    assert services == {"blackbox", "cache", "node", "redis"}
    assert alerts == {("ProbeFailed", "blackbox"), ("Evicting", "cache"), ("Watchdog", "")}
    # With `service` alone, as before: job values name no service.
    assert recording_subjects(recording)[0] == {"cache"}
