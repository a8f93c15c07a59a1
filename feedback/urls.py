"""Feedback API route, mounted under /api/ next to the chat API."""

from django.urls import path

from feedback import api

urlpatterns = [
    path("feedback", api.FeedbackApi.as_view(), name="api-feedback"),
]
