"""Section E, media: uploads (JSON or multipart), info and download; section I's avatar.

The avatar endpoint is one of the legacy client endpoints: no /v1 prefix, the user named
by user id (``POST /users/{userId}/avatar``, body ``avatar`` = a media id). It sets the
``avatar`` of that user's employee record, and moves its ``last_modified`` like any write.

As section E has it: downloads need ``domain_id``; a multipart upload to ``/v1/medias``
needs ``file_digest`` and ``file_size`` in the query (optional for ``/v1/medias/images``).
A ``file_size`` given must be the file's length, as a ``file_digest`` must be its MD5.
"""

from __future__ import annotations

import email.parser
import email.policy
from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from syncd.emulator.codes import bad_request, no_matching_employee
from syncd.emulator.fields import required_text, text, to_int
from syncd.emulator.media import Media, UserIds, decode_content, is_image
from syncd.emulator.params import object_body, ok, query, required_query
from syncd.emulator.routes.common import own_domain, token_guard
from syncd.emulator.runtime import Runtime

MEDIAS = "/v1/medias"


def media_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter(dependencies=[Depends(token_guard(runtime))])
    users = UserIds()

    async def upload(request: Request, *, image: bool) -> JSONResponse:
        name, content, declared, content_type = await _upload_of(request, image=image)
        if image and not is_image(content):
            raise bad_request("the file is not an image")
        state = runtime.state
        media = state.media.store(name, content, declared, content_type, state.clock.now())
        return ok(media.id)

    @router.post(MEDIAS + "/images")
    async def upload_image(request: Request) -> JSONResponse:
        return await upload(request, image=True)

    @router.post(MEDIAS)
    async def upload_file(request: Request) -> JSONResponse:
        return await upload(request, image=False)

    @router.get(MEDIAS + "/{file_id}/info")
    async def info(request: Request, file_id: str) -> JSONResponse:
        return ok(runtime.state.media.find(file_id, query(request, "type")).info())

    @router.get(MEDIAS + "/images/{file_id}")
    async def download_image(request: Request, file_id: str) -> Response:
        own_domain(runtime, request)
        return _download(runtime.state.media.find(file_id, query(request, "type")), inline=True)

    @router.get(MEDIAS + "/{file_id}")
    async def download(request: Request, file_id: str) -> Response:
        own_domain(runtime, request)
        return _download(runtime.state.media.find(file_id, query(request, "type")), inline=False)

    @router.post("/users/{user_id}/avatar")
    async def set_avatar(request: Request, user_id: str) -> JSONResponse:
        state = runtime.state
        media_id = required_text(await object_body(request), "avatar")
        employee = users.find(state.staff, user_id)
        if employee is None:
            raise no_matching_employee()
        state.media.find(media_id)  # an avatar must be an uploaded file
        state.staff.update(employee, {"avatar": media_id}, state.clock.stamp())
        return ok({})

    return router


async def _upload_of(request: Request, *, image: bool) -> tuple[str, bytes, str, str]:
    """(file name, bytes, declared digest, content type) of a JSON or multipart upload."""
    content_type = request.headers.get("content-type", "")
    if content_type.lower().startswith("multipart/form-data"):
        # The query carries what the body's part does not: required for /v1/medias.
        given = query if image else required_query
        declared, size = given(request, "file_digest"), given(request, "file_size")
        upload = _multipart(content_type, await request.body(), declared)
        if size and to_int(size, "file_size") != len(upload[1]):
            raise bad_request("file_size does not match the file's length")
        return upload
    body = await object_body(request)
    content = decode_content(body.get("file_content"))
    return (
        required_text(body, "file_name"),
        content,
        text(body, "file_digest"),
        text(body, "file_type") or "application/octet-stream",
    )


def _multipart(content_type: str, raw: bytes, declared: str) -> tuple[str, bytes, str, str]:
    """The part named ``file`` of a multipart/form-data body."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") != "file":
            continue
        payload: Any = part.get_payload(decode=True)
        name = part.get_filename() or "file"
        if not isinstance(payload, bytes) or not payload:
            break
        return name, payload, declared, part.get_content_type()
    raise bad_request("the multipart body has no part named file")


def _download(media: Media, *, inline: bool) -> Response:
    disposition = "inline" if inline else "attachment"
    return Response(
        media.content,
        media_type=media.content_type,
        headers={"Content-Disposition": f'{disposition}; filename="{media.id}"'},
    )
