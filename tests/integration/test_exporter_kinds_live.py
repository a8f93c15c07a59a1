"""Kinds of the exporter world asked live of both engines (`exporter_kinds`): a metric, a log count, the
alerts of a window, a runbook's first step and an action, each answered with the truth the sources
give at the session's instant; and the llm engine never says PASS where the rules engine's slot is
unanswered."""

import pytest
from django.db import transaction

from tests.integration.exporter_cases import CASES_OF_THE_WORLD
from tests.integration.exporter_kinds import ENGINES, kinds_ask, row_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
KINDS = (
    "rate-nginx-requests",
    "cache-hit-ratio-english",
    "nginx-404-by-path",
    "alerts-fired-first",
    "runbook-evictions",
    "action-restart-redis",
)


@pytest.fixture(scope="module")
def rows(exporter_stack, django_db_setup, django_db_blocker):
    """Asked once for the module; the sessions are rolled back so no other test sees them."""
    with django_db_blocker.unblock(), transaction.atomic():
        asked = kinds_ask(exporter_stack, [case for case in CASES_OF_THE_WORLD if case.name in KINDS])
        transaction.set_rollback(True)
    return asked


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_kind_is_answered_with_the_truth(rows, kind, engine):
    [row] = [row for row in rows if row.case == kind and row.engine == engine]

    assert row.answered, row_text(row, first=True)
    assert row.verdict == "PASS", row_text(row, first=True)


def test_the_llm_engine_never_passes_what_the_rules_engine_leaves_unanswered(rows):
    rules = {row.case: row for row in rows if row.engine == "rules"}
    llm = {row.case: row for row in rows if row.engine == "llm"}

    assert set(rules) == set(llm) == set(KINDS)
    above = [name for name in KINDS if not rules[name].answered and llm[name].verdict == "PASS"]
    assert not above, [row_text(llm[name], first=True) for name in above]
