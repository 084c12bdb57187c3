"""The ServiceError tree and the one problem+json (RFC 9457) renderer.

Every error a route can give is a subclass with a stable ``code`` and HTTP ``status``;
routes declare theirs with :func:`responses` so they appear in the OpenAPI document.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Problem(BaseModel):
    """An RFC 9457 problem document with a stable ``code``; extra fields name the culprit."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    code: str


class ServiceError(Exception):
    """Base of every error the service reports to a client."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal error"

    def __init__(
        self, detail: str | None = None, *, headers: dict[str, str] | None = None, **fields: Any
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.fields = fields
        self.headers = headers

    def to_problem(self) -> dict[str, Any]:
        """The problem+json body."""
        body: dict[str, Any] = {
            "type": f"https://boinc-gateway.dev/problems/{self.code}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }
        body.update(self.fields)
        return body


def _error(name: str, status: int, code: str, title: str) -> type[ServiceError]:
    return type(name, (ServiceError,), {"status": status, "code": code, "title": title})


Unauthorized = _error("Unauthorized", 401, "unauthorized", "Missing or invalid token")
Forbidden = _error("Forbidden", 403, "forbidden", "Admin rights required")
AppForbidden = _error("AppForbidden", 403, "app_forbidden", "Not allowed to use this app")
QuotaExceeded = _error("QuotaExceeded", 403, "quota_exceeded", "Quota exceeded")
NotFound = _error("NotFound", 404, "not_found", "Not found")
FileNotFound = _error("FileNotFound", 404, "file_not_found", "No such file")
AppNotFound = _error("AppNotFound", 404, "app_not_found", "No such app")
BatchNotFound = _error("BatchNotFound", 404, "batch_not_found", "No such batch")
JobNotFound = _error("JobNotFound", 404, "job_not_found", "No such job")
OutputNotFound = _error("OutputNotFound", 404, "output_not_found", "No such output")
UserNotFound = _error("UserNotFound", 404, "user_not_found", "No such user")
BatchExists = _error("BatchExists", 409, "batch_exists", "Batch exists with other content")
JobExists = _error("JobExists", 409, "job_exists", "Job name already used")
AppExists = _error("AppExists", 409, "app_exists", "App exists")
UserExists = _error("UserExists", 409, "user_exists", "User exists")
BatchState = _error("BatchState", 409, "batch_state", "Operation not allowed in this batch state")
Md5Mismatch = _error("Md5Mismatch", 400, "md5_mismatch", "Content does not match its MD5")
MissingInputFiles = _error(
    "MissingInputFiles", 400, "missing_input_files", "Input files are not stored"
)
InvalidRequest = _error("InvalidRequest", 400, "invalid_request", "Invalid request")
BoincAppMismatch = _error(
    "BoincAppMismatch", 400, "boinc_app_mismatch", "App does not match its BOINC app"
)
InvalidCursor = _error("InvalidCursor", 400, "invalid_cursor", "Invalid cursor")
FileTooLarge = _error("FileTooLarge", 413, "file_too_large", "File too large")
RangeNotSatisfiable = _error(
    "RangeNotSatisfiable", 416, "range_not_satisfiable", "Range not satisfiable"
)
IncompleteUpload = _error("IncompleteUpload", 400, "incomplete_upload", "Upload was cut short")
MethodNotAllowed = _error("MethodNotAllowed", 405, "method_not_allowed", "Method not allowed")
Unavailable = _error("Unavailable", 503, "unavailable", "Service unavailable")
StorageFull = _error("StorageFull", 507, "storage_full", "Insufficient storage")


def responses(*errors: type[ServiceError]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` declaring the given errors (plus 401 and 503) as problem+json."""
    by_status: dict[int, list[type[ServiceError]]] = {}
    for err in (Unauthorized, *errors, Unavailable):
        by_status.setdefault(err.status, []).append(err)
    out: dict[int | str, dict[str, Any]] = {}
    for status, errs in sorted(by_status.items()):
        codes = ", ".join(sorted({e.code for e in errs}))
        out[status] = {
            "description": f"{errs[0].title if len(errs) == 1 else 'Error'} (code: {codes})",
            "content": {
                "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
            },
        }
    return out


_BY_STATUS: dict[int, type[ServiceError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    413: FileTooLarge,
    416: RangeNotSatisfiable,
    503: Unavailable,
}


def from_status(status: int, detail: str) -> ServiceError:
    """The ServiceError for a framework-raised HTTP error (routing, form parsing)."""
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = _error("HttpError", status, f"http_{status}", "HTTP error")
    return cls(detail)
