from django.urls import path

from mcp_server import views

urlpatterns = [path("mcp", views.McpApi.as_view(), name="mcp")]
