"""The AIOps endpoints: `POST /api/ai_ops` (signed-in users) and `POST /api/alertmanager/webhook`.

Both answer 202 `{sessionId, status, traceUrl}` at once; the analysis runs in the background.
The webhook authenticates Alertmanager with `Authorization: Bearer <DIAGNOSIS_ALERTMANAGER_TOKEN>`.
Without a configured token the webhook does not exist (404): Alertmanager does not retry a 4xx,
so a receiver pointed at a disabled deployment fails visibly instead of retrying forever.
Bounds of its own: `DIAGNOSIS["ALERTMANAGER_RATE"]` notifications per token (429, counted in the cache),
`DIAGNOSIS["ALERTMANAGER_FAILED_TOKEN_RATE"]` failed token attempts per client address (429, counted in
the database every web process shares), and a body over `DIAGNOSIS["ALERTMANAGER_MAX_BYTES"]` is refused
with 413 before anything is parsed or stored.
"""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import APIException, AuthenticationFailed, NotFound, ParseError, Throttled
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from aiops.rate_limits import FailedTokenThrottle
from aiops.serializers import (
    AiOpsRequestSerializer,
    AlertmanagerAcceptedSerializer,
    AlertmanagerNotificationSerializer,
)
from aiops.services import aiops_start, alertmanager_notification_receive
from diagnosis.api import RATE_LIMITED, service_errors_as_api_errors, session_accepted_response
from diagnosis.input_rules import InputRejected, json_loads_bounded
from diagnosis.serializers import ChatAcceptedSerializer, trace_url
from diagnosis.services.invocations import storable

ALERTMANAGER = "alertmanager"
WEBHOOK_DISABLED = "Alertmanager webhook 未启用（未配置 DIAGNOSIS_ALERTMANAGER_TOKEN）"


class AlertmanagerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>` against `DIAGNOSIS["ALERTMANAGER_TOKEN"]`; unset → 404."""

    keyword = b"bearer"

    def authenticate(self, request: Request):
        expected = settings.DIAGNOSIS.get("ALERTMANAGER_TOKEN")
        if not expected:
            raise NotFound(WEBHOOK_DISABLED)
        parts = get_authorization_header(request).split()
        if not parts:
            return None
        failures = FailedTokenThrottle()
        # Checked before the token: while an address is over its failures, a right guess is refused too.
        if failures.exhausted(request):
            raise Throttled(wait=failures.wait())
        if len(parts) != 2 or parts[0].lower() != self.keyword:
            failures.failure_count()
            raise AuthenticationFailed("Authorization 头应为 Bearer <token>")
        if not hmac.compare_digest(parts[1], expected.encode()):
            failures.failure_count()
            raise AuthenticationFailed("Alertmanager token 无效")
        return AnonymousUser(), ALERTMANAGER

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="alertmanager"'


class AlertmanagerTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes the webhook's authentication."""

    target_class = AlertmanagerTokenAuthentication
    name = "alertmanagerBearer"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "DIAGNOSIS_ALERTMANAGER_TOKEN"}


class AlertmanagerJSONParser(JSONParser):
    """The webhook's JSON under the input rule's bounds, except that a NUL or a lone surrogate in a
    string (a label's value or name) ends as U+FFFD, as in tool output: Alertmanager drops a
    notification answered 400 with every good alert of its group, and never sends it again."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return storable(json_loads_bounded(stream.read(), nul_allowed=True))
        except InputRejected as error:
            raise ParseError(str(error)) from error


class NotificationTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "notification_too_large"


class AlertmanagerTokenThrottle(SimpleRateThrottle):
    """`DIAGNOSIS["ALERTMANAGER_RATE"]` per bearer token (hashed: the cache never holds the secret)."""

    scope = "alertmanager"

    def get_rate(self) -> str:
        return settings.DIAGNOSIS["ALERTMANAGER_RATE"]

    def get_cache_key(self, request: Request, view) -> str:
        token = get_authorization_header(request).split()[-1]
        return self.cache_format % {"scope": self.scope, "ident": hashlib.sha256(token).hexdigest()}


class IsAlertmanager(BasePermission):
    def has_permission(self, request: Request, view) -> bool:
        return request.auth == ALERTMANAGER


class AiOpsApi(APIView):
    @extend_schema(
        request=AiOpsRequestSerializer,
        responses={202: ChatAcceptedSerializer, 429: OpenApiResponse(description=RATE_LIMITED)},
    )
    def post(self, request: Request) -> Response:
        """Analyse the firing alerts (all, or those matching the filter) into one report, in the background.

        One click may start a diagnosis per firing alert: it counts that much against the chat's rate limit.
        """
        serializer = AiOpsRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with service_errors_as_api_errors():
            session = aiops_start(owner=request.user, **serializer.validated_data)
        return session_accepted_response(session)


class AlertmanagerWebhookApi(APIView):
    parser_classes = [AlertmanagerJSONParser]
    authentication_classes = [AlertmanagerTokenAuthentication]
    permission_classes = [IsAlertmanager]
    throttle_classes = [AlertmanagerTokenThrottle]

    @extend_schema(
        request=AlertmanagerNotificationSerializer,
        responses={
            202: AlertmanagerAcceptedSerializer,
            401: OpenApiResponse(description="Missing or wrong bearer token."),
            404: OpenApiResponse(description=WEBHOOK_DISABLED),
            413: OpenApiResponse(description="Body larger than the webhook's size limit (1 MiB)."),
            429: OpenApiResponse(
                description="More notifications than the per-token rate (120 a minute), or this "
                "address sent more wrong tokens than its rate (10 a minute)."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        """Alertmanager webhook (version 4): new firing episodes are analysed in the background, resolved
        ones closed on their report.

        An episode is `fingerprint + startsAt`: one already seen (re-sent, in another group, or
        delivered twice at once) starts nothing; the answer then names the report covering it.
        """
        _refuse_oversized(request)
        serializer = AlertmanagerNotificationSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        outcome = alertmanager_notification_receive(notification=serializer.validated_data)
        session = outcome.session
        body = {
            "sessionId": session.session_id if session else None,
            "status": session.status if session else None,
            "traceUrl": trace_url(session.session_id) if session else None,
            "episodes": {"new": outcome.new, "known": outcome.known, "resolved": outcome.resolved},
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)


def _refuse_oversized(request: Request) -> None:
    limit = settings.DIAGNOSIS["ALERTMANAGER_MAX_BYTES"]
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    # The declared length first: a large body is never read; then what really arrived.
    if declared > limit or len(request.body) > limit:
        raise NotificationTooLarge(f"通知体超过 {limit} 字节上限，未保存任何内容")
