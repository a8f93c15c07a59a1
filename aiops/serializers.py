"""Request validation of the AIOps endpoints: the one-click analysis and Alertmanager's webhook.

The webhook body is Alertmanager's notification, version 4
(https://prometheus.io/docs/alerting/latest/configuration/#webhook_config). Labels are data: any
name and value Prometheus allows (UTF-8 since Prometheus 3) is accepted, `service: "Checkout API"`
included, because Alertmanager drops a notification answered 400 together with every other alert
of its group. A NUL or a lone surrogate, which no database stores, reaches them already replaced by
U+FFFD (the webhook's parser). Only a body that is not such a notification is refused, with the field
named. The one-click filter is typed by people and keeps the identifier shapes.
"""

from __future__ import annotations

from datetime import UTC

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

# Prometheus alert names are metric-style names; services are label values like `Checkout API`.
ALERT_NAME_REGEX = r"^[A-Za-z_:][A-Za-z0-9_:.-]{0,199}$"
SERVICE_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$"
ALERT_NAME_MESSAGE = "告警名只能包含字母、数字、_ : . -，且以字母、_ 或 : 开头（最长 200 个字符）"
SERVICE_MESSAGE = "服务名只能包含字母、数字、_ . : / -，且以字母或数字开头（最长 200 个字符）"
MAX_FILTER_ITEMS = 50


def _alert_name_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(ALERT_NAME_REGEX, error_messages={"invalid": ALERT_NAME_MESSAGE}, **kwargs)


def _service_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(SERVICE_REGEX, error_messages={"invalid": SERVICE_MESSAGE}, **kwargs)


@extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
class LabelMapField(serializers.Field):
    """A label or annotation map: names to JSON strings exactly as sent (a number is not a label
    value). One field, not one per value: a 5,000-alert notification holds tens of thousands of
    values, and a field each made validation most of a re-send's time."""

    default_error_messages = {
        "not_a_dict": '应为标签名到字符串的映射，收到的是 "{input_type}"',
        "empty": "标签不能为空",
        "not_a_string": "标签值必须是字符串",
    }

    def __init__(self, *, allow_empty: bool = True, **kwargs):
        self.allow_empty = allow_empty
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            self.fail("not_a_dict", input_type=type(data).__name__)
        if not data and not self.allow_empty:
            self.fail("empty")
        errors = {
            name: [self.error_messages["not_a_string"]]
            for name, value in data.items()
            if not isinstance(value, str)
        }
        if errors:
            raise serializers.ValidationError(errors)
        return dict(data)

    def to_representation(self, value):
        return value


class AiOpsRequestSerializer(serializers.Serializer):
    alert_names = serializers.ListField(
        child=_alert_name_field(),
        required=False,
        max_length=MAX_FILTER_ITEMS,
        help_text="Only these alert names (empty or absent: every firing alert).",
    )
    services = serializers.ListField(
        child=_service_field(),
        required=False,
        max_length=MAX_FILTER_ITEMS,
        help_text="Only alerts of these services (empty or absent: every service).",
    )


class AlertmanagerAlertSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=("firing", "resolved"))
    labels = LabelMapField(allow_empty=False)
    annotations = LabelMapField(required=False, default=dict)
    # UTC whatever TIME_ZONE says: Alertmanager's "no end" is year 1, which a negative offset overflows.
    startsAt = serializers.DateTimeField(default_timezone=UTC)
    endsAt = serializers.DateTimeField(default_timezone=UTC, required=False, allow_null=True)
    generatorURL = serializers.CharField(required=False, allow_blank=True)
    fingerprint = serializers.CharField(max_length=64)

    def validate_labels(self, labels: dict) -> dict:
        if not labels.get("alertname", "").strip():
            raise serializers.ValidationError({"alertname": ["缺少告警名标签 alertname"]})
        if any(not name for name in labels):
            raise serializers.ValidationError(["标签名不能为空"])
        return labels


class AlertmanagerNotificationSerializer(serializers.Serializer):
    version = serializers.ChoiceField(choices=("4",), help_text='Alertmanager webhook version, "4".')
    groupKey = serializers.CharField(max_length=4096)
    receiver = serializers.CharField(max_length=255)
    status = serializers.ChoiceField(choices=("firing", "resolved"))
    # No count limit here: the body size is bounded (413) and alerts past DIAGNOSIS_AIOPS_MAX_ALERTS
    # are listed as not analysed.
    alerts = AlertmanagerAlertSerializer(many=True, allow_empty=False)
    groupLabels = LabelMapField(required=False, default=dict)
    commonLabels = LabelMapField(required=False, default=dict)
    commonAnnotations = LabelMapField(required=False, default=dict)
    externalURL = serializers.CharField(required=False, allow_blank=True)
    truncatedAlerts = serializers.IntegerField(required=False, min_value=0)


class AlertmanagerAcceptedSerializer(serializers.Serializer):
    """The webhook's 202: the analysis of the new episodes, or the report already covering them."""

    sessionId = serializers.CharField(allow_null=True)
    status = serializers.CharField(allow_null=True)
    traceUrl = serializers.CharField(allow_null=True)
    episodes = serializers.DictField(child=serializers.IntegerField(), help_text="new / known / resolved")
