"""The chat page's AI Ops button."""

from django.urls import path

from aiops import views

urlpatterns = [
    path("ai-ops", views.ai_ops, name="chat-ai-ops"),
]
