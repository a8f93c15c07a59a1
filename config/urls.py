from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("diagnosis.urls")),
    path("api/", include("diagnosis.urls_aiops")),
    path("", include("diagnosis.web_urls")),
]
