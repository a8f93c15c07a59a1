"""The reviewer's desk under a long history: synthetic sessions in bulk, and the requests a desk makes.

`sessions_seed` writes many finished sessions (with reviews and open user reports) fast: PostgreSQL's
COPY, batched `bulk_create` elsewhere. `desk_requests` names the pages reviewers and API clients open
most; `desk_measure` times each one (best of a few runs), counts its queries and the pages the largest
reads. Both the `bench_desk` command and the scale test use them: the command prints the times, the
test asserts the queries and pages (a count of work, not a wall time a busy machine changes).
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import quote

from django.contrib.auth import get_user_model
from django.db import connection, models
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.pagination import Cursor
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from diagnosis.api import SessionListApi
from diagnosis.models import DiagnosisSession, SessionReview
from tools.demo_questions import demo_questions

# Bad cases are the feedback app's, reached through the relation the review queue reads (diagnosis
# never imports feedback).
BadCase = DiagnosisSession.bad_case.related.related_model

BATCH = 5000
# One session every 30 s, newest now: 100,000 sessions are about five weeks of history.
SPACING = timedelta(seconds=30)
QUESTIONS = demo_questions()
# A word of the seeded questions the reviewers' search finds (the first long alphabetic one).
SEARCH_WORD = next(
    word
    for question in QUESTIONS
    for word in question.split()
    if word.isascii() and word.isalpha() and len(word) >= 6
)


def _session_values(index: int, *, owners: list[int], now, payload: str) -> dict:
    """Column values of the index-th newest session: a mix like a real history (mostly PASS)."""
    verdict = ("PASS",) * 7 + ("LOW_CONFID",) * 2 + ("REJECT",)
    failed = index % 97 == 0
    verdict = "" if failed else verdict[index % 10]
    output_type = {
        "PASS": "NORMAL",
        "LOW_CONFID": "LOW_CONFID_WITH_DISCLAIMER",
        "REJECT": "DEGRADED",
        "": "",
    }[verdict]
    severity = {"PASS": "none", "LOW_CONFID": "low_confid", "REJECT": "reject", "": ""}[verdict]
    feedback = {0: "useful", 1: "not_useful"}.get(index % 23) if not failed else None
    created = now - SPACING * index
    return {
        "session_id": f"bench-{index:07d}-{(index * 2654435761) % 2**32:08x}",
        "kind": "aiops" if index % 50 == 0 else "chat",
        "query": QUESTIONS[index % len(QUESTIONS)],
        "answer": "" if failed else "结论：已核验的证据显示告警存在。",
        "output_type": output_type,
        "status": "FAILED" if failed else "COMPLETED",
        "error": "tool source unreachable" if failed else "",
        "engine": "llm" if index % 7 == 0 else "rules",
        "rounds": 0 if failed else 1 + (verdict == "LOW_CONFID" and index % 3 == 0),
        "current_stage": "done",
        "feedback": feedback,
        "self_evaluation": {} if failed else {"verifier_evaluation": {"note": payload}},
        "verdict": verdict,
        "groundedness_score": None
        if failed
        else (1.0, 0.5, 0.0)[("PASS", "LOW_CONFID", "REJECT").index(verdict)],
        "gatekeeper_severity": severity,
        "owner_id": owners[index % len(owners)],
        "created_at": created,
        "updated_at": created + timedelta(seconds=4),
        "started_at": created,
        "finished_at": created + timedelta(seconds=4),
    }


def _copy_rows(model: type[models.Model], rows: Iterable[dict]) -> None:
    """COPY the rows into the model's table; every concrete column not given takes the field's default."""
    fields = [field for field in model._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    defaults = {field.attname: field.get_default() for field in fields}
    as_json = {field.attname for field in fields if isinstance(field, models.JSONField)}
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            values = defaults | row
            copy.write_row(
                [json.dumps(values[name]) if name in as_json else values[name] for name in defaults]
            )


def _insert(model: type[models.Model], rows: Iterator[dict]) -> None:
    if connection.vendor == "postgresql":
        _copy_rows(model, rows)
        return
    while batch := list(itertools.islice(rows, BATCH)):
        model.objects.bulk_create(model(**row) for row in batch)


def sessions_seed(*, count: int, payload_bytes: int = 2000) -> None:
    """Write `count` finished sessions by five owners; a third of the low verdicts reviewed, user reports open.

    `payload_bytes` sizes each session's `self_evaluation`, the column the lists must not fetch.
    """
    user_model = get_user_model()
    owners = [user_model.objects.get_or_create(username=f"desk-engineer-{n}")[0].pk for n in range(5)]
    now = timezone.now()
    payload = "证据" * (payload_bytes // 6)
    _insert(
        DiagnosisSession,
        (_session_values(index, owners=owners, now=now, payload=payload) for index in range(count)),
    )
    sessions = DiagnosisSession.objects.filter(session_id__startswith="bench-").values_list(
        "pk", "verdict", "feedback", "created_at"
    )
    reviews, reports = [], []
    for pk, verdict, feedback, created in sessions.iterator(chunk_size=BATCH):
        if verdict in ("LOW_CONFID", "REJECT") and pk % 3 == 0:
            opinion = "disagree" if pk % 9 == 0 else "agree"
            expected = "PASS" if opinion == "disagree" else verdict
            reviews.append(
                {"session_id": pk, "opinion": opinion, "expected_verdict": expected, "created_at": created}
            )
        if feedback == "not_useful":
            reports.append({"session_id": pk, "resolved": pk % 2 == 0, "created_at": created})
    _insert(SessionReview, iter(reviews))
    _insert(BadCase, iter(reports))
    if connection.vendor == "postgresql":
        # What autovacuum would have done by now; inside a transaction (the scale test) VACUUM cannot run.
        command = "ANALYZE" if connection.in_atomic_block else "VACUUM (ANALYZE)"
        with connection.cursor() as cursor:
            for model in (DiagnosisSession, SessionReview, BadCase):
                cursor.execute(f"{command} {connection.ops.quote_name(model._meta.db_table)}")


@dataclass(frozen=True)
class DeskRequest:
    name: str
    url: str


def _api_deep_url(*, depth: int) -> str:
    """The API page (a cursor position) holding the depth-th newest session."""
    anchor = DiagnosisSession.objects.order_by("-created_at", "-id").values_list("created_at", flat=True)[
        depth
    ]
    paginator = SessionListApi.pagination_class()
    paginator.base_url = reverse("api-sessions")
    paginator.request = Request(APIRequestFactory().get(paginator.base_url))
    return paginator.encode_cursor(Cursor(offset=0, reverse=False, position=str(anchor)))


def desk_requests(*, sessions: int) -> list[DeskRequest]:
    """The admin list, each of its filters, searches and a deep page; the API's first and a deep page."""
    changelist = reverse("admin:diagnosis_diagnosissession_changelist")
    middle = DiagnosisSession.objects.order_by("-created_at", "-id").values_list("session_id", flat=True)[
        sessions // 2
    ]
    # As the admin's own "past 7 days" link: local midnight, with its offset.
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    week_ago = quote(str(midnight - timedelta(days=7)))
    filters = [
        "needs_review=yes",
        "needs_review=disagreed",
        "status=FAILED",
        "output_type=DEGRADED",
        "verdict=LOW_CONFID",
        "gatekeeper_severity=reject",
        "feedback=not_useful",
        "feedback=none",
        "kind=aiops",
        "engine=llm",
    ]
    deep_page = sessions // 2 // 50
    return [
        DeskRequest("admin list", changelist),
        *(DeskRequest(f"admin ?{query}", f"{changelist}?{query}") for query in filters),
        DeskRequest("admin created in the past 7 days", f"{changelist}?created_at__gte={week_ago}"),
        DeskRequest("admin search: exact id", f"{changelist}?q={middle}"),
        DeskRequest("admin search: id prefix", f"{changelist}?q={middle[:13]}"),
        DeskRequest("admin search: word", f"{changelist}?q={SEARCH_WORD}"),
        DeskRequest(f"admin deep page ?p={deep_page}", f"{changelist}?p={deep_page}"),
        DeskRequest("API first page", reverse("api-sessions")),
        DeskRequest(f"API page at row {sessions * 2 // 5}", _api_deep_url(depth=sessions * 2 // 5)),
    ]


@dataclass(frozen=True)
class Measurement:
    request: DeskRequest
    status_code: int
    best_ms: float
    median_ms: float
    queries: int
    query_ms: float
    # The most table and index pages one of the page's queries reads (PostgreSQL's buffer counts; None
    # elsewhere): the work a page does, which unlike its wall time does not depend on a busy machine.
    most_pages: int | None


def pages_read(query: dict) -> int | None:
    """Shared buffers (hit or read) a captured query touches, from running it again under EXPLAIN."""
    if connection.vendor != "postgresql" or not query["sql"].lstrip().upper().startswith("SELECT"):
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query['sql']}")
        plan = cursor.fetchone()[0][0]["Plan"]
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]


