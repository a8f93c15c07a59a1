"""Request validation of the AIOps endpoints: the one-click analysis and Alertmanager's webhook.

The webhook body is Alertmanager's notification, version 4
(https://prometheus.io/docs/alerting/latest/configuration/#webhook_config). Alert names and
services become part of the per-alert questions and of the report, so they must look like the
identifiers Prometheus produces; anything else is refused with the field named.
"""

from __future__ import annotations

from datetime import UTC

from rest_framework import serializers

# Prometheus alert names are metric-style names; services are label values like `order-service`.
ALERT_NAME_REGEX = r"^[A-Za-z_:][A-Za-z0-9_:.-]{0,199}$"
SERVICE_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,199}$"
ALERT_NAME_MESSAGE = "告警名只能包含字母、数字、_ : . -，且以字母、_ 或 : 开头（最长 200 个字符）"
SERVICE_MESSAGE = "服务名只能包含字母、数字、_ . : / -，且以字母或数字开头（最长 200 个字符）"
MAX_FILTER_ITEMS = 50
MAX_ALERTS = 1000


def _alert_name_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(ALERT_NAME_REGEX, error_messages={"invalid": ALERT_NAME_MESSAGE}, **kwargs)


def _service_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(SERVICE_REGEX, error_messages={"invalid": SERVICE_MESSAGE}, **kwargs)


def _label_map(**kwargs) -> serializers.DictField:
    return serializers.DictField(child=serializers.CharField(allow_blank=True), **kwargs)


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
    labels = _label_map()
    annotations = _label_map(required=False, default=dict)
    # UTC whatever TIME_ZONE says: Alertmanager's "no end" is year 1, which a negative offset overflows.
    startsAt = serializers.DateTimeField(default_timezone=UTC)
    endsAt = serializers.DateTimeField(default_timezone=UTC, required=False, allow_null=True)
    generatorURL = serializers.CharField(required=False, allow_blank=True)
    fingerprint = serializers.CharField(max_length=64)

    def validate_labels(self, labels: dict) -> dict:
        errors = {}
        if not labels.get("alertname"):
            errors["alertname"] = ["缺少告警名标签 alertname"]
        else:
            errors.update(_invalid(_alert_name_field(), labels["alertname"], "alertname"))
        if labels.get("service"):
            errors.update(_invalid(_service_field(), labels["service"], "service"))
        if errors:
            raise serializers.ValidationError(errors)
        return labels


class AlertmanagerNotificationSerializer(serializers.Serializer):
    version = serializers.ChoiceField(choices=("4",), help_text='Alertmanager webhook version, "4".')
    groupKey = serializers.CharField(max_length=4096)
    receiver = serializers.CharField(max_length=255)
    status = serializers.ChoiceField(choices=("firing", "resolved"))
    alerts = AlertmanagerAlertSerializer(many=True, allow_empty=False, max_length=MAX_ALERTS)
    groupLabels = _label_map(required=False, default=dict)
    commonLabels = _label_map(required=False, default=dict)
    commonAnnotations = _label_map(required=False, default=dict)
    externalURL = serializers.CharField(required=False, allow_blank=True)
    truncatedAlerts = serializers.IntegerField(required=False, min_value=0)


def _invalid(field: serializers.Field, value: str, name: str) -> dict:
    try:
        field.run_validation(value)
    except serializers.ValidationError as error:
        return {name: error.detail}
    return {}
