"""JSON API routes, mounted under /api/."""

from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import IsAuthenticated

from diagnosis import api

urlpatterns = [
    path("chat", api.ChatApi.as_view(), name="api-chat"),
    path("sessions", api.SessionListApi.as_view(), name="api-sessions"),
    path("sessions/<str:session_id>/trace", api.SessionTraceApi.as_view(), name="api-session-trace"),
    path("verify", api.VerifyApi.as_view(), name="api-verify"),
    path("verify/<str:session_id>", api.VerifyResultApi.as_view(), name="api-verify-result"),
    # Like the rest of the API, its description is for signed-in users only.
    path("schema", SpectacularAPIView.as_view(permission_classes=[IsAuthenticated]), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, as the Content-Security-Policy wants;
    # the page's own small <style> block is the one inline style allowed, here only.
    path(
        "docs",
        csp_update({"style-src": ["'unsafe-inline'"]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema", permission_classes=[IsAuthenticated])
        ),
        name="api-docs",
    ),
]
