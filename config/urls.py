from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("diagnosis.urls")),
    path("api/", include("feedback.urls")),
    path("api/", include("aiops.urls")),
    path("", include("diagnosis.web_urls")),
    path("", include("feedback.web_urls")),
    path("", include("aiops.web_urls")),
    path("", include("mcp_server.urls")),
]
