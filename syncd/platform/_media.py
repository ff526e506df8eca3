"""The media endpoints: an image uploaded, then set as a user's avatar."""

from __future__ import annotations

import base64

from syncd.platform._answers import _malformed
from syncd.platform._requests import Requests

MEDIA_IMAGES = "/v1/medias/images"
# A legacy client endpoint (section I): on the same base_url, with no /v1 prefix.
AVATAR = "/users/{user_id}/avatar"


class Media:
    """Images uploaded by digest, and avatars set from them."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests

    def upload_image(self, name: str, content: bytes, *, digest: str, mime_type: str) -> str:
        """Upload an image (JSON, base64); its media id. Safe to resend: the platform keeps
        one file per ``file_digest``, and a repeated digest answers the same id."""
        body = {
            "file_name": name,
            "file_content": base64.b64encode(content).decode("ascii"),
            "file_digest": digest,
            "file_type": mime_type,
        }
        result = self._requests.call("POST", MEDIA_IMAGES, body=body)
        if isinstance(result, dict):  # an id in a record, as some versions may answer
            result = result.get("id") or result.get("media_id")
        if not isinstance(result, str) or not result:
            raise _malformed(f"POST {MEDIA_IMAGES}", "expected the media id")
        return result

    def set_avatar(self, user_id: str, media_id: str) -> None:
        """Set a user's avatar to an uploaded image (by the user's id, not the employee's)."""
        self._requests.call("POST", AVATAR, path={"user_id": user_id}, body={"avatar": media_id})
