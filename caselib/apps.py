from django.apps import AppConfig


class CaselibConfig(AppConfig):
    name = "caselib"
    verbose_name = "案例库"
