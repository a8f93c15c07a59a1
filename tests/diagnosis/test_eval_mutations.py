"""Mutation tests of the shipped eval (contracts §19): switching a guard off must turn at least one
shipped case red. Here the coverage guard (§16) over the `slot-*` cases and the label check (§17) over
the `*label*` cases, each over those only, to stay fast."""

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


def label_cases():
    cases = [c for c in cases_discover() if "label" in c.name]
    assert {"demo", "shop"} <= {c.world or "demo" for c in cases}, "label cases on both worlds"
    return cases


def test_removing_the_label_check_lets_lines_called_what_they_are_not_pass(monkeypatch):
    cases = label_cases()
    healthy = cases_run(cases)
    assert [r.name for r in healthy if not r.passed] == []

    monkeypatch.setattr(
        guards,
        "BINDING_GUARDS",
        tuple(g for g in guards.BINDING_GUARDS if not isinstance(g, guards.LabelCheck)),
    )
    broken = cases_run(cases)

    # Each an INFO or pool-stats line quoted exactly and called an error or a timeout: only the label
    # check rejects it; without it the persuaded verifier's PASS stands.
    assert {r.name for r in broken if not r.passed} == {c.name for c in cases}
    assert {r.verdict for r in broken} == {"PASS"}
