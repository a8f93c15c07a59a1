"""AIOps API routes, mounted under /api/ next to the chat API."""

from django.urls import path

from aiops import api

urlpatterns = [
    path("ai_ops", api.AiOpsApi.as_view(), name="api-ai-ops"),
    path("alertmanager/webhook", api.AlertmanagerWebhookApi.as_view(), name="api-alertmanager-webhook"),
]
