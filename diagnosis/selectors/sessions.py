"""Which sessions a user may see, and the lists built from them (API, chat sidebar, reviewers' admin)."""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Substr
from django.utils.text import Truncator

from diagnosis.models import DiagnosisSession, SessionReview
from tools.evidence.tool import MAX_TEXT_CHARS

SIDEBAR_SIZE = 50
# A list row shows at most this much of a session's query (as much as a question may hold); the
# session's own page shows all of it.
ROW_QUERY_CHARS = MAX_TEXT_CHARS
ENDED_STATUSES = (DiagnosisSession.Status.COMPLETED, DiagnosisSession.Status.FAILED)
# How often a caller waiting for a session reads its status: one primary-key read each time.
WAIT_POLL_SECONDS = 0.25
LIST_FILTERS = ("status", "output_type", "verdict", "feedback")
VERDICTS_NEEDING_REVIEW = ("REJECT", "LOW_CONFID")


# Reading everyone's sessions goes by the permission the admin already shows them by (the reviewers
# group has it), never by `is_staff`: a staff flag alone reads no more than its own sessions.
VIEW_ALL_PERMISSION = "diagnosis.view_diagnosissession"
# feedback's BadCase, reached through its relation (diagnosis does not import the feedback app); its own
# table is queried, not joined back to the sessions (a join read the session index once per open report).
_BAD_CASE = DiagnosisSession.bad_case.related


def user_may_view_all_sessions(*, user) -> bool:
    return user.is_active and user.has_perm(VIEW_ALL_PERMISSION)


def session_owned_queryset(*, user) -> QuerySet[DiagnosisSession]:
    """The user's own sessions: what only an owner may act on (feedback)."""
    return DiagnosisSession.objects.filter(owner=user)


def session_visible_queryset(*, user) -> QuerySet[DiagnosisSession]:
    """Holders of `VIEW_ALL_PERMISSION` see every session; members of `DIAGNOSIS_ONCALL_GROUP` their own
    and the alert analyses nobody owns (Alertmanager's reports); everyone else only their own (another
    user's is simply not there)."""
    if user_may_view_all_sessions(user=user):
        return DiagnosisSession.objects.all()
    if is_oncall(user=user):
        return DiagnosisSession.objects.filter(Q(owner=user) | _unowned_alert_analyses())
    return session_owned_queryset(user=user)


def is_oncall(*, user) -> bool:
    group = settings.DIAGNOSIS.get("ONCALL_GROUP")
    return bool(group) and user.is_authenticated and user.groups.filter(name=group).exists()


def _unowned_alert_analyses() -> Q:
    return Q(kind=DiagnosisSession.Kind.AIOPS, owner__isnull=True)


def session_get(*, user, session_id: str) -> DiagnosisSession:
    """The session if the user may see it; `DiagnosisSession.DoesNotExist` otherwise."""
    return session_visible_queryset(user=user).get(session_id=session_id)


def session_list(*, user, filters: dict) -> QuerySet[DiagnosisSession]:
    """The user's sessions, newest first, narrowed by any of `LIST_FILTERS` given a value."""
    lookups = {name: filters[name] for name in LIST_FILTERS if filters.get(name)}
    return session_visible_queryset(user=user).filter(**lookups).order_by("-created_at", "-id")


def session_rows(*, queryset: QuerySet[DiagnosisSession]) -> QuerySet[DiagnosisSession]:
    """The sessions with `query_head`, the start of each query, in place of the query: a list reads
    no more of a long one (a tool call's arguments stored before they were bounded) than it shows."""
    return queryset.defer("query", "answer_record").annotate(
        query_head=Substr("query", 1, ROW_QUERY_CHARS + 1)
    )


def row_query(session: DiagnosisSession) -> str:
    """The query as a row of `session_rows` shows it: cut with an ellipsis past `ROW_QUERY_CHARS`."""
    return Truncator(session.query_head).chars(ROW_QUERY_CHARS)


def session_sidebar(*, user) -> list[DiagnosisSession]:
    """The user's own recent conversations for the chat sidebar (reviewers too: it is their chat), and
    for readers of every session and on-call members the alert analyses nobody owns (Alertmanager's
    reports).

    An AIOps analysis is one conversation: its per-alert sessions are reached from its report. A single
    tool call (an MCP client's) and a check of claims are no conversation: their links, the API and the
    admin reach them.
    """
    mine = Q(owner=user)
    if user_may_view_all_sessions(user=user) or is_oncall(user=user):
        mine |= _unowned_alert_analyses()
    return list(
        DiagnosisSession.objects.filter(mine, parent__isnull=True)
        .exclude(kind__in=(DiagnosisSession.Kind.TOOL, DiagnosisSession.Kind.VERIFY))
        .only("session_id", "query", "status", "output_type", "created_at")
        .order_by("-created_at", "-id")[:SIDEBAR_SIZE]
    )


def session_review_annotated(*, queryset: QuerySet[DiagnosisSession]) -> QuerySet[DiagnosisSession]:
    """Adds `reviewed`, `disagreed` and `has_open_bad_case` as subqueries: no per-row queries in lists."""
    reviews = SessionReview.objects.filter(session=OuterRef("pk"))
    return queryset.annotate(
        reviewed=Exists(reviews),
        disagreed=Exists(reviews.filter(opinion=SessionReview.Opinion.DISAGREE)),
        has_open_bad_case=Exists(
            _BAD_CASE.related_model.objects.filter(**{_BAD_CASE.field.name: OuterRef("pk"), "resolved": False})
        ),
    )


def needs_review_condition() -> Q:
    """The reviewers' queue, for a queryset from `session_review_annotated`.

    A session needs review while nobody has reviewed it and the verifier did not pass it
    (REJECT / LOW_CONFID), or while a user's not_useful report is unresolved (a review resolves
    it, even one recorded before the report arrived).
    """
    unreviewed_low_verdict = Q(reviewed=False, verdict__in=VERDICTS_NEEDING_REVIEW)
    open_user_report = Q(feedback=DiagnosisSession.Feedback.NOT_USEFUL, has_open_bad_case=True)
    return unreviewed_low_verdict | open_user_report


def session_ended_within(*, session_pk: int, seconds: float) -> DiagnosisSession:
    """The session once a worker has ended it, or as it is when `seconds` have passed.

    Its status is read every `WAIT_POLL_SECONDS`, each read a statement of its own: no transaction is
    held open while the worker runs it, and every read sees what the worker has committed."""
    deadline = time.monotonic() + seconds
    ended = DiagnosisSession.objects.filter(pk=session_pk, status__in=ENDED_STATUSES)
    while not ended.exists():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(WAIT_POLL_SECONDS, left))
    return DiagnosisSession.objects.get(pk=session_pk)
