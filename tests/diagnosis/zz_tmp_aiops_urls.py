from django.urls import include, path
from config.urls import urlpatterns as base
urlpatterns = [path("api/", include("diagnosis.urls_aiops")), *base]
