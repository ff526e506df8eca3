"""Envelope status codes and the one exception the emulator's domain logic raises.

Codes marked (spec) come from the platform's documentation; the others are the
emulator's own choice where the platform documents no code (see docs/platform.md).
"""

from __future__ import annotations

OK = 0
INTERNAL_ERROR = 115  # (spec) "Internal Server Error."
TOKEN_NOT_FOUND = 10011  # (spec) "token not found."
BAD_REQUEST = 10400  # a parameter or body is missing or malformed
NOT_FOUND = 404  # no such endpoint
METHOD_NOT_ALLOWED = 405
TOO_MANY_REQUESTS = 429  # injected fault
NO_MATCHING_EMPLOYEE = 202012  # (spec) push target or employee id unknown
NO_SUCH_APPLICATION = 202102  # (notes) token request names an unknown application
APPLICATION_AUTH_FAILED = 202104  # (notes) wrong application secret
NO_MATCHING_ORGANIZATION = 208502  # (spec) node unknown
ORGANIZATION_HAS_EMPLOYEES = 208507  # (spec) delete refused while people remain
ORGANIZATION_HAS_CHILDREN = 208508  # delete refused while child nodes remain
SERIAL_NO_EXISTS = 208509  # another node already carries this serial_no
INVALID_MOVE = 208510  # root moved or deleted, or a node moved under itself
EMPLOYEE_CONFLICT = 208601  # username, email or mobile already taken
USERNAME_IMMUTABLE = 208602  # single-employee update tried to change the username
NO_SUCH_MEDIA = 204404  # no uploaded file with this id or digest (media, avatar)

TOKEN_NOT_FOUND_MESSAGE = "token not found."  # noqa: S105 (an error text)
INTERNAL_ERROR_MESSAGE = "Internal Server Error."


class ApiError(Exception):
    """A platform error: becomes an envelope with a non-zero status."""

    def __init__(self, status: int, message: str, http_status: int = 200) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.http_status = http_status


def bad_request(message: str) -> ApiError:
    return ApiError(BAD_REQUEST, message)


def no_matching_organization(message: str = "no matching organization") -> ApiError:
    return ApiError(NO_MATCHING_ORGANIZATION, message)


def no_matching_employee() -> ApiError:
    return ApiError(NO_MATCHING_EMPLOYEE, "no matching employee")
