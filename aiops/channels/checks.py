"""System check of the chat channels (`manage.py check`)."""

from django.conf import settings
from django.core.checks import Warning, register

from aiops.channels import channels_configured
from aiops.channels.base import is_absolute

CHAT_WITHOUT_ADDRESS = "aiops.W001"


@register()
def chat_channels_without_site_address(app_configs, **kwargs) -> list[Warning]:
    """A chat app opens only an absolute link: without the site's address a message cannot link its
    session (it names the session instead)."""
    chats = [channel.label for channel in channels_configured() if channel.name != "webhook"]
    if chats and not is_absolute(settings.DIAGNOSIS.get("PUBLIC_URL", "")):
        return [
            Warning(
                f"Chat channels ({', '.join(chats)}) are configured but the site has no public address: "
                "their messages cannot link to the sessions.",
                hint="Serve behind TLS with DJANGO_SECURE=1 and the site's host first in DJANGO_ALLOWED_HOSTS.",
                id=CHAT_WITHOUT_ADDRESS,
            )
        ]
    return []
