"""Bad cases: sessions a user marked not_useful, kept for review."""

from django.conf import settings
from django.db import models


class BadCase(models.Model):
    session = models.OneToOneField(
        "diagnosis.DiagnosisSession", on_delete=models.CASCADE, related_name="bad_case"
    )
    reported_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    comment = models.TextField(blank=True, default="")
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "坏案例"
        verbose_name_plural = "坏案例"

    def __str__(self) -> str:
        return f"bad case {self.session_id}"
