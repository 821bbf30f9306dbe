"""Subnet pools and reservations: reserve a free block, create the real
network, then confirm it (or let the reservation lapse).

::

    client.put_pool("docker", "10.10.0.0/16")
    r = client.reserve("docker", prefix_len=24, exclude_local=True, ttl=60)
    try:
        create_network(r.subnet)
        r = client.confirm(r)              # allocated: it no longer expires
    except BaseException:
        client.release_reservation(r)
        raise

Pools nest (an address plan): a child is cut from its parent's block and may
only narrow its rules::

    client.put_pool("plan", "10.0.0.0/8", rules=PoolRules(max_prefix_len=28))
    client.put_pool("eu", "10.1.0.0/16", parent="plan",
                    rules=PoolRules(default_prefix_len=24))
    client.pool_free("eu", limit=3)        # what the next reserves take
    blocks = client.reserve_batch("eu", 3, labels={"env": "prod"})
"""

from __future__ import annotations

import uuid
from typing import Iterable

from ._json import JSON, JSONObject, objects
from ._transport import QueryValue, Response, Transport, ms, page, quote
from .errors import LeaseLost
from .localnet import local_networks
from .models import FreeBlocks, Page, Pool, PoolMap, PoolRules, Reservation, SessionInfo
from .session import Session, session_ref


#: The most blocks one :meth:`SubnetsMixin.reserve_batch` takes.
MAX_BATCH = 256


def _pool_path(pool: str) -> str:
    return f"/v1/pools/{quote(pool)}"


def _reservation_path(pool: str, rid: str) -> str:
    return f"{_pool_path(pool)}/reservations/{quote(rid)}"


