"""The platform's answers read into values, or refused as not understood."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from syncd.access_token import CachedToken
from syncd.errors import PlatformUnavailable
from syncd.platform.schemas import ImportResult

_M = TypeVar("_M", bound=BaseModel)


def _malformed(endpoint: str, what: str) -> PlatformUnavailable:
    return PlatformUnavailable(f"{endpoint}: the platform's answer was not understood: {what}")


def _model(model: type[_M], data: Any, endpoint: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # Only where and what, never the input values: not as the cause either, whose
        # text quotes the record (people's data, whatever the platform put in it).
        first = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(record)"
        raise _malformed(endpoint, f"{model.__name__} {where}: {first['msg']}") from None


def _dict(result: Any) -> dict[str, Any]:
    return result if isinstance(result, dict) else {}


def _import_result(result: Any, endpoint: str) -> ImportResult:
    if not isinstance(result, dict):
        raise _malformed(endpoint, "expected {successes, failures}")
    successes = result.get("successes") or {}
    failures = result.get("failures") or {}
    if not isinstance(successes, dict) or not isinstance(failures, dict):
        raise _malformed(endpoint, "successes and failures must be maps")
    try:
        ids = {str(key): int(value) for key, value in successes.items()}
    except (TypeError, ValueError) as exc:
        raise _malformed(endpoint, "a success without a numeric id") from exc
    return ImportResult(ids, {str(key): str(value) for key, value in failures.items()})


def _cached_token(result: Any, endpoint: str) -> CachedToken:
    data = _dict(result)
    access_token, expire_time = data.get("access_token"), data.get("expire_time")
    issued_time = data.get("issued_time")
    if not isinstance(access_token, str) or not access_token:
        raise _malformed(endpoint, "no access_token")
    if isinstance(expire_time, bool) or not isinstance(expire_time, int):
        raise _malformed(endpoint, "no numeric expire_time")
    if isinstance(issued_time, bool) or not isinstance(issued_time, int):
        issued_time = None
    return CachedToken(access_token, expire_time, issued_time)
