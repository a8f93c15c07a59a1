"""Notices in the team's chat apps: each chat channel (Feishu/Lark custom bot, DingTalk robot, WeCom
group robot, Slack incoming webhook) delivers a report and a flapping group's notices to a local
stand-in that checks the service's documented body, signature and size (tests/chat_receivers.py),
beside the generic JSON webhook. A message opens with the conclusion, then the alert's state and
severity and a link to its session; labels and findings show as written, never as a link or a mention.
A wrong secret is refused there as the service refuses it and shows as a failed delivery in the admin,
while the other channels deliver. On the demo world and the shop world."""

import httpx2
import pytest
from django.core import checks
from django.urls import reverse
from django_q.conf import Conf
from django_q.models import Schedule

from aiops.channels import CHANNELS
from aiops.channels.checks import CHAT_WITHOUT_ADDRESS
from aiops.delivery import delivery_attempt, delivery_queue
from aiops.models import AlertEpisode, ReportDelivery
from aiops.report import AlertSubject
from aiops.services import flap_settle_check
from diagnosis.evaluation.fixtures import WORLDS_DIR, fixture_sources, world_tools
from diagnosis.models import DiagnosisSession
from tests.aiops.support import DEMO_NOW, TOKEN, alert, flap, notification, webhook_post
from tests.chat_receivers import (
    DingTalkRobot,
    FeishuBot,
    SlackWebhook,
    WeComRobot,
    markdown_links,
    markdown_rendered,
)
from tests.factories import DiagnosisSessionFactory, StaffUserFactory
from tests.notify_receiver import NotifyReceiver

pytestmark = pytest.mark.django_db

FEISHU_SECRET = "feishu-bot-signing-secret"
DINGTALK_SECRET = "SECdingtalk0robot0signing0secret"
SITE = "https://aiops.example"
WORLDS = {
    "demo": lambda **kwargs: alert(
        "HighCPUUsage", "payment-service", fingerprint="a1b2c3d4e5f60718", **kwargs
    ),
    "shop": lambda **kwargs: alert(
        "KubePodCrashLooping",
        "checkout",
        fingerprint="5e0c0ffee0000001",
        labels={
            "service": "checkout",
            "namespace": "shop",
            "pod": "checkout-6f7d9-abcde",
            "severity": "critical",
        },
        **kwargs,
    ),
}


@pytest.fixture
def bots():
    with (
        FeishuBot(secret=FEISHU_SECRET) as feishu,
        DingTalkRobot(secret=DINGTALK_SECRET) as dingtalk,
        WeComRobot() as wecom,
        SlackWebhook() as slack,
    ):
        yield {"feishu": feishu, "dingtalk": dingtalk, "wecom": wecom, "slack": slack}


@pytest.fixture
def webhook():
    with NotifyReceiver() as receiver:
        yield receiver


@pytest.fixture(autouse=True)
def channel_settings(settings, bots, webhook):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {
        "DEMO_NOW": DEMO_NOW,
        "ENGINE": "rules",
        "ALERTMANAGER_TOKEN": TOKEN,
        "NOTIFY_URL": webhook.url,
        "NOTIFY_FEISHU_URL": bots["feishu"].url,
        "NOTIFY_FEISHU_SECRET": FEISHU_SECRET,
        "NOTIFY_DINGTALK_URL": bots["dingtalk"].url,
        "NOTIFY_DINGTALK_SECRET": DINGTALK_SECRET,
        "NOTIFY_WECOM_URL": bots["wecom"].url,
        "NOTIFY_SLACK_URL": bots["slack"].url,
        "NOTIFY_RETRY_DELAYS": [20, 60],
        "PUBLIC_URL": SITE,
        "FLAP_WINDOW_MINUTES": 30,
        "FLAP_EPISODES": 3,
        "FLAP_REPEAT_MINUTES": 60,
    }


@pytest.fixture(params=["demo", "shop"])
def world(request, settings, channel_settings):
    """The alert of the world (a maker of its notices' alerts), its sources answering."""
    if request.param == "shop":
        data = world_tools("shop").source_data()
        settings.DIAGNOSIS = settings.DIAGNOSIS | {
            "VOCABULARY_FILE": str(WORLDS_DIR / "shop" / "vocabulary.json"),
            **fixture_sources(data, config=settings.DIAGNOSIS),
        }
    return WORLDS[request.param]


