"""Checks every platform route makes: the token, the organization code, the domain id."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request

from syncd.emulator.codes import bad_request, no_matching_organization
from syncd.emulator.params import required_query
from syncd.emulator.runtime import Runtime


def token_guard(runtime: Runtime) -> Callable[[Request], Awaitable[None]]:
    """A route dependency: 10011 unless ``access_token`` is the current, unexpired token."""

    async def require_token(request: Request) -> None:
        state = runtime.state
        state.tokens.check(request.query_params.get("access_token", ""), state.clock.now())

    return require_token


def own_org(runtime: Runtime, code: str) -> None:
    """The path names this emulator's organization, or there is no such organization."""
    if code != runtime.options.org_code:
        raise no_matching_organization()


def own_domain(runtime: Runtime, request: Request) -> None:
    """For endpoints where ``domain_id`` is required: present and this emulator's."""
    if required_query(request, "domain_id") != runtime.options.domain_id:
        raise bad_request("unknown domain_id")
