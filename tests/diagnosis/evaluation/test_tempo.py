"""The Tempo stand-in answers as Tempo 2.x documents it (https://grafana.com/docs/tempo/latest/api_docs/):
a search lists the traces that began in its window newest first, named by their root span; a trace is
OTLP JSON, one batch per service, a span's events (the lines written in it) in time order; what it does
not implement is a 400 naming it, not an answer."""

import httpx2
import pytest

from diagnosis.evaluation.tempo import SpanEvent, TempoServer, TempoSpan

NS = 10**9
MS = 10**6
# A whole second: the search window is in seconds.
BASE = 1_700_000_000
# A trace through two services: the edge calls the vault twice.
ATLAS = [
    TempoSpan("a1", "e1", "", "atlas-edge", "GET /maps", BASE * NS + 250 * MS, BASE * NS + 1250 * MS),
    TempoSpan("a1", "v1", "e1", "atlas-vault", "Vault.Read", BASE * NS + 300 * MS, BASE * NS + 700 * MS),
    TempoSpan("a1", "v2", "e1", "atlas-vault", "Vault.Read", BASE * NS + 800 * MS, BASE * NS + 1100 * MS),
]
# Half a minute later, a trace whose first span's parent is in no span held: it is the root.
KILN = [
    TempoSpan("k1", "r1", "lost", "kiln-router", "POST /fire", (BASE + 30) * NS + 500 * MS, (BASE + 32) * NS),
    TempoSpan("k1", "f1", "r1", "kiln-forge", "Forge.Heat", (BASE + 30) * NS + 600 * MS, (BASE + 31) * NS),
]


@pytest.fixture(scope="module")
def tempo():
    # Given out of order: the server orders them.
    with TempoServer([*KILN, *reversed(ATLAS)]) as server:
        yield server


def get(tempo: TempoServer, path: str, **params) -> httpx2.Response:
    return httpx2.get(f"{tempo.url}{path}", params=params, timeout=10)


def searched(tempo: TempoServer, **params) -> dict:
    response = get(tempo, "/api/search", **params)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_search_lists_the_traces_begun_in_the_window_newest_first_named_by_their_roots(tempo):
    found = searched(tempo, start=BASE, end=BASE + 60)

    assert found["traces"] == [
        {
            "traceID": "k1",
            "rootServiceName": "kiln-router",
            "rootTraceName": "POST /fire",
            "startTimeUnixNano": str((BASE + 30) * NS + 500 * MS),
            "durationMs": 1500,
        },
        {
            "traceID": "a1",
            "rootServiceName": "atlas-edge",
            "rootTraceName": "GET /maps",
            "startTimeUnixNano": str(BASE * NS + 250 * MS),
            "durationMs": 1000,
        },
    ]
    assert found["metrics"] == {"inspectedTraces": 2, "completedJobs": 1, "totalJobs": 1}


def test_a_trace_is_in_a_window_by_its_start_and_the_windows_end_is_left_out(tempo):
    assert [trace["traceID"] for trace in searched(tempo, start=BASE + 1, end=BASE + 60)["traces"]] == ["k1"]
    # The kiln trace begins at BASE + 30.5 s: after an end of BASE + 30 s.
    assert [trace["traceID"] for trace in searched(tempo, start=BASE, end=BASE + 30)["traces"]] == ["a1"]
    assert searched(tempo, start=BASE + 31, end=BASE + 60) == {
        "traces": [],
        "metrics": {"inspectedTraces": 0, "completedJobs": 1, "totalJobs": 1},
    }


def test_the_limit_keeps_the_newest_and_the_inspected_count_is_the_windows(tempo):
    found = searched(tempo, start=BASE, end=BASE + 60, limit=1, q="{ }")

    assert [trace["traceID"] for trace in found["traces"]] == ["k1"]
    assert found["metrics"]["inspectedTraces"] == 2


def test_a_trace_is_otlp_json_with_a_batch_per_service_and_its_root_without_a_parent(tempo):
    response = get(tempo, "/api/traces/a1")

    assert response.status_code == 200
    batches = response.json()["batches"]
    assert [batch["resource"]["attributes"] for batch in batches] == [
        [{"key": "service.name", "value": {"stringValue": "atlas-edge"}}],
        [{"key": "service.name", "value": {"stringValue": "atlas-vault"}}],
    ]
    [edge_scope] = batches[0]["scopeSpans"]
    assert edge_scope["scope"] == {"name": "nezha"}
    assert edge_scope["spans"] == [
        {
            "traceId": "a1",
            "spanId": "e1",
            "name": "GET /maps",
            "kind": "SPAN_KIND_UNSPECIFIED",
            "startTimeUnixNano": str(BASE * NS + 250 * MS),
            "endTimeUnixNano": str(BASE * NS + 1250 * MS),
        }
    ]
    vault_spans = batches[1]["scopeSpans"][0]["spans"]
    assert [(span["spanId"], span["parentSpanId"]) for span in vault_spans] == [("v1", "e1"), ("v2", "e1")]


def test_a_root_whose_parent_is_missing_keeps_the_parent_it_names(tempo):
    batches = get(tempo, "/api/traces/k1").json()["batches"]

    spans = {span["spanId"]: span for batch in batches for span in batch["scopeSpans"][0]["spans"]}
    assert spans["r1"]["parentSpanId"] == "lost"
    assert spans["f1"]["parentSpanId"] == "r1"


