"""Key signals are judged from a family's name, TYPE, HELP and label names, never its name alone: the
same roles on a Kubernetes stack's names and on a second world's exporters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from diagnosis.pipeline.investigation.change import change_of
from diagnosis.pipeline.investigation.signals import (
    MAX_SIGNALS,
    EdgeSignal,
    KeySignal,
    key_signal,
    key_signals,
    served_addresses,
)
from tools.signal_roles import MetricFamily

SERVICE_LABELS = ("service", "app", "job")
POD = ("namespace", "pod", "service", "container")


def signal(name: str, type: str, help: str = "", labels=POD, series=()) -> KeySignal | EdgeSignal | None:
    return key_signal(
        MetricFamily(name, type, help, tuple(labels)), service_labels=SERVICE_LABELS, series=series
    )


@pytest.mark.parametrize(
    ("name", "type", "help", "labels", "role", "query"),
    [
        (
            "container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds.", POD,
            "cpu", "sum by (service) (rate(container_cpu_usage_seconds_total[3m]))",
        ),
        (
            "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.",
            ("job", "instance"), "cpu", "sum by (job) (rate(process_cpu_seconds_total[3m]))",
        ),
        (
            "node_cpu_seconds_total", "counter", "Seconds the CPUs spent in each mode.",
            ("service", "cpu", "mode", "instance"), "cpu",
            'sum by (service) (rate(node_cpu_seconds_total{mode!~"idle|iowait|steal"}[3m]))',
        ),
        (
            "jvm_memory_used_bytes", "gauge", "The amount of used memory", ("app", "area"),
            "memory", "sum by (app) (jvm_memory_used_bytes)",
        ),
        (
            "http_server_request_duration_seconds", "histogram", "Duration of HTTP server requests.",
            ("service", "route", "le"), "latency",
            "histogram_quantile(0.9, sum by (service, le) (rate(http_server_request_duration_seconds_bucket[3m])))",
        ),
        (
            "http_client_request_duration_seconds", "summary", "Duration of requests sent to services it calls.",
            ("service", "quantile"), "client_latency", "max by (service, quantile) (http_client_request_duration_seconds)",
        ),
        (
            "ledger_postings_failed_total", "counter", "Postings that failed.", ("service",),
            "errors", "sum by (service) (rate(ledger_postings_failed_total[3m]))",
        ),
        (
            "http_server_requests_total", "counter", "Total number of requests the server handled.", POD,
            "requests", "sum by (service) (rate(http_server_requests_total[3m]))",
        ),
        (
            "pg_locks_count", "gauge", "Number of locks", ("job", "datname", "mode", "server"),
            "locks", "sum by (job) (pg_locks_count)",
        ),
    ],
)  # fmt: skip
def test_a_family_plays_the_role_its_name_type_and_help_say(name, type, help, labels, role, query):
    found = signal(name, type, help, labels)

    assert isinstance(found, KeySignal)
    assert (found.role, found.query) == (role, query)


def test_a_counter_named_without_its_total_reads_the_series_the_source_holds():
    found = signal(
        "container_network_receive_bytes", "counter", "", series={"container_network_receive_bytes_total"}
    )

    assert isinstance(found, KeySignal) and found.role == "network_receive"
    assert found.query == "sum by (service) (rate(container_network_receive_bytes_total[3m]))"


@pytest.mark.parametrize(
    ("name", "labels", "caller", "callee"),
    [
        ("traces_service_graph_request_total", ("client", "server"), "client", "server"),
        ("istio_requests_total", ("source_workload", "destination_workload", "response_code"), "source_workload", "destination_workload"),
    ],
)  # fmt: skip
def test_a_service_graph_counter_is_the_call_graph(name, labels, caller, callee):
    found = signal(name, "counter", "Total count of requests between two nodes", labels)

    assert found == EdgeSignal(metric=name, caller=caller, callee=callee)
    assert found.query(35) == f"sum by ({caller}, {callee}) (increase({name}[35m]))"


def test_a_latency_between_two_services_is_said_of_the_callee():
    found = signal("traces_service_graph_request_server_seconds", "histogram", "", ("client", "server", "le"))

    assert isinstance(found, KeySignal)
    assert (found.role, found.by, found.caller) == ("edge_latency", "server", "client")


@pytest.mark.parametrize(
    ("name", "type", "labels"),
    [
        ("container_memory_working_set_bytes", "gauge", ("namespace", "pod")),  # no label names a service
        ("kube_pod_container_resource_limits", "gauge", POD),  # a limit is no signal
        ("container_spec_memory_limit_bytes", "gauge", POD),
        ("scrape_duration_seconds", "gauge", ("job", "instance")),
    ],
)
def test_a_family_that_names_no_service_or_plays_no_role_is_no_key_signal(name, type, labels):
    assert signal(name, type, "", labels) is None


def test_the_signals_read_are_bounded_and_one_query_reads_every_service():
    families = [
        MetricFamily(f"app_{i}_requests_total", "counter", "Requests.", ("service",)) for i in range(60)
    ]

    signals, edges, left_out = key_signals(families, service_labels=SERVICE_LABELS)

    assert len(signals) == MAX_SIGNALS and left_out == 60 - MAX_SIGNALS
    assert all(s.query.startswith("sum by (service)") for s in signals)
    assert edges == []


@pytest.mark.parametrize(
    ("client", "server", "caller", "callee", "gap"),
    [
        (
            MetricFamily("traces_service_graph_request_client_seconds", "histogram", "Time as seen from the client.", ("client", "server", "le")),
            MetricFamily("traces_service_graph_request_server_seconds", "histogram", "Time as seen from the server.", ("client", "server", "le")),
            "client", "server",
            "histogram_quantile(0.9, sum by (client, server, le) (rate(traces_service_graph_request_client_seconds_bucket[3m])))"
            " / on (client, server) "
            "histogram_quantile(0.9, sum by (client, server, le) (rate(traces_service_graph_request_server_seconds_bucket[3m])))",
        ),
        (
            MetricFamily("mesh_call_client_seconds", "summary", "Call time the caller measured.", ("source_workload", "destination_workload", "quantile")),
            MetricFamily("mesh_call_server_seconds", "summary", "Call time the callee measured.", ("source_workload", "destination_workload", "quantile")),
            "source_workload", "destination_workload",
            "max by (source_workload, destination_workload) (mesh_call_client_seconds)"
            " / on (source_workload, destination_workload) "
            "max by (source_workload, destination_workload) (mesh_call_server_seconds)",
        ),
    ],
)  # fmt: skip
def test_an_edges_caller_view_minus_its_callee_view_is_read_as_the_network_between_them(
    client, server, caller, callee, gap
):
    signals, _, _ = key_signals([client, server], service_labels=SERVICE_LABELS)

    [network] = [s for s in signals if s.role == "edge_network"]
    assert (network.caller, network.by, network.unit) == (caller, callee, "倍")
    assert network.query == gap


def test_one_view_of_an_edge_alone_says_nothing_of_its_network():
    only = MetricFamily(
        "traces_service_graph_request_server_seconds", "histogram", "", ("client", "server", "le")
    )

    signals, _, _ = key_signals([only], service_labels=SERVICE_LABELS)

    assert [s.role for s in signals] == ["edge_latency"]


def test_the_bound_is_shared_among_the_roles_and_one_programs_breakdown_comes_last():
    """Forty memory gauges of one exporter do not crowd out every service's latency and errors."""
    families = [
        MetricFamily(f"node_memory_Part{i}_bytes", "gauge", "Memory information field.", ("job",))
        for i in range(45)
    ] + [
        MetricFamily("process_resident_memory_bytes", "gauge", "Resident memory in bytes.", ("job",)),
        MetricFamily("http_request_duration_seconds", "histogram", "Latency of requests.", ("job",)),
        MetricFamily("app_errors_total", "counter", "Errors.", ("job",)),
    ]

    signals, _, left_out = key_signals(families, service_labels=SERVICE_LABELS)

    metrics = [s.metric for s in signals]
    assert len(signals) == MAX_SIGNALS and left_out == len(families) - MAX_SIGNALS
    assert {"process_resident_memory_bytes", "http_request_duration_seconds", "app_errors_total"} <= set(
        metrics
    )
    assert metrics.index("process_resident_memory_bytes") < metrics.index("node_memory_Part0_bytes")


