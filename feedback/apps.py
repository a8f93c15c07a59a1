from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "feedback"
    verbose_name = "用户反馈"

    def ready(self) -> None:
        from diagnosis.signals import session_reviewed
        from feedback.services import bad_case_resolve_on_review

        session_reviewed.connect(
            bad_case_resolve_on_review, dispatch_uid="feedback.bad_case_resolve_on_review"
        )
