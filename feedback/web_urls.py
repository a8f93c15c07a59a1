"""The chat page's feedback bar."""

from django.urls import path

from feedback import views

urlpatterns = [
    path("c/<str:session_id>/feedback", views.feedback, name="chat-feedback"),
]
