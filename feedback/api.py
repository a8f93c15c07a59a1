"""The feedback endpoint of the JSON API, mounted under /api/."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from diagnosis.api import NOT_FOUND_MESSAGE, service_errors_as_api_errors
from feedback.serializers import FeedbackRequestSerializer, FeedbackResponseSerializer
from feedback.services import feedback_record


class FeedbackApi(APIView):
    @extend_schema(
        request=FeedbackRequestSerializer,
        responses={200: FeedbackResponseSerializer, 404: OpenApiResponse(description=NOT_FOUND_MESSAGE)},
    )
    def post(self, request: Request) -> Response:
        """`useful` saves the session as a case (once); `not_useful` queues it for review."""
        serializer = FeedbackRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        with service_errors_as_api_errors():
            result = feedback_record(
                session_id=serializer.validated_data["sessionId"],
                feedback=serializer.validated_data["feedback"],
                user=request.user,
            )
        return Response({"success": result.success, "message": result.message, "caseId": result.case_id})
