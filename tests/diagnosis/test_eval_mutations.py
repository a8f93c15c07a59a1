"""Mutation tests of the shipped eval (contracts §19): switching a guard off must turn at least one
shipped case red. Here the coverage guard (§16), over the `slot-*` cases only, to stay fast."""

import pytest

from diagnosis.evaluation.fixtures import cases_discover
from diagnosis.evaluation.metrics import summary_build
from diagnosis.evaluation.runner import cases_run
from diagnosis.pipeline import guards

pytestmark = pytest.mark.django_db


def slot_cases():
    cases = [c for c in cases_discover() if c.name.startswith("slot-") and "known_gap" not in c.tags]
    assert cases, "no shipped slot-* cases"
    return cases


def test_removing_the_coverage_guard_turns_slot_cases_into_false_passes(monkeypatch):
    cases = slot_cases()
    healthy = cases_run(cases)
    assert [r.name for r in healthy if not r.passed] == []
    assert summary_build(healthy).false_pass == 0

    monkeypatch.setattr(
        guards,
        "VERDICT_GUARDS",
        tuple(g for g in guards.VERDICT_GUARDS if not isinstance(g, guards.CoverageGuard)),
    )
    broken = cases_run(cases)

    red = {r.name for r in broken if not r.passed}
    # The honest limits (no Prometheus in these worlds) are the cases the guard alone answers.
    limits = {"slot-trend-postgres-replication", "slot-history-crashloop", "slot-threshold-crashloop-none"}
    assert limits <= red
    # Each now a PASS that does not answer what was asked: a false PASS.
    assert all(r.verdict == "PASS" and r.slot_found is False for r in broken if r.name in limits)
    assert summary_build(broken).false_pass >= 1
