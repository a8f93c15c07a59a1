"""Alert episodes, the deliveries of their reports, and the webhook's failed token attempts.

An episode is one firing of one alert: Alertmanager's `fingerprint` (a hash of the labels) plus
its `startsAt`. It is analysed once, by the report (an AIOps `DiagnosisSession`) whose notification
first carried it; a resolved notice closes it on that report.
"""

from __future__ import annotations

from django.db import models

from diagnosis.models import DiagnosisSession


class AlertEpisode(models.Model):
    class State(models.TextChoices):
        FIRING = "firing", "firing"
        RESOLVED = "resolved", "resolved"

    fingerprint = models.CharField(max_length=64)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=State.choices)
    alert_name = models.TextField()
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict, blank=True)
    # The analysis that covers the episode; null when the first notice seen already resolved it.
    report = models.ForeignKey(
        DiagnosisSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="alert_episodes"
    )
    first_seen_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "告警事件（episode）"
        verbose_name_plural = "告警事件（episode）"
        constraints = [
            models.UniqueConstraint(fields=["fingerprint", "starts_at"], name="aiops_episode_identity")
        ]
        ordering = ["-starts_at", "fingerprint"]

    def __str__(self) -> str:
        return f"{self.alert_name} {self.fingerprint} @ {self.starts_at:%Y-%m-%d %H:%M:%S}"


class ReportDelivery(models.Model):
    """One notification of a report to one channel (the report completed, one of its episodes resolved,
    a flapping group started, went on or settled): the generic JSON webhook or a team's chat bot."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "JSON webhook"
        FEISHU = "feishu", "飞书"
        DINGTALK = "dingtalk", "钉钉"
        WECOM = "wecom", "企业微信"
        SLACK = "slack", "Slack"

    class Event(models.TextChoices):
        COMPLETED = "completed", "报告完成"
        RESOLVED = "resolved", "告警恢复"
        # A flapping group: started or still flapping, then settled.
        FLAPPING = "flapping", "反复触发"
        SETTLED = "settled", "反复触发已平息"

    class State(models.TextChoices):
        PENDING = "pending", "待发送"
        DELIVERED = "delivered", "已送达"
        GAVE_UP = "gave_up", "已放弃"

    report = models.ForeignKey(DiagnosisSession, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=16, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.WEBHOOK)
    # Where it goes, shown without credentials (a chat bot's address is one): each try posts to the
    # channel's configured address.
    url = models.URLField(max_length=2000)
    # The message as the channel takes it, unsigned: a signature is made at each try.
    payload = models.JSONField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "报告投递"
        verbose_name_plural = "报告投递"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.get_event_display()} → {self.get_channel_display()} ({self.get_state_display()})"


class DeliveryAttempt(models.Model):
    delivery = models.ForeignKey(ReportDelivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    attempted_at = models.DateTimeField(auto_now_add=True)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    succeeded = models.BooleanField(default=False)
    latency_ms = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "投递尝试"
        verbose_name_plural = "投递尝试"
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="aiops_attempt_number")]

    def __str__(self) -> str:
        return f"#{self.number} {'ok' if self.succeeded else self.http_status or 'failed'}"


class FailedTokenAttempt(models.Model):
    """A wrong or malformed bearer token sent to the webhook: from which client address (a hash: the
    address is counted, not kept) and when. In the database because every web process shares it: each
    process's own cache let a limit of 10 a minute through 17 to 21 times behind 2 gunicorn workers."""

    address = models.CharField(max_length=64)
    at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["address", "at"], name="aiops_failed_token_counted")]

    def __str__(self) -> str:
        return f"{self.address[:12]} {self.at:%H:%M:%S}"
