"""Request and response shapes of the feedback API."""

from __future__ import annotations

from rest_framework import serializers

from diagnosis.models import DiagnosisSession


class FeedbackRequestSerializer(serializers.Serializer):
    sessionId = serializers.CharField(max_length=64)
    feedback = serializers.ChoiceField(choices=DiagnosisSession.Feedback.values)


class FeedbackResponseSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField()
    caseId = serializers.UUIDField(allow_null=True)