class SubnetsMixin:
    """The pool and reservation operations of :class:`~leasehold.Client`."""

    transport: Transport
    holder: str

    def put_pool(
        self,
        name: str,
        cidr: str,
        labels: dict[str, str] | None = None,
        *,
        parent: str | None = None,
        rules: PoolRules | None = None,
    ) -> Pool:
        """Create the pool, or check that it exists with this definition
        (:class:`~leasehold.PoolConflict` if it has another). ``created``
        says which.

        With ``parent`` the pool is cut from that pool's block (free there;
        a pool at depth 10 takes no children). ``rules`` may only narrow the
        parent's: :class:`~leasehold.RuleConflict` names one that widens."""
        body: JSONObject = {"cidr": cidr}
        if parent is not None:
            body["parent"] = parent
        if rules is not None:
            body["rules"] = rules.to_json()
        if labels:
            body["labels"] = dict(labels)
        resp = self.transport.request("PUT", _pool_path(name), body=body)
        return Pool.from_json(resp.doc, created=resp.status == 201)

    def get_pool(self, name: str) -> Pool:
        """A pool with its usage: counts, free addresses, largest free block."""
        return Pool.from_json(self.transport.request("GET", _pool_path(name)).doc)

    def pool_map(self, name: str, prefix_len: int | None = None) -> PoolMap:
        """The pool cut into blocks of ``/prefix_len`` (default: 8 bits finer
        than the pool) as runs of alike blocks: free, reserved, allocated or
        mixed, never one element per possible subnet."""
        q: dict[str, QueryValue] = {"prefix_len": prefix_len}
        doc = self.transport.request("GET", f"{_pool_path(name)}/map", query=q).doc
        return PoolMap.from_json(doc)

    def list_pools(self, limit: int | None = None, cursor: str | None = None) -> Page[Pool]:
        """One page of the pools (without usage)."""
        q: dict[str, QueryValue] = {"limit": limit, "cursor": cursor}
        return page(self.transport.request("GET", "/v1/pools", query=q), Pool.from_json)

    def delete_pool(self, name: str) -> None:
        """Delete a pool; :class:`~leasehold.PoolInUse` while it has live
        reservations or child pools."""
        self.transport.request("DELETE", _pool_path(name))

    def reserve(
        self,
        pool: str,
        prefix_len: int | None = None,
        *,
        subnet: str | None = None,
        ttl: float | None = 60.0,
        session: Session | SessionInfo | None = None,
        exclude: Iterable[str] = (),
        exclude_local: bool = False,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        labels: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        max_lifetime: float | None = None,
    ) -> Reservation:
        """Reserve a free block of ``prefix_len`` bits (best fit, then lowest
        address), or the aligned ``subnet`` named; with neither, a block of
        the pool's ``default_prefix_len``.

        ``exclude`` names CIDRs to avoid; ``exclude_local=True`` adds this
        host's own networks (:func:`~leasehold.local_networks`). Bound to
        ``session`` the reservation lives as long as it (until confirmed);
        otherwise ``ttl`` seconds unless renewed or confirmed. Raises
        :class:`~leasehold.PoolExhausted` or
        :class:`~leasehold.SubnetUnavailable` (``conflicts`` in its fields),
        or :class:`~leasehold.RuleViolated` naming the pool's rule it breaks
        (``labels`` carry the ones ``required_labels`` names).
        ``max_lifetime`` (seconds) caps its tenure while unconfirmed.
        """
        if prefix_len is not None and subnet is not None:
            raise ValueError("give at most one of prefix_len and subnet")
        body: JSONObject = {"holder": holder or self.holder}
        if prefix_len is not None:
            body["prefix_len"] = prefix_len
        elif subnet is not None:
            body["subnet"] = subnet
        resp = self._reserve(pool, body, ttl, session, exclude, exclude_local, metadata,
                             labels, idempotency_key, max_lifetime)
        return Reservation.from_json(resp.doc, resp.sent, replayed=resp.status == 200)

    def reserve_batch(
        self,
        pool: str,
        count: int,
        prefix_len: int | None = None,
        *,
        ttl: float | None = 60.0,
        session: Session | SessionInfo | None = None,
        exclude: Iterable[str] = (),
        exclude_local: bool = False,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        labels: dict[str, str] | None = None,
        idempotency_key: str | None = None,
        max_lifetime: float | None = None,
    ) -> list[Reservation]:
        """Reserve ``count`` (1 to 256) blocks of ``prefix_len`` bits (default:
        the pool's ``default_prefix_len``) in one transaction, all or none,
        in the order the allocator picks them. The same ``idempotency_key``
        replays the whole batch (each then ``replayed``); a retry sends its
        key again. Refusals are :meth:`reserve`'s; ``max_lifetime`` caps
        each block's tenure while unconfirmed."""
        if not 1 <= count <= MAX_BATCH:
            raise ValueError(f"a batch takes 1 to {MAX_BATCH} blocks, not {count}")
        body: JSONObject = {"holder": holder or self.holder, "count": count}
        if prefix_len is not None:
            body["prefix_len"] = prefix_len
        resp = self._reserve(pool, body, ttl, session, exclude, exclude_local, metadata,
                             labels, idempotency_key, max_lifetime)
        replayed = resp.status == 200
        return [Reservation.from_json(item, resp.sent, replayed=replayed)
                for item in objects(resp.doc, "items")]

    def _reserve(
        self,
        pool: str,
        body: JSONObject,
        ttl: float | None,
        session: Session | SessionInfo | None,
        exclude: Iterable[str],
        exclude_local: bool,
        metadata: JSONObject | None,
        labels: dict[str, str] | None,
        idempotency_key: str | None,
        max_lifetime: float | None,
    ) -> Response:
        excluded: list[JSON] = list(exclude)
        if exclude_local:
            excluded.extend(n for n in local_networks() if n not in excluded)
        if excluded:
            body["exclude"] = excluded
        if session is not None:
            body["session"] = session_ref(session)
        elif ttl is not None:
            body["ttl_ms"] = ms(ttl)
        if max_lifetime is not None and session is None:
            body["max_lifetime_ms"] = ms(max_lifetime)
        if metadata is not None:
            body["metadata"] = metadata
        if labels:
            body["labels"] = dict(labels)
        return self.transport.request(
            "POST", _pool_path(pool) + "/reservations", body=body,
            headers={"Idempotency-Key": idempotency_key or uuid.uuid4().hex},
        )

    def pool_free(
        self, pool: str, prefix_len: int | None = None, limit: int | None = None
    ) -> FreeBlocks:
        """The next ``limit`` blocks (server default 10) of ``prefix_len``
        bits (default: the pool's ``default_prefix_len``) reserves would
        take, in order, read in one snapshot: what a plan shows before it
        applies."""
        q: dict[str, QueryValue] = {"prefix_len": prefix_len, "limit": limit}
        doc = self.transport.request("GET", f"{_pool_path(pool)}/free", query=q).doc
        return FreeBlocks.from_json(doc)

    def renew_reservation(
        self,
        reservation: Reservation,
        ttl: float | None = None,
        metadata: JSONObject | None = None,
    ) -> Reservation:
        """Extend a reserved subnet by ``ttl`` from now (default: its own),
        optionally replacing its metadata; :class:`~leasehold.LeaseLost` if
        it is gone."""
        body: JSONObject = {"token": _token(reservation)}
        if ttl is not None:
            body["ttl_ms"] = ms(ttl)
        if metadata is not None:
            body["metadata"] = metadata
        resp = self.transport.request(
            "POST", _reservation_path(reservation.pool, reservation.id) + "/renew", body=body
        )
        return Reservation.from_json(resp.doc, resp.sent, reservation.token)

    def confirm(self, reservation: Reservation) -> Reservation:
        """Make a reservation allocated: it no longer expires.
        :class:`~leasehold.LeaseLost` if it expired or was released first."""
        path = _reservation_path(reservation.pool, reservation.id) + "/confirm"
        try:
            resp = self.transport.request("POST", path, body={"token": _token(reservation)})
        except LeaseLost:
            # A retried confirm whose first attempt was applied: look.
            current = self.get_reservation(reservation.pool, reservation.id)
            if current.state == "allocated" and current.fencing_token == reservation.fencing_token:
                return Reservation.from_json(current.raw, None, reservation.token)
            raise
        return Reservation.from_json(resp.doc, resp.sent, reservation.token)

    def release_reservation(self, reservation: Reservation) -> None:
        """Give a reservation back (reserved or allocated)."""
        self.transport.request(
            "POST", _reservation_path(reservation.pool, reservation.id) + "/release",
            body={"token": _token(reservation)},
        )

    def get_reservation(self, pool: str, reservation_id: str) -> Reservation:
        """One reservation (without its token);
        :class:`~leasehold.ReservationNotFound` if there is none."""
        return Reservation.from_json(
            self.transport.request("GET", _reservation_path(pool, reservation_id)).doc
        )

    def list_reservations(
        self, pool: str, limit: int | None = None, cursor: str | None = None
    ) -> Page[Reservation]:
        """One page of the pool's live reservations (without tokens)."""
        q: dict[str, QueryValue] = {"limit": limit, "cursor": cursor}
        resp = self.transport.request("GET", _pool_path(pool) + "/reservations", query=q)
        return page(resp, Reservation.from_json)

    def force_release_reservation(self, pool: str, reservation_id: str) -> None:
        """Release a reservation whoever holds it (admin)."""
        self.transport.request("DELETE", _reservation_path(pool, reservation_id))


def _token(reservation: Reservation) -> str:
    if not reservation.token:
        raise ValueError(f"reservation {reservation.id} has no token: only its grant carries one")
    return reservation.token
