"""The Nezha repository's log files as Loki streams: the container runtime's JSON unwrapped, labelled by
namespace, service, pod and level, shifted like the metrics."""

import csv
import io
import json
from datetime import timedelta

from diagnosis.evaluation.nezha.logs import log_streams

NS = 10**9


def log_file(rows: list[tuple[int, str, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["Timestamp", "TimeUnixNano", "Node", "PodName", "Container", "TraceID", "SpanID", "Log"])
    for ns, pod, line in rows:
        record = json.dumps({"log": line + "\n", "stream": "stdout", "time": "2023-01-29T08:44:10Z"})
        writer.writerow(["2023-01-29T08:44:10Z", ns, "10.0.0.1", pod, "server", "t", "s", record])
    return out.getvalue()


def test_lines_are_streams_per_service_pod_and_level_shifted_like_the_metrics():
    text = log_file([
        (100 * NS, "ledger-service-5b67c48447-mv5hb", "16:44:10.485 ERROR l.LedgerImpl#36 write failed"),
        (101 * NS, "ledger-service-5b67c48447-mv5hb", "16:44:11.485 INFO  l.LedgerImpl#40 synced"),
        (102 * NS, "ledger-service-5b67c48447-mv5hb", "16:44:12.485 ERROR l.LedgerImpl#36 write failed"),
        (103 * NS, "cart-7d9f8c6b5-x2x9z", "plain line without a level"),
    ])  # fmt: skip

    streams = log_streams([("08_44_log.csv", text)], namespace="shop", shift=timedelta(seconds=10))

    found = {tuple(sorted(labels.items())): lines for labels, lines in streams}
    pod = "ledger-service-5b67c48447-mv5hb"
    errors = (("level", "error"), ("namespace", "shop"), ("pod", pod), ("service", "ledger-service"))
    assert found[errors] == [
        (110 * NS, "16:44:10.485 ERROR l.LedgerImpl#36 write failed"),
        (112 * NS, "16:44:12.485 ERROR l.LedgerImpl#36 write failed"),
    ]
    plain = (("namespace", "shop"), ("pod", "cart-7d9f8c6b5-x2x9z"), ("service", "cart"))
    assert found[plain] == [(113 * NS, "plain line without a level")]
    assert len(found) == 3


def test_a_line_two_overlapping_files_hold_is_one_line_and_a_repeated_line_at_another_time_is_two():
    pod = "ledger-service-5b67c48447-mv5hb"
    earlier = log_file([(100 * NS, pod, "INFO synced"), (101 * NS, pod, "INFO synced")])
    later = log_file([(101 * NS, pod, "INFO synced"), (102 * NS, pod, "INFO synced")])

    [(_, lines)] = log_streams(
        [("08_50_log.csv", earlier), ("08_52_log.csv", later)], namespace="shop", shift=timedelta(0)
    )

    assert lines == [(100 * NS, "INFO synced"), (101 * NS, "INFO synced"), (102 * NS, "INFO synced")]
