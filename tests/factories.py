"""Factories for the project's models; tests build records through these, never by hand."""

import factory
from django.contrib.auth import get_user_model

from caselib.models import CaseLibrary
from diagnosis.models import AgentStep, DiagnosisSession, ToolInvocation


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"engineer{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-123")


class StaffUserFactory(UserFactory):
    username = factory.Sequence(lambda n: f"reviewer{n}")
    is_staff = True


class DiagnosisSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DiagnosisSession

    session_id = factory.Sequence(lambda n: f"session-{n}")
    query = "只确认 order-service 是否存在 HighMemoryUsage 告警"
    owner = factory.SubFactory(UserFactory)


class AgentStepFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentStep

    session = factory.SubFactory(DiagnosisSessionFactory)
    agent = AgentStep.Agent.PLANNER


class ToolInvocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolInvocation

    session = factory.SubFactory(DiagnosisSessionFactory)
    tool_name = "query_metrics"
    input = factory.LazyFunction(dict)
    output = factory.LazyFunction(lambda: {"success": True, "alerts": [], "message": ""})
    retrieval_details = factory.LazyFunction(
        lambda: {"evidence_status": "no_evidence", "evidence_refs": []}
    )


class CaseLibraryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CaseLibrary

    diagnosis_id = factory.Sequence(lambda n: f"session-{n}")
    title = "order-service HighMemoryUsage"
