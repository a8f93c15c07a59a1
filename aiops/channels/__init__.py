"""Where notices of reports go: the generic JSON webhook and the team's chat bots (Feishu/Lark,
DingTalk, WeCom, Slack), each configured by its address (and signing secret where the service signs)
in `settings.DIAGNOSIS`. `aiops.delivery` queues one delivery per configured channel."""

from __future__ import annotations

from django.conf import settings

from aiops.channels.base import Channel
from aiops.channels.dingtalk import DingTalkChannel
from aiops.channels.feishu import FeishuChannel
from aiops.channels.slack import SlackChannel
from aiops.channels.webhook import WebhookChannel
from aiops.channels.wecom import WeComChannel

CHANNELS: dict[str, Channel] = {
    channel.name: channel
    for channel in (WebhookChannel(), FeishuChannel(), DingTalkChannel(), WeComChannel(), SlackChannel())
}


def channels_configured() -> list[Channel]:
    """The channels with an address, in `CHANNELS` order."""
    return [channel for channel in CHANNELS.values() if settings.DIAGNOSIS.get(channel.url_setting)]