def test_a_probe_is_read_by_its_target_address_too():
    found = signal(
        "probe_duration_seconds", "gauge", "Returns how long the probe took to complete in seconds",
        labels=("job", "instance"),
    )  # fmt: skip

    assert (found.role, found.address) == ("probe_latency", "instance")
    assert found.query == "max by (job, instance) (probe_duration_seconds)"


@pytest.mark.parametrize(
    ("name", "help"),
    [
        ("pg_settings_log_min_duration_statement_seconds", "Sets the minimum execution time above which all statements will be logged."),
        ("pg_settings_autovacuum_work_mem_bytes", "Sets the maximum memory to be used by each autovacuum worker process."),
        ("app_config_request_timeout_seconds", "The configured timeout of requests."),
    ],
)  # fmt: skip
def test_a_setting_is_never_a_signal(name, help):
    assert signal(name, "gauge", help, labels=("job", "server")) is None


@pytest.mark.parametrize(
    ("name", "help"),
    [
        ("go_memstats_heap_released_bytes", "Number of heap bytes released to OS."),
        ("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used."),
        ("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place."),
    ],
)
def test_memory_given_back_or_not_yet_used_is_no_memory_signal(name, help):
    assert signal(name, "gauge", help, labels=("job", "instance")) is None


def test_the_addresses_served_are_read_from_one_family_per_exporter_labelled_by_service_and_server():
    families = [
        MetricFamily("db_locks_count", "gauge", "Number of locks", ("job", "datname", "server")),
        MetricFamily("db_up", "gauge", "Whether the last scrape could connect", ("job", "server")),
        MetricFamily("cache_commands", "counter", "Commands processed", ("job", "server", "cmd")),
        MetricFamily("queue_depth", "gauge", "Messages waiting", ("server",)),
        MetricFamily("http_requests", "counter", "Requests served", ("job", "code")),
    ]

    served = served_addresses(families, service_labels=SERVICE_LABELS, series={"cache_commands_total"})

    assert served.query() == (
        "count by (job, server) (cache_commands_total) or count by (job, server) (db_locks_count)"
    )
    assert served_addresses(families[3:], service_labels=SERVICE_LABELS) is None


