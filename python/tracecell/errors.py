"""Exceptions raised by the tracecell client.

Every error of the server (``{"error": {"code", "message"}}``, codes listed in
api/openapi.yaml) becomes a :class:`TracecellError` subclass chosen by its code;
``code``, ``status`` and ``message`` keep what the server said.
"""
from __future__ import annotations

from typing import Dict, Optional, Type


class TracecellError(Exception):
    """Base class of every error raised by this package."""

    def __init__(self, message: str, *, code: str = "", status: int = 0, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.message = message
        #: The server's stable error code (e.g. ``session_busy``), or "" for client-side errors.
        self.code = code
        #: The HTTP status, or 0 when no answer was received.
        self.status = status
        #: Seconds from the server's Retry-After header, when it sent one.
        self.retry_after = retry_after


class ServerUnavailable(TracecellError):
    """The server cannot be reached, is shutting down, or could not start a worker (503)."""


class ProtocolError(TracecellError):
    """The server's answer was not the HTTP/JSON the API specifies."""


class AuthError(TracecellError):
    """Missing or wrong bearer token (401 ``unauthorized``)."""


class InvalidRequest(TracecellError):
    """The request was refused as malformed (400: ``invalid_field``, ``path_outside_sandbox``, ...)."""


class AccessDenied(TracecellError):
    """The policy refuses the operation (403: ``read_denied``, ``source_unreadable``, ``symlink_refused``)."""


class NotFound(TracecellError):
    """Something named by the request does not exist (404)."""


class SessionNotFound(NotFound):
    """No session has this id on the cell that answered (404 ``session_not_found``: never created there;
    404 ``session_deleted``); the message names the cell."""


class SessionGone(SessionNotFound):
    """The session's state is gone (410): it expired after its idle timeout (``session_expired``), or was
    lost when its cell stopped or was killed (``session_lost``). The message names the cell, the boot and when."""


class WrongCell(NotFound):
    """The session id was minted by another cell, named in the message (421 ``wrong_cell``): the request was
    routed to the wrong cell."""


class Conflict(TracecellError):
    """The request conflicts with the state of the server (409)."""


class SessionBusy(Conflict):
    """The session is running another execution or a reset (409 ``session_busy``; requests are not queued)."""


class SessionExists(Conflict):
    """A session with this id already exists (409 ``session_exists``)."""


class LimitExceeded(TracecellError):
    """A server limit was hit: body or copy size (413), session count (429) or disk space (507)."""


class ServerError(TracecellError):
    """The server failed to carry out the request (500)."""


#: The server's error codes, exactly the enum of api/openapi.yaml's Error schema (Go server.ErrorCodes; a test
#: checks), and the exception each one raises.
ERROR_CODES: Dict[str, Type[TracecellError]] = {
    # 400
    "invalid_json": InvalidRequest,
    "bad_body": InvalidRequest,
    "invalid_field": InvalidRequest,
    "invalid_archive": InvalidRequest,
    "invalid_path": InvalidRequest,
    "invalid_id": InvalidRequest,
    "path_outside_sandbox": InvalidRequest,
    "is_a_directory": InvalidRequest,
    "not_a_directory": InvalidRequest,
    "not_a_regular_file": InvalidRequest,
    # 401
    "unauthorized": AuthError,
    # 403
    "read_denied": AccessDenied,
    "source_unreadable": AccessDenied,
    "symlink_refused": AccessDenied,
    "forbidden_host": AccessDenied,
    "cross_origin": AccessDenied,
    "other_user": AuthError,
    # 404
    "session_not_found": SessionNotFound,
    "session_deleted": SessionNotFound,
    # 410, 421
    "session_expired": SessionGone,
    "session_lost": SessionGone,
    "wrong_cell": WrongCell,
    "file_not_found": NotFound,
    "source_not_found": NotFound,
    "no_such_endpoint": NotFound,
    # 409
    "session_busy": SessionBusy,
    "session_exists": SessionExists,
    "destination_is_directory": Conflict,
    "source_changed": Conflict,
    "destination_changed": Conflict,
    # 413, 429, 507
    "body_too_large": LimitExceeded,
    "copy_too_large": LimitExceeded,
    "archive_too_large": LimitExceeded,
    "too_many_sessions": LimitExceeded,
    "no_space": LimitExceeded,
    # 500
    "execute_failed": ServerError,
    "reset_failed": ServerError,
    "copy_failed": ServerError,
    "file_error": ServerError,
    "sandbox_unavailable": ServerError,
    "internal": ServerError,
    # 503
    "worker_start_failed": ServerUnavailable,
    "cancelled": ServerUnavailable,
    "shutting_down": ServerUnavailable,
    "draining": ServerUnavailable,
}

_BY_STATUS: Dict[int, Type[TracecellError]] = {
    400: InvalidRequest,
    401: AuthError,
    403: AccessDenied,
    404: NotFound,
    409: Conflict,
    410: SessionGone,
    421: WrongCell,
    413: LimitExceeded,
    429: LimitExceeded,
    500: ServerError,
    503: ServerUnavailable,
    507: LimitExceeded,
}


def error_for(status: int, code: str, message: str, retry_after: Optional[float] = None) -> TracecellError:
    """The exception for an error answer: by code, else by HTTP status, else :class:`TracecellError`."""
    cls = ERROR_CODES.get(code) or _BY_STATUS.get(status) or TracecellError
    if not message:
        message = "the server answered HTTP %d%s" % (status, " (%s)" % code if code else "")
    return cls(message, code=code, status=status, retry_after=retry_after)


class ClientTimeout(TracecellError):
    """No answer arrived within the client's own ``timeout`` (the server may still be running the request)."""
