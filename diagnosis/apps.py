from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DiagnosisConfig(AppConfig):
    name = "diagnosis"
    verbose_name = "诊断会话"

    def ready(self) -> None:
        from django_q.signals import post_execute_in_worker, post_spawn

        from diagnosis import worker_signals

        # The stale-session reaper is scheduled by any deployment: `migrate` and every worker start.
        post_migrate.connect(worker_signals.reaper_schedule_on_migrate, sender=self)
        post_spawn.connect(worker_signals.reaper_on_worker_start)
        post_execute_in_worker.connect(worker_signals.traces_flush_after_task)
