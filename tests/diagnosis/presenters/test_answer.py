"""The answer on the chat page is rendered from its record: references named from their typed refs
(linked to their evidence card when the page shows one, the raw reference in the tooltip), the
developer tokens of the text as words; a session stored before records renders its Markdown as is."""

import pytest
from django.urls import reverse

from diagnosis.pipeline.answer import AnswerRecord, AnswerRef, Conclusion, Quote, Statement
from diagnosis.presenters.answer import answer_html, answer_record_of
from diagnosis.presenters.wording import AnswerReferences
from diagnosis.services.sessions import session_start
from tests.factories import UserFactory

ALERT_REF = AnswerRef(tool_name="query_metrics", invocation_id=7, raw_path="$.alerts[0]")
LOG_REF = AnswerRef(tool_name="query_logs", invocation_id=8, raw_path="$.logs[2]")


def record_of(*quotes: Quote) -> AnswerRecord:
    return AnswerRecord(
        output_type="NORMAL",
        conclusions=[Conclusion(statement="是，HighMemoryUsage（firing）", source="demo", refs=[ALERT_REF])],
        findings=[
            Statement(claim_id="c1", text="order-service 存在 HighMemoryUsage 告警", quotes=list(quotes))
        ],
    )


def test_an_evidence_line_whose_record_is_a_card_links_to_it_instead_of_quoting_again():
    record = record_of(Quote(excerpt="HighMemoryUsage firing service=order-service", ref=ALERT_REF))

    html = answer_html(
        record,
        references=AnswerReferences(sources={7: "alertmanager"}, cards=frozenset({(7, "$.alerts[0]")})),
    )

    assert (
        '<li>证据：<a class="ref" href="#evidence-7-alerts-0" title="query_metrics #7 $.alerts[0]">'
        "Alertmanager 告警 #7 第 1 条</a></li>"
    ) in html
    assert "「HighMemoryUsage firing" not in html
    # The conclusion's tokens as words, its source named from its field.
    assert "结论：是，HighMemoryUsage（触发中） · 来源 演示数据" in html


def test_an_evidence_line_without_its_card_keeps_its_quote_and_names_its_reference():
    record = record_of(Quote(excerpt="[ERROR] payments timed out <b>", ref=LOG_REF))

    html = answer_html(record, references=AnswerReferences(sources={8: "loki"}))

    assert "「[ERROR] payments timed out &lt;b&gt;」" in html
    assert '（来源：<span class="ref" title="query_logs #8 $.logs[2]">Loki 日志 #8 第 3 条</span>）' in html


def test_a_mark_written_by_a_tool_places_no_reference():
    record = record_of(Quote(excerpt="line \ue000x.0\ue001 \ue0000\ue001", ref=LOG_REF))

    html = answer_html(record, references=AnswerReferences())

    assert html.count('class="ref"') == 1


def test_the_models_prose_is_escaped_markdown_with_words():
    record = AnswerRecord(output_type="NORMAL", prose="**结论** <script>x</script> 告警（firing）")

    html = answer_html(record, references=AnswerReferences())

    assert html == "<p><strong>结论</strong> &lt;script&gt;x&lt;/script&gt; 告警（触发中）</p>"


@pytest.mark.django_db
def test_a_session_stored_before_records_renders_its_markdown_without_reading_references(client):
    engineer = UserFactory()
    client.force_login(engineer)
    session = session_start(
        query="只确认 order-service 是否存在 HighMemoryUsage 告警", owner=engineer, run_inline=True
    )
    session.answer_record = {}
    session.answer = "- 证据：「x」（来源：query_logs #8 $.logs[0]） <b>"
    session.save(update_fields=["answer_record", "answer"])

    page = client.get(reverse("chat-conversation", args=[session.session_id])).content.decode()

    answer = page.split('<article class="answer">')[1].split("</article>")[0]
    assert answer == "<ul>\n<li>证据：「x」（来源：query_logs #8 $.logs[0]） &lt;b&gt;</li>\n</ul>"


def test_a_record_of_another_type_is_no_chat_answer():
    assert answer_record_of({"record_type": "aiops_report", "analyses": []}) is None
    assert answer_record_of(record_of().model_dump(mode="json")) == record_of()
