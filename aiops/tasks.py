"""django-q2 task entry points of the AIOps app."""

from aiops.delivery import delivery_attempt
from aiops.services import aiops_run, flap_settle_check


def aiops_run_task(session_pk: int) -> None:
    aiops_run(session_pk=session_pk)


def delivery_attempt_task(delivery_pk: int) -> None:
    delivery_attempt(delivery_pk=delivery_pk)


def flap_settle_task(report_pk: int, episode_pk: int) -> None:
    flap_settle_check(report_pk=report_pk, episode_pk=episode_pk)
