"""Background renewal of one lease, and the moment it is known lost.

The lease is live until ``sent + ttl``, where ``sent`` is when the last
successful grant or renewal was *sent* (monotonic clock): the server may have
started the TTL any time after that, never before. A renewal refused with
``lease-lost``, or no successful renewal before that deadline, means lost.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from .errors import LeaseholdError, LeaseLost, NotFound, SessionLost

LOG = logging.getLogger(__name__)


class KeepAlive:
    """Calls ``renew`` every ``interval`` seconds in a daemon thread."""

    def __init__(
        self,
        name: str,
        renew: Callable[[], object],
        ttl: float,
        sent: float,
        lost: threading.Event,
        on_lost: Callable[[], None],
        interval: float | None = None,
    ) -> None:
        self._renew = renew
        self._ttl = ttl
        self.deadline = sent + ttl
        self._lost = lost
        self._on_lost = on_lost
        self._interval = interval if interval is not None else ttl / 3.0
        self._stop = threading.Event()
        self._timer_lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._arm()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _arm(self) -> None:
        """Say the lease is lost at its deadline, unless a renewal moves it:
        a renewal blocked on a slow or absent server does not delay that."""
        with self._timer_lock:
            if self._timer is not None:
                self._timer.cancel()
            delay = max(0.0, self.deadline - time.monotonic())
            self._timer = threading.Timer(
                delay, self._lose, args=("no renewal succeeded within the TTL",)
            )
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> None:
        """Stop renewing (the lease itself is left as it is)."""
        self._stop.set()
        with self._timer_lock:
            if self._timer is not None:
                self._timer.cancel()

    def _run(self) -> None:
        while not self._stop.is_set():
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or self._lost.is_set():
                return
            # Retry faster as the deadline nears.
            if self._stop.wait(min(self._interval, max(remaining / 3.0, 0.05))):
                return
            sent = time.monotonic()
            try:
                self._renew()
            except (LeaseLost, SessionLost, NotFound) as exc:
                self._lose(str(exc))
                return
            except LeaseholdError as exc:
                LOG.warning("renewal failed, retrying: %s", exc)
                continue
            if time.monotonic() < self.deadline:
                self.deadline = sent + self._ttl
                self._arm()

    def _lose(self, why: str) -> None:
        if self._stop.is_set() or self._lost.is_set():
            return
        LOG.warning("lease lost: %s", why)
        self._lost.set()
        try:
            self._on_lost()
        except Exception:  # a callback's failure must not kill the thread quietly
            LOG.exception("on_lost callback failed")
