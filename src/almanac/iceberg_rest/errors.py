"""Failures in the Iceberg REST error model: ``{"error": {"message", "type",
"code"}}``, with the exception type names the spec gives, so every Iceberg
client raises its own matching exception (a 409 on a commit is
``CommitFailedException``, which clients answer by refreshing and retrying).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pyiceberg.catalog.rest.response import ErrorResponse, ErrorResponseMessage
from starlette.exceptions import HTTPException

from almanac.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    InputError,
    NotFoundError,
    RetryableError,
    ValidationError,
    WriteStateError,
)
from almanac.server.auth import AuthError
from almanac.server.errors import RETRY_AFTER_S, status_of

__all__ = [
    "CommitFailedError",
    "iceberg_exception",
    "iceberg_error",
    "iceberg_error_type",
    "refused",
]


class CommitFailedError(ConflictError):
    """A commit's requirement does not hold on the table as it is now (or
    another commit won the race): the client refreshes and retries."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message, attempts=1, **context)


def refused(message: str, **context: object) -> ValidationError:
    """The 400 of a change the catalog cannot express; never silently dropped."""
    return ValidationError(message, **context)


_NOT_FOUND = {
    "schema": "NoSuchNamespaceException",
    "table": "NoSuchTableException",
    "column": "BadRequestException",
    "warehouse": "NoSuchWarehouseException",
}


def iceberg_error_type(exc: CatalogError) -> tuple[str, int]:
    """The spec's exception type and HTTP status of a catalog error."""
    kind = exc.context.get("kind")
    if isinstance(exc, NotFoundError):
        name = _NOT_FOUND.get(str(kind), "NotFoundException")
        return name, 400 if name == "BadRequestException" else 404
    if isinstance(exc, AlreadyExistsError):
        if kind == "column":
            return "BadRequestException", 400
        return "AlreadyExistsException", 409
    if isinstance(exc, ValidationError) and exc.context.get("rule") == "not-empty":
        return "NamespaceNotEmptyException", 409
    if isinstance(exc, ConflictError | WriteStateError):
        return "CommitFailedException", 409
    if isinstance(exc, InputError):
        return "BadRequestException", 400
    status = status_of(exc)
    if status == 403:  # a read-only catalog: a definite refusal, not an unknown commit state
        return "ForbiddenException", 403
    if status == 503 or isinstance(exc, RetryableError):
        return "ServiceUnavailableException", 503
    return "ServerErrorException", status if status >= 500 else 500


def iceberg_error(message: str, type_: str, code: int) -> JSONResponse:
    """One error response in the spec's shape (a 503 says when to retry)."""
    body = ErrorResponse(error=ErrorResponseMessage(message=message, type=type_, code=code))
    headers = {"Retry-After": str(RETRY_AFTER_S)} if code == 503 else None
    return JSONResponse(body.model_dump(mode="json"), code, headers=headers)


_HTTP = {
    400: "BadRequestException",
    404: "NotFoundException",
    405: "MethodNotAllowedException",
    413: "BadRequestException",
}


def iceberg_exception(request: Request, exc: Exception) -> JSONResponse:
    """Any failure of an ``/iceberg`` request in the spec's error model: a
    catalog error by its kind, a token problem as ``NotAuthorizedException``
    (401) or ``ForbiddenException`` (403), a malformed request as
    ``BadRequestException``; a bug as a bare 500 (the log has it)."""
    if isinstance(exc, CatalogError):
        return iceberg_error(exc.message, *iceberg_error_type(exc))
    if isinstance(exc, AuthError):
        type_ = "NotAuthorizedException" if exc.status == 401 else "ForbiddenException"
        response = iceberg_error(exc.message, type_, exc.status)
        response.headers["WWW-Authenticate"] = exc.challenge
        return response
    if isinstance(exc, RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in exc.errors()[:5]
        )
        return iceberg_error(f"Invalid request: {problems}", "BadRequestException", 400)
    if isinstance(exc, HTTPException):
        type_ = _HTTP.get(exc.status_code, "RESTException")
        where = f"{request.method} {request.url.path[:200]}"
        message = {
            404: f"No endpoint answers {where}",
            405: f"No endpoint answers {where}; the path takes other methods",
        }.get(exc.status_code, str(exc.detail))
        response = iceberg_error(message, type_, exc.status_code)
        response.headers.update(dict(exc.headers or {}))
        return response
    return iceberg_error(
        "The server failed to answer this request; see its log", "ServerErrorException", 500
    )
