"""Mutation tests of the shipped eval: switching a guard off must turn at least one
shipped case red. One table drives them: each guard, how it is switched off, and the tag of the
cases that must catch it (`guard:<name>` in their case.yaml). Only the tagged cases run, to stay fast.
A guard registered in `CLAIM_GUARDS`, `BINDING_GUARDS` or `VERDICT_GUARDS` without a row fails here, so a guard added
without a catching case fails CI."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import pytest

from diagnosis.engines.rules import verifier as rules_verifier
from diagnosis.evaluation.fixtures import GUARD_TAG_PREFIX, TAGS, cases_discover
from diagnosis.evaluation.metrics import summary_build
from diagnosis.evaluation.runner import cases_run
from diagnosis.pipeline import composer, gatekeeper, guards, orchestrator, round, verdict
from diagnosis.pipeline.routing import OutputType, route

pytestmark = pytest.mark.django_db


def _without_claim_guard(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(monkeypatch: pytest.MonkeyPatch) -> None:
        kept = tuple(g for g in guards.CLAIM_GUARDS if g.name != name)
        assert len(kept) < len(guards.CLAIM_GUARDS), f"no claim guard named {name}"
        monkeypatch.setattr(guards, "CLAIM_GUARDS", kept)

    return apply


def _without_verdict_guard(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(monkeypatch: pytest.MonkeyPatch) -> None:
        kept = tuple(g for g in guards.VERDICT_GUARDS if g.name != name)
        assert len(kept) < len(guards.VERDICT_GUARDS), f"no verdict guard named {name}"
        monkeypatch.setattr(guards, "VERDICT_GUARDS", kept)

    return apply


def _without_binding_guard(name: str) -> Callable[[pytest.MonkeyPatch], None]:
    def apply(monkeypatch: pytest.MonkeyPatch) -> None:
        kept = tuple(g for g in guards.BINDING_GUARDS if g.name != name)
        assert len(kept) < len(guards.BINDING_GUARDS), f"no binding guard named {name}"
        monkeypatch.setattr(guards, "BINDING_GUARDS", kept)

    return apply


def _every_binding_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    def ignored(*args):
        # Run to fill in what was found (the matched text), then report no broken rule.
        for _ in original(*args):
            pass
        return iter(())

    original = gatekeeper._binding_failures
    monkeypatch.setattr(gatekeeper, "_binding_failures", ignored)


def _negation_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gatekeeper, "_adds_negation", lambda excerpt, ref_text: False)
    monkeypatch.setattr(gatekeeper, "_polarity_change", lambda excerpt, ref_text: "")
    monkeypatch.setattr(gatekeeper, "claim_denial", lambda claim_text, *, ref_text, raw_path: "")


def _composer_answer_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orchestrator, "composer_guard", lambda **kwargs: [])


def _remedies_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(composer, "fix_recommendations", lambda **kwargs: [])


def _claims_taken_as_grounded(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (verdict, rules_verifier):
        monkeypatch.setattr(module, "grounding_check", lambda **kwargs: {})


def _one_direct_fact_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    def lenient(fact_classes):
        if "contradicted" in fact_classes or "direct_evidence" not in fact_classes:
            return original(fact_classes)
        return "PASS", 1.0

    original = verdict.verdict_compute
    monkeypatch.setattr(verdict, "verdict_compute", lenient)


def _every_output_type_shown_as_normal(monkeypatch: pytest.MonkeyPatch) -> None:
    original = orchestrator.answer_markdown
    monkeypatch.setattr(
        orchestrator,
        "answer_markdown",
        lambda record, **kwargs: original(
            record.model_copy(update={"output_type": OutputType.NORMAL}), **kwargs
        ),
    )


def _never_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(round, "route", lambda **kwargs: route(**kwargs | {"max_rounds": kwargs["round"]}))


@dataclass(frozen=True)
class Mutation:
    # A guard's `name` when it is in CLAIM_GUARDS / VERDICT_GUARDS, else the check's own name.
    guard: str
    switched_off: str
    tag: str
    apply: Callable[[pytest.MonkeyPatch], None]


MUTATIONS = (
    Mutation(
        guards.LABEL_UNSUPPORTED,
        "LabelCheck removed from BINDING_GUARDS",
        "guard:label",
        _without_binding_guard(guards.LABEL_UNSUPPORTED),
    ),
    Mutation(
        "gatekeeper.citation_check",
        "gatekeeper._binding_failures runs but reports no rule: every binding passes",
        "guard:citation",
        _every_binding_passes,
    ),
    Mutation(
        "gatekeeper.negation_polarity",
        "gatekeeper's added-negation, polarity-change and claim-denial checks find nothing",
        "guard:polarity",
        _negation_ignored,
    ),
    Mutation(
        guards.SCOPE_RULE,
        "ExclusionGuard removed from CLAIM_GUARDS",
        "guard:exclusion",
        _without_claim_guard(guards.SCOPE_RULE),
    ),
    Mutation(
        guards.FOCUS_RULE,
        "FocusGuard removed from CLAIM_GUARDS",
        "guard:focus",
        _without_claim_guard(guards.FOCUS_RULE),
    ),
    Mutation(
        guards.EVIDENCE_AS_DATA_RULE,
        "EvidenceAsDataGuard removed from CLAIM_GUARDS",
        "guard:evidence_as_data",
        _without_claim_guard(guards.EVIDENCE_AS_DATA_RULE),
    ),
    Mutation(
        guards.RESTATED_RULE,
        "RestatedConclusionGuard removed from CLAIM_GUARDS",
        "guard:restated",
        _without_claim_guard(guards.RESTATED_RULE),
    ),
    Mutation(
        guards.CANDIDATE_RULE,
        "CandidateGuard removed from CLAIM_GUARDS",
        "guard:candidates",
        _without_claim_guard(guards.CANDIDATE_RULE),
    ),
    Mutation(
        guards.CITATION_CAP_RULE,
        "CitationCap removed from VERDICT_GUARDS",
        "guard:citation_cap",
        _without_verdict_guard(guards.CITATION_CAP_RULE),
    ),
    Mutation(
        guards.COVERAGE_RULE,
        "CoverageGuard removed from VERDICT_GUARDS",
        "guard:coverage",
        _without_verdict_guard(guards.COVERAGE_RULE),
    ),
    Mutation(
        guards.UNREAD_RULE,
        "UnreadAskGuard removed from VERDICT_GUARDS",
        "guard:fail-closed",
        _without_verdict_guard(guards.UNREAD_RULE),
    ),
    Mutation(
        "composer.guard",
        "orchestrator's composer_guard finds nothing: the composed answer is kept as written",
        "guard:composer",
        _composer_answer_unchecked,
    ),
    Mutation(
        "composer.remedy_removal",
        "composer's fix_recommendations finds nothing: a recommended remedy stays in the answer",
        "guard:remedy",
        _remedies_allowed,
    ),
    Mutation(
        "verdict.grounding",
        "grounding_check (verdict and rules verifier) finds nothing: every claim's facts count as grounded",
        "guard:grounding",
        _claims_taken_as_grounded,
    ),
    Mutation(
        "verdict.matrix",
        "verdict_compute: one direct fact and no contradiction make a PASS, whatever else is unsupported",
        "guard:verdict",
        _one_direct_fact_passes,
    ),
    Mutation(
        "disclosure.output_type",
        "answer_markdown writes every output type as NORMAL (no disclaimer, gaps, degraded text)",
        "guard:disclosure",
        _every_output_type_shown_as_normal,
    ),
    Mutation(
        "routing.retry",
        "route never returns RETRY (max_rounds = the current round)",
        "guard:retry",
        _never_retried,
    ),
)


@cache
def shipped_cases():
    return tuple(case for case in cases_discover() if "known_gap" not in case.tags)


def tagged(tag: str):
    return [case for case in shipped_cases() if tag in case.tags]


def test_every_registered_guard_has_a_mutation_row():
    registered = {
        guard.name for guard in (*guards.CLAIM_GUARDS, *guards.BINDING_GUARDS, *guards.VERDICT_GUARDS)
    }
    assert registered - {mutation.guard for mutation in MUTATIONS} == set()


def test_every_guard_tag_is_in_the_table_and_tags_shipped_cases():
    guard_tags = {tag for tag in TAGS if tag.startswith(GUARD_TAG_PREFIX)}
    assert guard_tags == {mutation.tag for mutation in MUTATIONS}
    assert [tag for tag in sorted(guard_tags) if not tagged(tag)] == []


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda mutation: mutation.guard)
def test_switching_a_guard_off_turns_a_case_tagged_for_it_red(mutation, monkeypatch):
    cases = tagged(mutation.tag)
    healthy = cases_run(cases)
    assert [r.name for r in healthy if not r.passed] == []

    mutation.apply(monkeypatch)
    broken = cases_run(cases)

    assert [r.name for r in broken if not r.passed], f"no case tagged {mutation.tag} catches {mutation.guard}"


def test_removing_the_coverage_guard_turns_slot_cases_into_false_passes(monkeypatch):
    cases = [case for case in shipped_cases() if case.name.startswith("slot-")]
    healthy = cases_run(cases)
    assert [r.name for r in healthy if not r.passed] == []
    assert summary_build(healthy).false_pass == 0

    _without_verdict_guard(guards.COVERAGE_RULE)(monkeypatch)
    broken = cases_run(cases)

    red = {r.name for r in broken if not r.passed}
    # The honest limits (no Prometheus in these worlds) are the cases the guard alone answers.
    limits = {"slot-trend-postgres-replication", "slot-history-crashloop", "slot-threshold-crashloop-none"}
    assert limits <= red
    # Each now a PASS that does not answer what was asked: a false PASS.
    assert all(r.verdict == "PASS" and r.slot_found is False for r in broken if r.name in limits)
    assert summary_build(broken).false_pass >= 1
