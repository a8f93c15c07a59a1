"""The engineers' chat pages."""

from django.contrib.auth import views as auth_views
from django.urls import path

from diagnosis import views

urlpatterns = [
    path("", views.chat, name="chat"),
    path("ask", views.ask, name="chat-ask"),
    path("c/<str:session_id>", views.conversation, name="chat-conversation"),
    path("c/<str:session_id>/panel", views.conversation_panel, name="chat-panel"),
    path("login", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout", auth_views.LogoutView.as_view(), name="logout"),
]
