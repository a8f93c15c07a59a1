"""django-q2 task entry points of the AIOps app."""

from aiops.services import aiops_run


def aiops_run_task(session_pk: int) -> None:
    aiops_run(session_pk=session_pk)
