"""Episodes from the notifications received before episodes existed.

Until now an Alertmanager notification was deduplicated by group key + fingerprint set
(`DiagnosisSession.idempotency_key`) and its alerts lived only in the session's `alert_scope`.
Each (fingerprint, startsAt) found there becomes an episode: the oldest session that analysed it
is its report, and it is resolved if any later notice said so. Each scope alert gets its
`episode_id`, so a resolved notice arriving after the upgrade closes it on that report.
"""

from datetime import datetime

from django.db import migrations


def episodes_from_sessions(apps, schema_editor):
    DiagnosisSession = apps.get_model("diagnosis", "DiagnosisSession")
    AlertEpisode = apps.get_model("aiops", "AlertEpisode")
    sessions = DiagnosisSession.objects.filter(
        kind="aiops", parent__isnull=True, alert_scope__source="alertmanager"
    ).order_by("created_at", "id")
    for session in sessions.iterator():
        scope = session.alert_scope
        for alert in scope.get("alerts") or []:
            if not (alert.get("fingerprint") and alert.get("starts_at")):
                continue
            ends_at = datetime.fromisoformat(alert["ends_at"]) if alert.get("ends_at") else None
            episode, _ = AlertEpisode.objects.get_or_create(
                fingerprint=alert["fingerprint"],
                starts_at=datetime.fromisoformat(alert["starts_at"]),
                defaults={
                    "alert_name": alert.get("alert_name", ""),
                    "labels": alert.get("labels") or {},
                    "annotations": alert.get("annotations") or {},
                    "state": alert.get("state", "firing"),
                    "ends_at": ends_at,
                },
            )
            if alert.get("analysed") and episode.report_id is None:
                episode.report = session
            if alert.get("state") == "resolved" and episode.state != "resolved":
                episode.state, episode.ends_at = "resolved", ends_at
            episode.save()
            alert["episode_id"] = episode.pk
        session.alert_scope = scope
        session.save(update_fields=["alert_scope"])


class Migration(migrations.Migration):
    dependencies = [("aiops", "0001_initial")]

    operations = [migrations.RunPython(episodes_from_sessions, migrations.RunPython.noop)]