@pytest.fixture
def committed(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


def test_each_chat_channel_delivers_a_report_opening_with_the_conclusion_state_severity_and_link(
    world, bots, webhook, committed
):
    with committed():
        response = webhook_post(notification(world()))

    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    child = report.children.get()
    [analysed] = report.alert_scope["alerts"]
    label = AlertSubject.of(analysed).label
    assert analysed["summary"]
    for name, bot in bots.items():
        [received] = bot.received
        assert received.accepted, (name, received.answer)
        lines = bot.visible_lines(received.body)
        assert lines[:3] == [f"【报告完成】{label}", f"结论：{analysed['summary']}", label], name
        assert "状态 firing · 级别 critical" in lines, name
        assert f"查看会话 → {SITE}/c/{child.session_id}" in lines, name
        assert lines[-1] == f"查看完整报告 → {SITE}/c/{report.session_id}", name
    assert bots["dingtalk"].received[0].body["markdown"]["title"] == f"【报告完成】{label}"
    assert webhook.received[0].body["version"] == "1"
    deliveries = ReportDelivery.objects.filter(report=report).order_by("channel")
    assert [(d.channel, d.state, d.attempt_count) for d in deliveries] == [
        ("dingtalk", "delivered", 1),
        ("feishu", "delivered", 1),
        ("slack", "delivered", 1),
        ("webhook", "delivered", 1),
        ("wecom", "delivered", 1),
    ]


def test_each_chat_channel_tells_a_flapping_group_once_per_state(world, bots, committed):
    flap(world, committed, range(5))
    latest = AlertEpisode.objects.order_by("starts_at").last()
    with committed():
        assert flap_settle_check(report_pk=latest.report_id, episode_pk=latest.pk)

    label = AlertSubject.of(latest.report.alert_scope["alerts"][0]).label
    for name, bot in bots.items():
        assert all(received.accepted for received in bot.received), name
        messages = [bot.visible_lines(received.body) for received in bot.received]
        assert [lines[0] for lines in messages] == [
            f"【报告完成】{label}",
            f"【告警恢复】{label}",
            f"【报告完成】{label}",
            f"【告警恢复】{label}",
            f"【反复触发】{label}",
            f"【反复触发已平息】{label}",
        ], name
        flapping, settled = messages[4], messages[5]
        assert flapping[1] == f"结论：{label}：自 2026-11-29 14:30:00 起反复触发 3 次，仍在反复", name
        assert f"查看会话 → {SITE}/c/{latest.report.children.get().session_id}" in flapping, name
        assert settled[1] == f"结论：{label}：自 2026-11-29 14:30:00 起反复触发 5 次，已平息", name


def _wrong_feishu_secret(bots) -> dict:
    return {"NOTIFY_FEISHU_SECRET": "a-secret-from-another-bot"}


def _wrong_dingtalk_secret(bots) -> dict:
    return {"NOTIFY_DINGTALK_SECRET": "SECa0secret0from0another0robot"}


def _revoked_wecom_key(bots) -> dict:
    return {"NOTIFY_WECOM_URL": bots["wecom"].url.replace(WeComRobot.key, "a-revoked-robot-key")}


def _removed_slack_webhook(bots) -> dict:
    return {"NOTIFY_SLACK_URL": bots["slack"].url.replace("abcdEFGHijklMNOP", "removedHOOKtoken")}


@pytest.mark.parametrize(
    ("channel", "wrong", "http_status", "error"),
    [
        ("feishu", _wrong_feishu_secret, 200, "code 19021: "),
        ("dingtalk", _wrong_dingtalk_secret, 200, "errcode 310000: "),
        ("wecom", _revoked_wecom_key, 200, "errcode 93000: "),
        ("slack", _removed_slack_webhook, 404, "HTTP 404: no_service"),
    ],
)
def test_a_wrong_secret_is_refused_and_shows_as_a_failed_delivery_while_the_others_deliver(
    settings, client, bots, webhook, committed, channel, wrong, http_status, error
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | wrong(bots)

    with committed():
        webhook_post(notification(WORLDS["demo"]()))

    assert [received.accepted for received in bots[channel].received] == [False]
    refused = ReportDelivery.objects.get(channel=channel)
    [attempt] = refused.attempts.all()
    assert (attempt.succeeded, attempt.http_status) == (False, http_status)
    assert attempt.error.startswith(error)
    assert (refused.state, refused.attempt_count) == ("pending", 1)
    assert Schedule.objects.filter(func="aiops.tasks.delivery_attempt_task", args=f"({refused.pk},)").exists()
    others = ReportDelivery.objects.exclude(channel=channel)
    assert sorted(others.values_list("state", flat=True)) == ["delivered"] * 4
    assert len(webhook.received) == 1

    client.force_login(StaffUserFactory(is_superuser=True))
    listing = client.get(reverse("admin:aiops_reportdelivery_changelist"), {"channel": channel})
    assert [delivery.pk for delivery in listing.context["cl"].result_list] == [refused.pk]
    page = client.get(reverse("admin:aiops_reportdelivery_change", args=[refused.pk])).content.decode()
    assert refused.get_channel_display() in page and "待发送" in page and error.split(":")[0] in page
    everything = client.get(reverse("admin:aiops_reportdelivery_changelist")).content.decode()
    # The bots' addresses are their credentials: the log shows where, never the key.
    for secret in (
        FeishuBot.token,
        DingTalkRobot.access_token,
        WeComRobot.key,
        "abcdEFGHijklMNOP",
        FEISHU_SECRET,
    ):
        assert secret not in everything and secret not in page


@pytest.mark.parametrize(
    ("channel", "busy", "error"),
    [
        (
            "feishu",
            (200, '{"code": 11232, "msg": "frequency limited psm[lark.oapi.app_platform_runtime]"}'),
            "code 11232",
        ),
        (
            "dingtalk",
            (200, '{"errcode": 130101, "errmsg": "send too fast, exceed 20 times per minute"}'),
            "errcode 130101",
        ),
        ("wecom", (200, '{"errcode": 45009, "errmsg": "api freq out of limit"}'), "errcode 45009"),
        ("slack", (429, "rate_limited"), "HTTP 429: rate_limited"),
    ],
)
def test_an_error_in_the_services_answer_is_a_failed_try_retried_with_back_off(
    bots, committed, channel, busy, error
):
    bots[channel].answers = [busy]

    with committed():
        webhook_post(notification(WORLDS["demo"]()))
    delivery = ReportDelivery.objects.get(channel=channel)
    assert delivery.state == "pending" and delivery.attempts.get().error.startswith(error)
    delivery_attempt(delivery_pk=delivery.pk)  # the worker runs the retry

    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempt_count) == ("delivered", 2)
    assert [(a.number, a.succeeded) for a in delivery.attempts.all()] == [(1, False), (2, True)]
    assert [received.accepted for received in bots[channel].received] == [False, True]


@pytest.mark.parametrize(
    ("channel", "status", "answer", "refusal"),
    [
        ("feishu", 200, '{"Extra": null, "StatusCode": 0, "StatusMessage": "success"}', ""),
        ("feishu", 200, '{"code": 9499, "msg": "Bad Request", "data": {}}', "code 9499: "),
        ("dingtalk", 200, "<html>gateway</html>", "HTTP 200, not JSON: <html>gateway</html>"),
        ("wecom", 502, "Bad Gateway", "HTTP 502: Bad Gateway"),
        ("slack", 200, "invalid_blocks", "HTTP 200: invalid_blocks"),
        ("slack", 200, "ok", ""),
    ],
)
def test_a_services_answer_is_read_for_its_error(channel, status, answer, refusal):
    read = CHANNELS[channel].refusal(status=status, text=answer)

    assert read.startswith(refusal) and bool(read) == bool(refusal)


HOSTILE_SERVICE = "[x](http://evil.example/steal)<!here>"
HOSTILE_SEVERITY = '<at user_id="all">所有人</at> <@all> <!channel>'


def test_labels_show_as_written_never_as_a_link_or_a_mention(bots, committed):
    hostile = alert(
        "HighCPUUsage",
        HOSTILE_SERVICE,
        fingerprint="a1b2c3d4e5f60718",
        labels={"service": HOSTILE_SERVICE, "severity": HOSTILE_SEVERITY, "namespace": "production"},
    )

    with committed():
        webhook_post(notification(hostile))

    for name, bot in bots.items():
        [received] = bot.received
        assert received.accepted, (name, received.answer)
        lines = bot.visible_lines(received.body)
        assert f"HighCPUUsage（{HOSTILE_SERVICE}）" in lines, name
        assert f"状态 firing · 级别 {HOSTILE_SEVERITY}" in lines, name
    card = bots["feishu"].received[0].body["card"]
    # Feishu reads mentions and links in `lark_md` only: every text is `plain_text`.
    tags = {card["header"]["title"]["tag"]} | {
        e["text"]["tag"] for e in card["elements"] if e["tag"] == "div"
    }
    assert tags == {"plain_text"}
    for name in ("dingtalk", "wecom"):
        body = bots[name].received[0].body["markdown"]
        text = body.get("text") or body.get("content")
        assert markdown_rendered(text).tags <= {"h3", "p", "strong", "hr", "a"}, name
        assert set(markdown_links(text)) <= {f"{SITE}/c/{s}" for s in _session_ids()}, name
    slack = bots["slack"].received[0].body
    assert "<" not in slack["text"] and "[x](http://evil.example/steal)&lt;!here&gt;" in slack["text"]
    for block in slack["blocks"]:
        for text in [block["text"]] if "text" in block else block.get("elements") or []:
            if text["type"] == "mrkdwn":
                assert text["text"].startswith(f"<{SITE}/c/"), text


def _session_ids() -> list[str]:
    return list(DiagnosisSession.objects.values_list("session_id", flat=True))


def _many_alerts(count: int) -> list[dict]:
    """Alerts with 120-character label values of 4-byte characters and 500-character findings full of
    characters every markup escapes."""
    return [
        {
            "alert_name": f"Alert{number}" + "🔥" * 120,
            "service": "服务" * 60,
            "state": "firing",
            "labels": {"severity": "<critical>" * 12},
            "summary": "已核验（NORMAL）：" + "<[*_`]>&" * 62,
            "session_id": f"child-{number}",
        }
        for number in range(count)
    ]


def test_a_report_of_many_alerts_fits_each_services_size_limit(bots):
    report = DiagnosisSessionFactory(
        kind=DiagnosisSession.Kind.AIOPS,
        status=DiagnosisSession.Status.COMPLETED,
        alert_scope={"source": "alertmanager", "alerts": _many_alerts(60)},
    )

    for delivery in delivery_queue(report=report, event=ReportDelivery.Event.COMPLETED):
        delivery_attempt(delivery_pk=delivery.pk)

    for name, bot in bots.items():
        [received] = bot.received
        assert received.accepted, (name, received.answer)
        lines = bot.visible_lines(received.body)
        unlisted = [line for line in lines if line.startswith("另有 ")]
        assert len(unlisted) == 1 and unlisted[0].endswith(" 条告警未列出，见完整报告。"), name
    # WeCom's 4096 bytes hold one such alert, Slack's 50 blocks the ten a message lists.
    assert "另有 59 条告警未列出，见完整报告。" in bots["wecom"].visible_lines(bots["wecom"].received[0].body)
    assert "另有 50 条告警未列出，见完整报告。" in bots["slack"].visible_lines(bots["slack"].received[0].body)


def test_the_stand_ins_refuse_what_the_services_refuse(bots):
    """The checks the messages pass are real: unsigned, oversized or shapeless messages are refused."""
    unsigned = httpx2.post(bots["feishu"].url, json={"msg_type": "text", "content": {"text": "hi"}})
    assert unsigned.json()["code"] == 19021
    too_long = httpx2.post(
        bots["wecom"].url, json={"msgtype": "markdown", "markdown": {"content": "字" * 1366}}
    )
    assert too_long.json()["errcode"] == 40058
    unsigned = httpx2.post(
        bots["dingtalk"].url, json={"msgtype": "markdown", "markdown": {"title": "t", "text": "x"}}
    )
    assert unsigned.json()["errcode"] == 310000
    too_many = httpx2.post(bots["slack"].url, json={"text": "x", "blocks": [{"type": "divider"}] * 51})
    assert (too_many.status_code, too_many.text) == (400, "invalid_blocks")


def test_a_message_that_cannot_be_made_is_a_delivery_given_up_and_the_others_go(
    monkeypatch, client, bots, webhook, committed
):
    def broken(self, *, report, notice):
        raise KeyError("alert_name")

    monkeypatch.setattr("aiops.channels.feishu.FeishuChannel.payload", broken)

    with committed():
        response = webhook_post(notification(WORLDS["demo"]()))

    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    assert report.status == DiagnosisSession.Status.COMPLETED
    unmade = ReportDelivery.objects.get(channel="feishu")
    assert (unmade.state, unmade.attempts.get().error) == ("gave_up", "消息未能生成：KeyError: 'alert_name'")
    assert bots["feishu"].received == []
    assert (
        sorted(ReportDelivery.objects.exclude(channel="feishu").values_list("state", flat=True))
        == ["delivered"] * 4
    )
    client.force_login(StaffUserFactory(is_superuser=True))
    page = client.get(reverse("admin:aiops_reportdelivery_change", args=[unmade.pk])).content.decode()
    assert "消息未能生成" in page


def test_without_the_sites_address_a_message_names_the_session_and_manage_check_warns(
    settings, bots, committed
):
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PUBLIC_URL": ""}

    with committed():
        response = webhook_post(notification(WORLDS["demo"]()))

    report = DiagnosisSession.objects.get(session_id=response.data["sessionId"])
    for name, bot in bots.items():
        [received] = bot.received
        assert received.accepted, (name, received.answer)
        lines = bot.visible_lines(received.body)
        assert (
            f"会话 {report.children.get().session_id}" in lines and lines[-1] == f"报告 {report.session_id}"
        ), name
    assert CHAT_WITHOUT_ADDRESS in {message.id for message in checks.run_checks()}
    settings.DIAGNOSIS = settings.DIAGNOSIS | {"PUBLIC_URL": SITE}
    assert CHAT_WITHOUT_ADDRESS not in {message.id for message in checks.run_checks()}
