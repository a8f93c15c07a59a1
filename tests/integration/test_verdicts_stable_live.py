"""A verdict does not depend on the moment (§22 "PASS fails closed", issue 36): on the exporter stack
(one start, its traffic trickling on), a question of each kind the recorded world asks (every log
question: a newest line tripped the polarity check once) asked twice, a minute apart, gets the same
verdict both times: the newest line, a rate read a minute later or the
order of samples never flips PASS to LOW_CONFID or REJECT."""

import json
import time

import pytest
from django.core.management import call_command

from diagnosis.models import DiagnosisSession
from tests.integration.exporter_cases import CASES_OF_THE_WORLD

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
APART_SECONDS = 60


def verdict_of(question: str, capsys) -> str:
    call_command("diagnose", question, "--json")
    traced = json.loads(capsys.readouterr().out)["session"]
    session = DiagnosisSession.objects.get(session_id=traced["session_id"])
    return f"{session.verdict}/{session.output_type}"


def questions_by_kind() -> list[str]:
    """The first question of each ask kind, and every log question (the whole world twice is ten
    minutes of CPU for the same code paths)."""
    first_of_kind = {}
    for case in CASES_OF_THE_WORLD:
        first_of_kind.setdefault(case.ask, case.question)
    logs = [case.question for case in CASES_OF_THE_WORLD if case.ask == "logs"]
    return list(dict.fromkeys([*first_of_kind.values(), *logs]))


def test_every_kind_asked_twice_a_minute_apart_gets_the_same_verdict(exporter_sources, capsys):
    questions = questions_by_kind()
    began = time.monotonic()
    first = {question: verdict_of(question, capsys) for question in questions}
    # The second asking of each question a minute after its first at least.
    time.sleep(max(0.0, APART_SECONDS - (time.monotonic() - began)))
    second = {question: verdict_of(question, capsys) for question in questions}

    flipped = {q: (first[q], second[q]) for q in questions if first[q] != second[q]}
    assert not flipped, flipped
