"""The JSON API: chat, session list, trace, verification of claims (feedback: `feedback.api`)."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, Throttled, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from diagnosis.models import DiagnosisSession
from diagnosis.openapi import Oas30PydanticExtension  # noqa: F401  (registers itself with drf-spectacular)
from diagnosis.selectors.claims_verification import claims_verification_get
from diagnosis.selectors.sessions import ENDED_STATUSES, session_ended_within, session_list, session_rows
from diagnosis.selectors.trace import session_trace_for_user
from diagnosis.serializers import (
    SESSION_LIST_COLUMNS,
    ChatAcceptedSerializer,
    ChatRequestSerializer,
    ClaimsVerificationAnswer,
    SessionListFilterSerializer,
    SessionSummarySerializer,
    TracePageQuerySerializer,
    TraceSerializer,
    claims_verification_answer,
    trace_url,
)
from diagnosis.services.claims_verification import ClaimsToVerify, claims_verification_start
from diagnosis.services.sessions import SessionRateLimited, SessionsInFlight, session_start

NOT_FOUND_MESSAGE = _("No such diagnosis session.")
RATE_LIMITED = "Too many sessions started lately (30 a minute per user); see Retry-After."
TRACE_RATE_LIMITED = "Too many trace reads lately (120 a minute per user); see Retry-After."
VERIFY_REFUSED = "Too many sessions started lately (see Retry-After), or 3 of yours queued or running."
VERIFY_NOT_ENDED = "The check is still queued or running: the same body with its status and links, no claim."


class RateLimited(Throttled):
    """429 with the service's message as is and its wait as `Retry-After`."""

    def __init__(self, error: SessionRateLimited):
        super().__init__(detail=error.message)
        self.wait = error.retry_after


@contextmanager
def service_errors_as_api_errors():
    """Services speak Django (ValidationError, DoesNotExist), rate limits and the in-flight cap; the API
    answers 400 / 404 / 429."""
    try:
        yield
    except DjangoValidationError as error:
        raise ValidationError(
            error.message_dict if hasattr(error, "error_dict") else error.messages
        ) from error
    except DiagnosisSession.DoesNotExist as error:
        raise NotFound(NOT_FOUND_MESSAGE) from error
    except SessionRateLimited as error:
        raise RateLimited(error) from error
    except SessionsInFlight as error:
        raise Throttled(detail=error.message) from error


def session_accepted_response(session: DiagnosisSession) -> Response:
    """202 `{sessionId, status, traceUrl}`: the session runs in the background, poll its trace."""
    body = {
        "sessionId": session.session_id,
        "status": session.status,
        "traceUrl": trace_url(session.session_id),
    }
    return Response(body, status=status.HTTP_202_ACCEPTED)


class ChatApi(APIView):
    @extend_schema(
        request=ChatRequestSerializer,
        responses={202: ChatAcceptedSerializer, 429: OpenApiResponse(description=RATE_LIMITED)},
    )
    def post(self, request: Request) -> Response:
        """Start a diagnosis in the background; poll `traceUrl` for its progress and result."""
        serializer = ChatRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with service_errors_as_api_errors():
            session = session_start(
                query=serializer.validated_data["message"],
                owner=request.user,
                session_id=serializer.validated_data.get("session_id"),
            )
        return session_accepted_response(session)


class SessionCursorPagination(CursorPagination):
    """Newest first, page by page through `next` / `previous` links.

    A cursor is a position in the list, not a page number: every page is one index range however
    deep it is, no page is counted, and sessions added meanwhile never shift a page.
    """

    ordering = ("-created_at", "-id")
    page_size = 20


@extend_schema(parameters=[SessionListFilterSerializer])
class SessionListApi(generics.ListAPIView):
    """The caller's sessions (staff: everyone's), newest first; follow `next` for older ones."""

    serializer_class = SessionSummarySerializer
    pagination_class = SessionCursorPagination

    def get_queryset(self):
        filters = SessionListFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        # The list's own columns only: a session's self_evaluation alone is tens of KB.
        return session_rows(
            queryset=session_list(user=self.request.user, filters=filters.validated_data).only(
                *SESSION_LIST_COLUMNS
            )
        )


