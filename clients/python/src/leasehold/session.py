"""A session: one heartbeat for many leases and memberships."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ._keepalive import KeepAlive
from .errors import LeaseLost, NotFound
from .models import SessionInfo

if TYPE_CHECKING:
    from .client import Client


class Session:
    """A session kept alive in the background; a context manager.

    Leases and memberships bound to it (``Lock(..., session=s)``,
    ``client.join(..., session=s)``) end when it ends: on :meth:`close`, or
    when it expires because renewals stopped reaching the server. Then
    :attr:`lost` is set and ``on_lost`` is called.

    With ``keepalive=False`` nothing renews it but :meth:`renew`.
    """

    def __init__(
        self,
        client: "Client",
        ttl: float = 15.0,
        *,
        holder: str | None = None,
        metadata: dict[str, Any] | None = None,
        keepalive: bool = True,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.holder = holder
        self.metadata = metadata
        self.keepalive = keepalive
        self.on_lost = on_lost
        #: Set when the session ended without :meth:`close` (it expired).
        self.lost = threading.Event()
        #: Set when the session ended for any reason, closed or lost.
        self.ended = threading.Event()
        self._info: SessionInfo | None = None
        self._keepalive: KeepAlive | None = None

    @property
    def info(self) -> SessionInfo:
        """The open session (``id`` and ``token``)."""
        if self._info is None:
            raise RuntimeError("the session is not open")
        return self._info

    @property
    def id(self) -> str:
        """The session's id."""
        return self.info.id

    def open(self) -> "Session":
        """Open the session and start keeping it alive."""
        sent = time.monotonic()
        self._info = self.client.open_session(self.ttl, self.holder, self.metadata)
        self.lost.clear()
        self.ended.clear()
        if self.keepalive:
            self._keepalive = KeepAlive(
                f"leasehold-session-{self._info.id}",
                self.renew,
                self.ttl,
                sent,
                self.lost,
                self._lost,
            )
        return self

    def _lost(self) -> None:
        self.ended.set()
        if self.on_lost is not None:
            self.on_lost()

    def renew(self) -> SessionInfo:
        """Renew the session now; :class:`~leasehold.LeaseLost` if it ended."""
        try:
            return self.client.renew_session(self.info.id, self.info.token or "")
        except (LeaseLost, NotFound):
            self.lost.set()
            self.ended.set()
            raise

    def close(self) -> None:
        """Close the session, releasing everything bound to it."""
        if self._keepalive is not None:
            self._keepalive.stop()
            self._keepalive = None
        if self._info is None:
            return
        info, self._info = self._info, None
        self.ended.set()
        try:
            self.client.close_session(info.id, info.token or "")
        except (LeaseLost, NotFound):
            pass

    def __enter__(self) -> "Session":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
