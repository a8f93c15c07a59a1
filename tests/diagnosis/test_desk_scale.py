"""The reviewers' admin and the session API at 100,000 sessions on PostgreSQL: fixed queries, little work.

The history is written once for the module (COPY) and committed, then vacuumed and analysed as
autovacuum would have done on a real desk (an uncommitted history has no visibility map, so every
index scan visits the heap: more work than any deployment does), and truncated at the end. Each
request is measured by `desk_measure`, the code `manage.py bench_desk` reports with: the test asserts
what a page does (its queries, the pages they read), the command prints how long it took on the
machine it ran on.
"""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from diagnosis.management.desk_load import (
    BadCase,
    desk_measure,
    desk_requests,
    desk_reviewer_client,
    history_pages,
    pages_read,
    sessions_seed,
)
from diagnosis.models import DiagnosisSession, SessionReview
from tests.databases import skip_unless_postgresql

pytestmark = [pytest.mark.scale, pytest.mark.django_db]

SESSIONS = 100_000
# auth session, user, capped count, planner estimate (above the cap), the page of rows.
ADMIN_QUERIES = 5
# A search that is no session id: the exact-id probe first. A deep page: its ids, then its rows.
QUERIES = {"admin search: word": ADMIN_QUERIES + 1, "API first page": 3}
DEEP_QUERIES = {"admin deep page": ADMIN_QUERIES + 1, "API page at row": 3}


@pytest.fixture(scope="module")
def long_history(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        skip_unless_postgresql(why="the scale test measures PostgreSQL; SQLite is the small embedded default")
        sessions_seed(count=SESSIONS)
        try:
            yield desk_requests(sessions=SESSIONS)
        finally:
            tables = [model._meta.db_table for model in (DiagnosisSession, SessionReview, BadCase)]
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {', '.join(map(connection.ops.quote_name, tables))} CASCADE")
            get_user_model().objects.filter(username__startswith="desk-").delete()


def expected_queries(name: str) -> int:
    deep = next((count for prefix, count in DEEP_QUERIES.items() if name.startswith(prefix)), None)
    return deep or QUERIES.get(name, ADMIN_QUERIES)


def test_no_desk_query_reads_as_much_as_a_scan_of_the_history_and_each_page_makes_fixed_queries(long_history):
    """A page's rows come by index (a few hundred pages here, a few thousand where a filter probes one
    index per row); a query that scans the sessions (0.3–2 s here) reads every page of the table."""
    results = desk_measure(client=desk_reviewer_client(), requests=long_history, runs=1)
    scan = history_pages()
    table = f"a scan reads {scan} pages\n" + "\n".join(
        f"{result.request.name}: {result.status_code}, {result.queries} queries, at most {result.most_pages} pages"
        for result in results
    )
    assert [result.status_code for result in results] == [200] * len(results), table
    assert {result.request.name: result.queries for result in results} == {
        result.request.name: expected_queries(result.request.name) for result in results
    }, table
    assert [result.request.name for result in results if result.most_pages >= scan] == [], table


def test_a_query_that_scans_the_history_is_over_the_budget(long_history):
    with CaptureQueriesContext(connection) as captured:
        DiagnosisSession.objects.filter(error__contains="unreachable").count()
    assert pages_read(captured.captured_queries[-1]) >= history_pages()


def test_a_deep_admin_page_and_an_exact_id_show_the_right_sessions(long_history):
    client = desk_reviewer_client()
    by_name = {request.name: request.url for request in long_history}
    exact = next(url for name, url in by_name.items() if name == "admin search: exact id")
    found = client.get(exact).context["cl"]
    assert [session.session_id for session in found.result_list] == [exact.rsplit("q=", 1)[1]]
    assert found.result_count == 1
    deep = client.get(
        next(url for name, url in by_name.items() if name.startswith("admin deep page"))
    ).context["cl"]
    assert len(deep.result_list) == 50
    assert deep.result_count >= SESSIONS * 0.9
    assert [s.created_at for s in deep.result_list] == sorted(
        (s.created_at for s in deep.result_list), reverse=True
    )
