"""AIOps API routes, mounted under /api/ next to the chat API."""

from django.urls import path

from diagnosis import api_aiops

urlpatterns = [
    path("ai_ops", api_aiops.AiOpsApi.as_view(), name="api-ai-ops"),
    path("alertmanager/webhook", api_aiops.AlertmanagerWebhookApi.as_view(), name="api-alertmanager-webhook"),
]
