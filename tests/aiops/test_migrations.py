"""The data migration giving the notifications received before episodes existed their episodes."""

import importlib

import pytest
from django.apps import apps

from aiops.models import AlertEpisode
from diagnosis.models import DiagnosisSession
from tests.factories import DiagnosisSessionFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("aiops.migrations.0002_episodes_from_notification_sessions")


def old_notification_session(*alerts: dict) -> DiagnosisSession:
    """A session as the webhook stored it before episodes (then keyed by group + fingerprint set)."""
    return DiagnosisSessionFactory(
        kind=DiagnosisSession.Kind.AIOPS,
        alert_scope={"source": "alertmanager", "group_key": "{}:{}", "alerts": list(alerts)},
    )


def scope_alert(fingerprint: str, state: str, *, analysed: bool, ends_at: str | None = None) -> dict:
    return {
        "alert_name": "CheckoutLatencyHigh",
        "service": "Checkout API",
        "state": state,
        "fingerprint": fingerprint,
        "starts_at": "2026-11-29T06:35:00+00:00",
        "ends_at": ends_at,
        "labels": {"alertname": "CheckoutLatencyHigh", "service": "Checkout API"},
        "annotations": {},
        "analysed": analysed,
        "session_id": "child" if analysed else None,
    }


def test_each_alert_of_the_old_sessions_becomes_one_episode_of_the_session_that_analysed_it():
    first = old_notification_session(
        scope_alert("f1", "firing", analysed=True),
        scope_alert("f2", "resolved", analysed=False),
    )
    # The same episode again, in a notice whose membership changed (then re-analysed), now resolved.
    later = old_notification_session(
        scope_alert("f1", "resolved", analysed=False, ends_at="2026-11-29T06:58:00+00:00")
    )

    migration.episodes_from_sessions(apps, None)

    episodes = {episode.fingerprint: episode for episode in AlertEpisode.objects.all()}
    assert set(episodes) == {"f1", "f2"}
    assert (episodes["f1"].report, episodes["f1"].state) == (first, "resolved")
    assert episodes["f1"].ends_at.isoformat() == "2026-11-29T06:58:00+00:00"
    assert (episodes["f2"].report, episodes["f2"].state) == (None, "resolved")
    first.refresh_from_db()
    later.refresh_from_db()
    assert [a["episode_id"] for a in first.alert_scope["alerts"]] == [episodes["f1"].pk, episodes["f2"].pk]
    assert later.alert_scope["alerts"][0]["episode_id"] == episodes["f1"].pk
