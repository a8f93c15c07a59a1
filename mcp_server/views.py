"""`/mcp`: the MCP server over Streamable HTTP, for the same users and with the same permissions as the
JSON API."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from mcp_server.http import mcp_response
from mcp_server.results import site_url_default
from mcp_server.server import Caller


class BearerTokenAuthentication(TokenAuthentication):
    """The API's DRF token, sent the way MCP clients send one: `Authorization: Bearer <token>`."""

    keyword = "Bearer"


# MCP's own protocol, described by its specification rather than the OpenAPI schema.
@extend_schema(exclude=True)
class McpApi(APIView):
    """Without a valid token: 401 with `WWW-Authenticate: Bearer`, before any MCP message is read.

    POST only: stateless, there is no stream for a GET to open and no session for a DELETE to end, and
    the protocol has the server answer both 405 then.
    """

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [IsAuthenticated]

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # The transport answers `Accept` itself (JSON or an event stream); DRF renders only refusals.
        return super().perform_content_negotiation(request, force=True)

    def post(self, request: Request) -> HttpResponse:
        # Links in results point where the product is published, else where this request reached it.
        site_url = site_url_default() or request.build_absolute_uri("/").removesuffix("/")
        return mcp_response(request=request, caller=Caller(user=request.user, site_url=site_url))
