"""The Nezha repository's log files as Loki streams: the container runtime's JSON unwrapped, labelled by
namespace, service, pod and level, shifted like the metrics; a case's window reads only its own files."""

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from diagnosis.evaluation.nezha.logs import log_files_between, log_streams

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


def test_a_case_reads_only_the_log_files_named_in_its_window_and_the_minute_after(tmp_path: Path):
    day = tmp_path / "rca_data" / "2023-01-29" / "log"
    day.mkdir(parents=True)
    # A file `HH_MM` holds the minute before HH:MM: 08_40's lines are all before the window, 08_57's all
    # after it; a span file beside them is not read, the day's fault-free capture is.
    for name in (
        "08_40_log.csv",
        "08_41_log.csv",
        "08_52_log.csv",
        "08_56_log.csv",
        "08_57_log.csv",
        "08_52_trace.csv",
    ):
        (day / name).write_text(f"{name}\n", encoding="utf-8")
    normal = tmp_path / "construct_data" / "2023-01-29" / "log"
    normal.mkdir(parents=True)
    (normal / "08_50_log.csv").write_text("normal 08_50_log.csv\n", encoding="utf-8")

    start, end = datetime(2023, 1, 29, 8, 41, 30, tzinfo=UTC), datetime(2023, 1, 29, 8, 55, 10, tzinfo=UTC)
    files = list(log_files_between(tmp_path, "2023-01-29", start, end))

    assert files == [
        ("08_41_log.csv", "08_41_log.csv\n"),
        ("08_50_log.csv", "normal 08_50_log.csv\n"),
        ("08_52_log.csv", "08_52_log.csv\n"),
        ("08_56_log.csv", "08_56_log.csv\n"),
    ]