def history_pages() -> int:
    """Pages of the sessions table: what one sequential scan of the history reads."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size(%s) / current_setting('block_size')::int",
            [DiagnosisSession._meta.db_table],
        )
        return cursor.fetchone()[0]


def desk_measure(*, client: Client, requests: list[DeskRequest], runs: int = 3) -> list[Measurement]:
    """Every request once per pass, `runs` passes after a warm-up pass; the best and median wall times
    and the queries each made. Passes rather than one request's runs back to back, so a busy moment of
    the machine costs each request one run, not all of them."""
    for request in requests:
        client.get(request.url)
    times: dict[DeskRequest, list[float]] = {request: [] for request in requests}
    last: dict[DeskRequest, tuple[int, list[dict]]] = {}
    for _pass in range(runs):
        for request in requests:
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(request.url)
                times[request].append((time.perf_counter() - started) * 1000)
            last[request] = (response.status_code, captured.captured_queries)
    results = []
    for request in requests:
        status_code, queries = last[request]
        slowest = max((float(query["time"]) * 1000 for query in queries), default=0.0)
        results.append(
            Measurement(
                request,
                status_code,
                min(times[request]),
                statistics.median(times[request]),
                len(queries),
                slowest,
                max((pages for query in queries if (pages := pages_read(query)) is not None), default=None),
            )
        )
    return results


def desk_reviewer_client() -> Client:
    """A client signed in as a superuser (sees every session; no permission queries)."""
    user, _created = get_user_model().objects.get_or_create(
        username="desk-reviewer", defaults={"is_staff": True, "is_superuser": True}
    )
    client = Client()
    client.force_login(user)
    return client