def test_a_latencys_moves_are_measured_against_a_millisecond_and_a_lock_counts_against_one():
    """A transaction age flat at zero that reads 1.5 ms from then on is no move (without the floor it
    would be: a rise from zero is otherwise measured against its own size); CPU has no such floor."""
    latency = signal("http_server_request_duration_seconds", "summary", "", ("service", "quantile"))
    edge = signal("traces_service_graph_request_client_seconds", "histogram", "", ("client", "server", "le"))
    locks = signal("pg_locks_count", "gauge", "Number of locks", ("service", "mode"))
    cpu = signal("container_cpu_usage_seconds_total", "counter", "", ("service", "pod"))

    assert (latency.floor, edge.floor, locks.floor, cpu.floor) == (0.001, 0.001, 1, 0.0)
    start = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
    noise = [(start + timedelta(minutes=m), 0.0015 if m >= 33 else 0.0) for m in range(36)]
    moved = {
        "onset_hint": start + timedelta(minutes=32),
        "baseline_start": start,
        "end": start + timedelta(minutes=35),
    }
    assert change_of(noise, **moved, floor=latency.floor) is None
    assert change_of(noise, **moved) is not None


def test_a_request_rate_that_moved_by_a_request_or_two_in_its_range_is_noise():
    """An idle exporter's scrape counter at 2 requests in 3 minutes (0.0112/s) that stops is no move;
    a service whose 2 requests a second stop has moved."""
    requests = signal("nginx_http_requests_total", "counter", "Total http requests", ("service", "pod"))
    assert requests.floor == 0.01
    start = datetime(2026, 11, 29, 14, 0, tzinfo=UTC)
    moved = {
        "onset_hint": start + timedelta(minutes=32),
        "baseline_start": start,
        "end": start + timedelta(minutes=35),
        "floor": requests.floor,
    }

    def stopping(rate: float) -> list[tuple[datetime, float]]:
        return [(start + timedelta(minutes=m), 0.0 if m >= 33 else rate) for m in range(36)]

    assert change_of(stopping(0.0112), **moved) is None
    assert change_of(stopping(2.0), **moved) is not None