def test_an_unknown_trace_is_a_404(tempo):
    response = get(tempo, "/api/traces/0badc0ffee")

    assert response.status_code == 404
    assert response.text.strip() == "trace not found"


def test_one_services_spanset_lists_the_traces_with_a_span_of_it(tempo):
    def of(service: str) -> list[str]:
        query = f'{{ resource.service.name = "{service}" }}'
        return [trace["traceID"] for trace in searched(tempo, start=BASE, end=BASE + 60, q=query)["traces"]]

    assert of("kiln-forge") == ["k1"]
    assert of("atlas-vault") == ["a1"]
    assert of("quarry-pit") == []
    services = get(tempo, "/api/search/tag/service.name/values").json()
    assert services == {"tagValues": ["atlas-edge", "atlas-vault", "kiln-forge", "kiln-router"]}


def test_another_traceql_query_is_refused_naming_it(tempo):
    response = get(tempo, "/api/search", start=BASE, end=BASE + 60, q="{ span.http.status_code = 500 }")

    assert response.status_code == 400
    assert "span.http.status_code = 500" in response.text
    assert "only {} and one service's spanset are supported" in response.text


def test_a_tag_filter_is_refused_rather_than_ignored(tempo):
    response = get(tempo, "/api/search", start=BASE, end=BASE + 60, tags="service.name=kiln-forge")

    assert response.status_code == 400
    assert "unsupported search parameter: tags" in response.text


def test_a_search_without_its_window_or_with_a_bad_limit_is_a_400(tempo):
    missing = get(tempo, "/api/search", end=BASE + 60)
    unreadable = get(tempo, "/api/search", start="yesterday", end=BASE + 60)
    backwards = get(tempo, "/api/search", start=BASE + 60, end=BASE)
    bad_limit = get(tempo, "/api/search", start=BASE, end=BASE + 60, limit=0)

    assert (missing.status_code, unreadable.status_code, backwards.status_code) == (400, 400, 400)
    assert "missing start" in missing.text
    assert "'yesterday'" in unreadable.text
    assert "start must be before end" in backwards.text
    assert bad_limit.status_code == 400 and "limit" in bad_limit.text


def test_readiness_and_echo_answer_and_other_paths_are_404(tempo):
    assert (get(tempo, "/ready").status_code, get(tempo, "/ready").text.strip()) == (200, "ready")
    assert (get(tempo, "/api/echo").status_code, get(tempo, "/api/echo").text) == (200, "echo")
    assert get(tempo, "/api/v2/search/tags").status_code == 404


def test_without_a_limit_a_search_answers_tempos_default_twenty():
    singles = [
        TempoSpan(f"t{n}", "s", "", "kiln-router", "GET /", (BASE + n) * NS, (BASE + n) * NS + MS)
        for n in range(25)
    ]
    with TempoServer(singles) as server:
        found = searched(server, start=BASE, end=BASE + 60)

    assert [trace["traceID"] for trace in found["traces"]] == [f"t{n}" for n in range(24, 4, -1)]
    assert found["metrics"]["inspectedTraces"] == 25


def test_the_server_stops_listening_when_left():
    with TempoServer(ATLAS) as server:
        url = server.url
        assert httpx2.get(f"{url}/ready", timeout=10).status_code == 200

    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{url}/ready", timeout=10)


def test_a_spans_events_are_served_in_time_order_with_an_int_attribute_as_a_string_and_none_without():
    written = "16:52:28.243 INFO  t.s.TravelServiceImpl#532 [queryInfo][Query trips]"
    failed = "16:52:28.301 ERROR t.s.TravelServiceImpl#540 [queryInfo][No trip found]"
    place = (("code.namespace", "t.s.TravelServiceImpl"),)
    events = (
        # Given out of order: they are served in time order.
        SpanEvent(BASE * NS + 900 * MS, "log", (("message", failed), *place, ("code.lineno", 540))),
        SpanEvent(BASE * NS + 400 * MS, "log", (("message", written), *place, ("code.lineno", 532))),
    )
    edge, vault = ATLAS[0], ATLAS[1]._replace(events=events)
    with TempoServer([edge, vault]) as server:
        batches = get(server, "/api/traces/a1").json()["batches"]

    spans = {span["spanId"]: span for batch in batches for span in batch["scopeSpans"][0]["spans"]}
    assert "events" not in spans["e1"]
    assert spans["v1"]["events"] == [
        {
            "timeUnixNano": str(BASE * NS + 400 * MS),
            "name": "log",
            "attributes": [
                {"key": "message", "value": {"stringValue": written}},
                {"key": "code.namespace", "value": {"stringValue": "t.s.TravelServiceImpl"}},
                {"key": "code.lineno", "value": {"intValue": "532"}},
            ],
        },
        {
            "timeUnixNano": str(BASE * NS + 900 * MS),
            "name": "log",
            "attributes": [
                {"key": "message", "value": {"stringValue": failed}},
                {"key": "code.namespace", "value": {"stringValue": "t.s.TravelServiceImpl"}},
                {"key": "code.lineno", "value": {"intValue": "540"}},
            ],
        },
    ]