class TraceReadThrottle(SimpleRateThrottle):
    """`DIAGNOSIS["TRACE_RATE"]` trace reads per user, the API's and MCP `session_trace`'s together."""

    scope = "trace"

    def get_rate(self) -> str:
        return settings.DIAGNOSIS["TRACE_RATE"]

    def get_cache_key(self, request: Request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}

    def allow_read(self, *, user) -> bool:
        """The check of a read outside DRF (MCP over stdio has no request): only its user is keyed."""
        return self.allow_request(SimpleNamespace(user=user), None)


class SessionTraceApi(APIView):
    throttle_classes = [TraceReadThrottle]

    @extend_schema(
        parameters=[TracePageQuerySerializer],
        responses={
            200: TraceSerializer,
            404: OpenApiResponse(description=NOT_FOUND_MESSAGE),
            429: OpenApiResponse(description=TRACE_RATE_LIMITED),
        },
    )
    def get(self, request: Request, session_id: str) -> Response:
        """Everything recorded about one session: steps, self-evaluation and a page of its tool
        invocations (follow `tool_invocations_page.next_page` with `?page=`), each output bounded."""
        query = TracePageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        with service_errors_as_api_errors():
            trace = session_trace_for_user(
                user=request.user, session_id=session_id, page=query.validated_data["page"]
            )
        return Response(TraceSerializer(trace).data)


def claims_verification_response(session: DiagnosisSession) -> Response:
    """200 with the outcome once the check has ended (COMPLETED or FAILED), else 202 with its state."""
    body = claims_verification_answer(session=session).model_dump(mode="json")
    ended = session.status in ENDED_STATUSES
    return Response(body, status=status.HTTP_200_OK if ended else status.HTTP_202_ACCEPTED)


class VerifyApi(APIView):
    @extend_schema(
        request=ClaimsToVerify,
        responses={
            200: ClaimsVerificationAnswer,
            202: OpenApiResponse(response=ClaimsVerificationAnswer, description=VERIFY_NOT_ENDED),
            429: OpenApiResponse(description=VERIFY_REFUSED),
        },
    )
    def post(self, request: Request) -> Response:
        """Check claims written by anyone against the team's sources: each claim with the PromQL, log
        search or alert it rests on and its time is re-run as a recorded `verify` session and judged by
        the gatekeeper, the guards and the verifier. The check runs on the worker; the request waits for
        it up to `DIAGNOSIS["MCP_WAIT_SECONDS"]` (then 202: read `result_url` later)."""
        with service_errors_as_api_errors():
            session = claims_verification_start(
                owner=request.user,
                request=request.data,
                # The request waits on the worker: one user's waits hold at most this many web threads.
                max_in_flight=settings.DIAGNOSIS["MCP_MAX_IN_FLIGHT"],
            )
        session = session_ended_within(session_pk=session.pk, seconds=settings.DIAGNOSIS["MCP_WAIT_SECONDS"])
        return claims_verification_response(session)


class VerifyResultApi(APIView):
    throttle_classes = [TraceReadThrottle]

    @extend_schema(
        responses={
            200: ClaimsVerificationAnswer,
            202: OpenApiResponse(response=ClaimsVerificationAnswer, description=VERIFY_NOT_ENDED),
            404: OpenApiResponse(description=NOT_FOUND_MESSAGE),
            429: OpenApiResponse(description=TRACE_RATE_LIMITED),
        }
    )
    def get(self, request: Request, session_id: str) -> Response:
        """A claims check's outcome (202 while it runs); reads count against the trace rate."""
        with service_errors_as_api_errors():
            session = claims_verification_get(user=request.user, session_id=session_id)
        return claims_verification_response(session)
