"""The chat page's example questions and placeholder, worded from what they are about
(`diagnosis.selectors.examples`)."""

from __future__ import annotations

from dataclasses import dataclass

from diagnosis.selectors.examples import AskSubjects

EXAMPLE_COUNT = 3
PRIORITY_QUESTION = "现在有哪些告警，先处理哪个？"
HEALTH_QUESTION = "有没有抓取目标挂了？"


@dataclass(frozen=True)
class AskExamples:
    questions: list[str]
    placeholder: str


def ask_examples(*, subjects: AskSubjects) -> AskExamples:
    questions = subjects.world_questions if subjects.world_questions is not None else _questions(subjects)
    return AskExamples(questions=questions[:EXAMPLE_COUNT], placeholder=f"例如：{questions[0]}")


def _questions(subjects: AskSubjects) -> list[str]:
    if subjects.alerts:
        alert, service = subjects.alerts[0]
        first = f"只确认 {service} 是否存在 {alert} 告警" if service else f"是否存在 {alert} 告警"
        alert, service = subjects.alerts[1] if len(subjects.alerts) > 1 else subjects.alerts[0]
        second = f"{service} 的 {alert} 告警为什么触发？" if service else f"{alert} 告警为什么触发？"
        return [first, second, PRIORITY_QUESTION]
    services = [f"{service} 最近 15 分钟有错误日志吗？" for service in subjects.services[:2]]
    return [*services, PRIORITY_QUESTION, HEALTH_QUESTION]
