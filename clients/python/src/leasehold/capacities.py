"""A key's capacity kept on the server: what its live leases may hold in
all, each lease taking its ``permits`` of it (the operations of
:class:`~leasehold.Client`; :class:`~leasehold.Semaphore` takes from it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._json import JSONObject, integer, text
from ._transport import Transport, quote


@dataclass(frozen=True)
class Capacity:
    """A key's capacity as it stands: ``permits`` in all, ``held`` by its
    live leases (after a shrink, maybe more: nothing is revoked), and
    ``waiting``, asked by its waiters."""

    key: str
    permits: int
    held: int
    waiting: int
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Capacity":
        return cls(
            key=text(doc, "key"),
            permits=integer(doc, "permits"),
            held=integer(doc, "held"),
            waiting=integer(doc, "waiting"),
            raw=doc,
        )


def _path(key: str) -> str:
    return f"/v1/locks/{quote(key)}/capacity"


class CapacitiesMixin:
    """The capacity operations of :class:`~leasehold.Client`."""

    transport: Transport

    def set_capacity(self, key: str, permits: int) -> tuple[Capacity, bool]:
        """Store ``permits`` as ``key``'s capacity, or change it; the second
        value says whether this call stored it. A change revokes nothing:
        grants wait until what is held plus what is asked fits, and a larger
        capacity wakes the waiters that now fit."""
        resp = self.transport.request("PUT", _path(key), body={"permits": permits})
        return Capacity.from_json(resp.doc), resp.status == 201

    def get_capacity(self, key: str) -> Capacity:
        """``key``'s capacity; :class:`~leasehold.CapacityNotFound` if none."""
        return Capacity.from_json(self.transport.request("GET", _path(key)).doc)

    def delete_capacity(self, key: str) -> None:
        """Delete ``key``'s capacity; :class:`~leasehold.CapacityInUse`
        while anything is held of it."""
        self.transport.request("DELETE", _path(key))
