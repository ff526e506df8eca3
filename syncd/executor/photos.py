"""The photos' phase: each read from the source, uploaded once per digest, set as the avatar."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping

from syncd.errors import PlatformError
from syncd.executor.employees import NOT_SYNCED
from syncd.executor.pipeline import Item, Pipeline
from syncd.model import Photo
from syncd.photos import EXTENSIONS, MIME_TYPES, PhotoUnavailable

USER_LOOKUP = 100  # photos whose people's user ids are looked up in one call


class Photos:
    """People's photos as their avatars on the platform."""

    def __init__(
        self, run: Pipeline, read: Callable[[Photo], tuple[Photo, bytes]] | None = None
    ) -> None:
        self.run = run
        # Reads a photo's bytes from the source when it is sent (sources.photos.PhotoReader).
        self.read = read
        self.media: dict[str, str] = {}  # digest -> media id uploaded this run
        self._uploading: dict[str, threading.Lock] = {}  # digest -> held while it uploads
        self._uploads_lock = threading.Lock()

    def set(self, items: list[Item]) -> None:
        """Each photo read from the source when its turn comes (so never all in memory),
        uploaded unless this run uploaded the same bytes already, and set as the avatar."""
        self.run.pipeline(self._ready_photos(items), self._send_photo, self._settle_photo)

    def _ready_photos(self, items: list[Item]) -> Iterator[list[Item]]:
        """One photo per batch, ready to send; user ids looked up USER_LOOKUP at a time."""
        for start in range(0, len(items), USER_LOOKUP):
            chunk = items[start : start + USER_LOOKUP]
            synced = [i for i in chunk if i.change.key in self.run.employee_ids]
            unsynced = [i for i in chunk if i.change.key not in self.run.employee_ids]
            if unsynced:
                self.run.fail(unsynced, NOT_SYNCED)
            try:
                user_ids = self._user_ids([i.change.display for i in synced])
            except PlatformError as exc:
                self.run.fail(
                    synced, f"the user id could not be looked up: {exc.message}", exc.status
                )
                continue
            for item in synced:
                if self._prepare_photo(item, user_ids):
                    yield [item]

    def _user_ids(self, usernames: list[str]) -> dict[str, str]:
        """Username (casefolded) -> user id: the avatar is set on the user, not the employee."""
        if not usernames:
            return {}
        found = self.run.client.employees_by_username(usernames, batch=USER_LOOKUP)
        return {p.username.casefold(): p.user_id for p in found if p.username and p.user_id}

    def _prepare_photo(self, item: Item, user_ids: Mapping[str, str]) -> bool:
        c = item.change
        user_id = user_ids.get(c.display.casefold())
        if user_id is None:
            self.run.fail([item], f"the platform has no account {c.display} to set the photo on")
            return False
        assert isinstance(c.record, Photo) and self.read is not None
        try:
            photo, data = self.read(c.record)
        except PhotoUnavailable as exc:
            self.run.fail([item], f"the photo cannot be sent: {exc}")
            return False
        item.key = user_id
        item.body = {"photo": photo, "data": data}
        return True

    def _send_photo(self, batch: list[Item]) -> tuple[str, str]:
        (item,) = batch
        photo: Photo = item.body["photo"]
        with self._uploads_lock:
            uploading = self._uploading.setdefault(photo.digest, threading.Lock())
        with uploading:  # people sharing a photo: the first uploads it, the others wait
            media_id = self.media.get(photo.digest)
            if media_id is None:
                media_id = self.run.client.upload_image(
                    f"{item.change.display}.{EXTENSIONS[photo.type]}",
                    item.body["data"],
                    digest=photo.digest,
                    mime_type=MIME_TYPES[photo.type],
                )
                self.media[photo.digest] = media_id
        self.run.client.set_avatar(item.key, media_id)
        return photo.digest, media_id

    def _settle_photo(self, batch: list[Item], answer: tuple[str, str]) -> None:
        (item,) = batch
        row = (item.change.key, *answer)
        self.run.record([(item, "ok", None, None)], lambda tx: tx.set_photos([row]))
