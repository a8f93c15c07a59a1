"""The case library: verified sessions users found useful, searchable later.

A case from a user's "useful" is a candidate until a reviewer approves it; only approved cases are
served to anyone's `lookup_knowledge` (issue 14: one user's session must not speak in another's answer).
"""

import uuid

from django.db import models


class CaseLibrary(models.Model):
    class SourceType(models.TextChoices):
        AUTO = "AUTO", "用户反馈自动沉淀"
        MANUAL = "MANUAL", "审核人员手动沉淀"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "待审核"
        APPROVED = "approved", "已批准"
        REJECTED = "rejected", "已驳回"

    case_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    diagnosis_id = models.CharField(max_length=64, unique=True)
    source_type = models.CharField(max_length=8, choices=SourceType.choices, default=SourceType.AUTO)
    fault_category = models.CharField(max_length=32, default="GENERAL")
    title = models.CharField(max_length=200)
    root_cause = models.TextField(blank=True, default="")
    solution = models.TextField(blank=True, default="")
    service = models.CharField(max_length=64, blank=True, default="")
    alert_name = models.CharField(max_length=64, blank=True, default="")
    error_code = models.CharField(max_length=64, blank=True, default="")
    status = models.CharField(
        "审核状态", max_length=16, choices=Status.choices, default=Status.CANDIDATE, db_index=True
    )
    reviewed_by = models.CharField("审核人", max_length=150, blank=True, default="")
    reviewed_at = models.DateTimeField("审核时间", null=True, blank=True)
    created_by = models.CharField(max_length=150, default="system")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "案例"
        verbose_name_plural = "案例库"
        permissions = [("review_case", "Can approve or reject candidate cases")]

    def __str__(self) -> str:
        return self.title
