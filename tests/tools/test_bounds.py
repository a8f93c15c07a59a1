"""A tool output within bounds: a prefix of its records, each series' latest points, long strings cut,
the whole within the bytes of its stored JSON, and `truncated` with the totals when anything was cut."""

import json
from dataclasses import replace

from tools.bounds import CUT_MARK, STRING_CHARS, OutputBounds, SeriesKept, output_bounded, stored_bytes

BOUNDS = OutputBounds(series=500, points=240, lines=100, records=500, bytes=32 * 1024)
UNLIMITED_BYTES = replace(BOUNDS, bytes=10**9)


def series(count: int, *, points: int = 0) -> list[dict]:
    return [
        {
            "metric": {"__name__": "node_load1", "instance": f"web-{index}:9100", "job": "node"},
            **(
                {"values": [[1_700_000_000 + 15 * step, f"{step}.5"] for step in range(points)]}
                if points
                else {"value": [1_700_000_000, f"{index}.25"]}
            ),
        }
        for index in range(count)
    ]


def promql_output(records: list[dict]) -> dict:
    return {
        "success": True,
        "result_type": "vector",
        "series": records,
        "message": f"返回 {len(records)} 条时间序列",
    }


def test_an_output_within_the_bounds_is_left_as_it_is():
    output = promql_output(series(3, points=10))

    assert output_bounded(output, key="series", noun="series", bounds=BOUNDS) is output


def test_every_series_of_a_large_answer_beyond_the_bytes_is_cut_and_the_totals_said():
    output = promql_output(series(20_000))
    assert stored_bytes(output) > 20 * BOUNDS.bytes

    bounded = output_bounded(output, key="series", noun="series", bounds=BOUNDS)

    assert stored_bytes(bounded) <= BOUNDS.bytes
    assert bounded["truncated"] is True
    assert bounded["total_series"] == 20_000
    kept = len(bounded["series"])
    assert 0 < kept < BOUNDS.series
    # A prefix: every kept record is where the source had it, so its raw_path still names it.
    assert bounded["series"] == output["series"][:kept]
    assert bounded["message"] == f"返回 20000 条时间序列；输出超出上限，保留前 {kept} 条（共 20000 条）"


def test_the_series_count_is_bounded_before_the_bytes():
    bounded = output_bounded(promql_output(series(800)), key="series", noun="series", bounds=UNLIMITED_BYTES)

    assert len(bounded["series"]) == 500
    assert bounded["total_series"] == 800


def test_a_series_keeps_its_latest_points_and_says_how_many_it_had():
    output = promql_output(series(2, points=1000))

    bounded = output_bounded(output, key="series", noun="series", bounds=UNLIMITED_BYTES)

    first = bounded["series"][0]
    assert first["values"] == output["series"][0]["values"][-240:]
    assert first["total_points"] == 1000
    assert bounded["truncated"] is True
    assert bounded["total_series"] == 2


def test_log_lines_are_bounded_by_their_own_count_and_a_huge_line_keeps_its_start():
    huge = "OutOfMemoryError " + "x" * (3 * STRING_CHARS)
    output = {
        "success": True,
        "logs": [{"level": "ERROR", "message": huge}] + [{"level": "WARN", "message": "slow"}] * 200,
        "total": 201,
        "message": "找到 201 条匹配日志，返回 201 条",
    }

    bounded = output_bounded(output, key="logs", noun="lines", bounds=BOUNDS)

    assert len(bounded["logs"]) == 100
    assert bounded["total_lines"] == 201
    assert bounded["logs"][0]["message"] == huge[:STRING_CHARS] + CUT_MARK
    assert bounded["total"] == 201


def test_bounded_again_under_smaller_bounds_the_total_is_still_the_sources():
    once = output_bounded(promql_output(series(20_000)), key="series", noun="series", bounds=BOUNDS)
    smaller = replace(BOUNDS, bytes=8 * 1024)

    twice = output_bounded(once, key="series", noun="series", bounds=smaller)

    assert twice["total_series"] == 20_000
    assert len(twice["series"]) < len(once["series"])
    assert twice["message"].count("输出超出上限") == 1
    assert stored_bytes(twice) <= smaller.bytes


def test_what_is_measured_is_what_the_database_stores():
    output = promql_output(series(1))

    assert stored_bytes(output) == len(json.dumps(output).encode())


def test_a_promql_answer_is_bounded_while_it_is_parsed_and_every_series_counted():
    answer = json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": series(1200, points=300)}}
    )
    kept = SeriesKept(BOUNDS)

    result = json.loads(answer, object_hook=kept)["data"]["result"]

    assert kept.total == 1200
    assert len([record for record in result if record is not None]) == BOUNDS.series
    assert result[BOUNDS.series :] == [None] * 700
    assert [len(record["values"]) for record in result[: BOUNDS.series]] == [BOUNDS.points] * BOUNDS.series
    assert result[0]["total_points"] == 300
    # A label named `metric` is a label, not a series.
    assert json.loads('{"metric": {"metric": "x"}, "value": [1, "2"]}', object_hook=SeriesKept(BOUNDS))[
        "metric"
    ] == {"metric": "x"}
