import pytest

from diagnosis.pipeline.routing import route


@pytest.mark.parametrize(
    ("verdict", "score", "round", "expected"),
    [
        ("PASS", 1.0, 1, "NORMAL"),
        ("PASS", 0.8, 2, "NORMAL"),
        ("LOW_CONFID", 0.6, 1, "LOW_CONFID_WITH_DISCLAIMER"),
        ("LOW_CONFID", 0.5, 1, "LOW_CONFID_WITH_DISCLAIMER"),
        ("LOW_CONFID", 0.49, 1, "RETRY"),
        ("LOW_CONFID", 0.0, 1, "RETRY"),
        ("LOW_CONFID", 0.0, 2, "LOW_CONFID_WITH_DISCLAIMER"),
        ("LOW_CONFID", 0.6, 2, "LOW_CONFID_WITH_DISCLAIMER"),
        ("REJECT", 0.0, 1, "DEGRADED"),
        ("REJECT", 0.0, 2, "DEGRADED"),
    ],
)
def test_route_table(verdict, score, round, expected):
    assert route(verdict=verdict, score=score, round=round, max_rounds=2, threshold=0.5) == expected


def test_a_low_score_is_retried_once_and_never_a_third_time():
    routes = [route(verdict="LOW_CONFID", score=0.1, round=r, max_rounds=2, threshold=0.5) for r in (1, 2)]

    assert routes == ["RETRY", "LOW_CONFID_WITH_DISCLAIMER"]


def test_reject_is_never_retried_even_with_rounds_left():
    assert route(verdict="REJECT", score=0.0, round=1, max_rounds=5, threshold=0.5) == "DEGRADED"


def test_a_single_round_configuration_never_retries():
    assert (
        route(verdict="LOW_CONFID", score=0.0, round=1, max_rounds=1, threshold=0.5)
        == "LOW_CONFID_WITH_DISCLAIMER"
    )
