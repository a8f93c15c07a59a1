"""What the eval reads in an answer's text, judged from the case file alone and never by calling the
code it evaluates: whether the expected slot is filled, and which of the world's
subjects a PASS names that the question did not ask about."""

from __future__ import annotations

import re

from diagnosis.evaluation.fixtures import EvalCase, SlotExpectation, WorldSubjects

# A `结论` line after optional markdown: `结论：…`, `**结论**：…`, `- 结论：…`, `1. 结论：…`, `> 结论`.
CONCLUSION_LINE = re.compile(r"^[\s>#*_+\-]*(?:\d+[.)][\s*_]*)?结论")
# An excerpt quoted from a source (「…」): the source's words, not the answer naming a subject.
QUOTED = re.compile(r"「[^」]*」")
# A number as an answer writes it (`-3`, `0.25`, `4,194,304`, `共3次`), not the digits of a name (`p99`, `v1`).
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![A-Za-z0-9_]|\.\d)")
NAME_SEPARATORS = re.compile(r"[-_\s]+")
# Between a name's parts: one separator of any kind, or none.
NAME_JOINER = r"[-_\s]?"
# Letters, digits and the separators that continue a name (`pod-web-api-5c7d`).
NAME_CHARACTER = r"A-Za-z0-9_\-"


def slot_found(*, slot: SlotExpectation, answer: str) -> bool:
    """All of the slot's terms and numbers on one `结论` line (one conclusion line per ask), or, when
    the slot is not a conclusion, anywhere in the answer."""
    if not slot.conclusion:
        return _holds(slot, answer)
    return any(_holds(slot, line) for line in answer.splitlines() if CONCLUSION_LINE.match(line))


def _holds(slot: SlotExpectation, text: str) -> bool:
    stated = [float(number.replace(",", "")) for number in NUMBER.findall(text)]
    return all(term in text for term in slot.answer_contains) and all(
        any(abs(number - expected.value) <= expected.tolerance for number in stated)
        for expected in slot.answer_numbers
    )


def slot_failure(*, slot: SlotExpectation) -> str:
    where = "没有一行「结论」同时包含" if slot.conclusion else "回答中缺少"
    numbers = [f"{n.value:g}±{n.tolerance:g}" for n in slot.answer_numbers]
    return f"所问未回答（{slot.ask}）：{where} {[*slot.answer_contains, *numbers]}"


def subject_named(*, name: str, text: str) -> bool:
    """The text names the subject as a name of its own: any case, its parts joined by `-`, `_`, a
    space or nothing (`Web_Api`, `web api`), never inside a longer name
    (`pod-web-api-5c7d`, or `PostgresReplicationLag` for `postgres`)."""
    parts = [re.escape(part) for part in NAME_SEPARATORS.split(name) if part]
    pattern = rf"(?<![{NAME_CHARACTER}]){NAME_JOINER.join(parts)}(?![{NAME_CHARACTER}])"
    return re.search(pattern, text, re.IGNORECASE) is not None


def off_topic_subjects(*, case: EvalCase, answer: str) -> list[str]:
    """The world's subjects the answer names in its own words although the case does not ask about
    them: not named by the question, not in `expect.subjects`, not tied to an asked one."""
    world = case.world_subjects()
    asked = {name for name in world.names if subject_named(name=name, text=case.question)}
    asked |= set(case.expect.subjects)
    in_scope = asked | _tied(asked=asked, world=world)
    own_words = QUOTED.sub(" ", answer)
    return sorted(name for name in world.names - in_scope if subject_named(name=name, text=own_words))


def _tied(*, asked: set[str], world: WorldSubjects) -> set[str]:
    """The alerts on an asked service, and the service of an asked alert unless a service is asked:
    "只确认 DiskFull" is about the service it fires on, "web-api 有 DiskFull 吗" is
    not about the other service that alert fires on."""
    services_asked = asked & world.services
    tied = {alert for alert, service in world.alert_services if service in services_asked}
    if not services_asked:
        tied |= {service for alert, service in world.alert_services if alert in asked}
    return tied
