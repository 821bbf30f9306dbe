"""What the fuzzing of .ci/run leaves out of the requests it calls valid.

The spec states every rule of a request that JSON Schema can state exactly
(src/api/openapi/bounds.rs and spec.rs), and .ci/schemathesis.toml fails
the run when the server refuses with 400/422 what the spec admits
(`validation_mismatch`). A few rules JSON Schema cannot state; each is one
entry below, and only schema-valid (positive) cases are touched: the
negative ones must still be refused.

- An integer spelled with a fraction (`175.0`): JSON Schema reads it as the
  integer 175, the server's JSON reader refuses it. Sent as `175`.
- A cursor (`cursor`): opaque, valid only as the server issued it. Left out
  (a page without one is the first).
- A revision to resume after (`since`, `Last-Event-ID`): one past the newest
  is refused, and the newest is state, not schema. Sent as 0 (from the
  oldest the server keeps).
- `wait_ms`: bounded by the server's `--max-wait`, set when it starts (the
  contract names no default). Cut to 100 ms, below the fuzzed server's
  5 s: a wait for a key that an earlier case holds would otherwise idle the
  fuzzer for all of it.
- A reserve's `prefix_len` and `labels`: bounded by the pool's own prefix,
  family and rules, which are state. The pools fuzzed are IPv4 /8s and /16s
  with the spec's example rules (/20 to /28, the label `env` required): a
  length outside /20–/28 is sent as the example's /24, and `env` is added.
- A pool map's `prefix_len`: bounded by the pool's own prefix and family.
  Left out (the map's default resolution). The free blocks' `prefix_len`,
  bounded the same way and required where the pool has no default: sent
  as the spec's example of a reserve's.
- A pool's `parent` must exist and hold the pool's block, which is state;
  its `rules` bound one another (`min_prefix_len` ≤ `default_prefix_len` ≤
  `max_prefix_len`, and a child's only narrow its parent's), which JSON
  Schema cannot say. Both are left out; the contract suite covers them.
  The spec's own examples are sent as written (hooks do not touch them):
  .ci/run makes the example's parent, `docker`, before the run.
- A rate limit's `burst × period_ms / rate` (its time to refill from empty)
  is bounded: a definition past it is sent without its `burst`. A take's or
  refund's `cost` above the limit's burst, and an acquire's `permits` above
  the key's capacity, are refused by state: valid cases cost 1 and take 1.
- An `Idempotency-Key` names one request: sent again with another request
  it is refused (422), which is state, not schema. Each case gets its own.
- Text bounded in UTF-8 bytes (keys, group and member names, holders,
  prefixes; metadata, labels and capabilities as JSON): `maxLength` counts
  characters, so the spec states the byte bound as the most characters. A
  case over the byte bound is not sent (such cases are rare: a filter that
  rejects often ends the fuzzing phase early, so the rules below rewrite).
- Which of two fields a body names (`ttl_ms` or `session`, `prefix_len` or
  `subnet`, a member's `token` or `session`): JSON Schema could say it
  with a `oneOf` of `required` lists, but request bodies stay the plain
  objects that the SDK generators of CI read, and the rule is said in
  prose. A case naming both keeps the first; one naming neither where one
  is required gets the spec's example of the first. A named `subnet` is one
  block: a `count` beside it is left out. A lease bound to a session lives
  as long as it: a `max_lifetime_ms` beside a `session` is left out.
- CIDR text (a pool's `cidr`, `subnet`, `exclude`): JSON Schema has no
  CIDR format. A `cidr` that is not an aligned network is sent as the
  spec's example; a `subnet` that is not one, and `exclude` entries that
  are not networks, are left out.
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from typing import Any
from urllib.parse import unquote

import schemathesis
from schemathesis import GenerationMode

MAX_KEY_BYTES = 256
MAX_HOLDER_BYTES = 256
MAX_METADATA_BYTES = 4096
MAX_LABELS_BYTES = 4096
# --max-capabilities-bytes, left at its default by .ci/run.
MAX_CAPABILITIES_BYTES = 8192
# The longest wait a valid case asks for (the fuzzed server's --max-wait is 5 s).
WAIT_CAP_MS = 100

# Names that follow the key syntax, wherever they are sent.
KEY_PATHS = ("key", "group", "member", "name")
KEY_QUERIES = ("prefix", "group")

# Bodies whose lease lives by `ttl_ms` or by `session`, and must name one.
TTL_OR_SESSION = {"acquireLock", "acquireLockSet", "joinGroup"}
# What a case that names neither of two fields gets: the spec's examples.
EXAMPLE_TTL_MS = 30000
EXAMPLE_PREFIX_LEN = 24
# The prefix lengths a reserve may ask of the pools the fuzzing makes (IPv4,
# /8 and /16 blocks of the spec's examples, whose example rules allow /20
# to /28).
FUZZED_POOL_LENGTHS = (20, 28)
# A limit refills from empty within its burst × period_ms / rate at most
# (src/domain/rate.rs MAX_REFILL_MS).
MAX_REFILL_MS = 3_660 * 86_400_000
# The most a valid take or refund costs: a limit's burst is state.
EXAMPLE_COST = 1
# The label the spec's example rules require of every reserve.
EXAMPLE_LABEL = ("env", "prod")
EXAMPLE_TOKEN = "9f86d081884c7d659a2feaa0c55ad015"
EXAMPLE_CIDR = "10.0.0.0/8"


def _positive(case: Any) -> bool:
    meta = case.meta
    return meta is not None and meta.generation.mode == GenerationMode.POSITIVE


def _operation_id(case: Any) -> str | None:
    return case.operation.definition.raw.get("operationId")


def _bytes(text: Any) -> int:
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else 0


def _json_bytes(value: Any) -> int:
    return _bytes(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _present(body: dict, field: str) -> bool:
    return body.get(field) is not None


def _network(text: Any, *, strict: bool) -> bool:
    # An address and a prefix length in digits (Python would also read a netmask).
    if not isinstance(text, str) or not re.fullmatch(r"[0-9A-Fa-f:.]+/[0-9]{1,3}", text):
        return False
    try:
        ipaddress.ip_network(text, strict=strict)
    except ValueError:
        return False
    return True


def _over_byte_bounds(case: Any) -> bool:
    path = case.path_parameters or {}
    query = case.query or {}
    body = case.body if isinstance(case.body, dict) else {}
    if any(_bytes(unquote(str(path[name]))) > MAX_KEY_BYTES for name in KEY_PATHS if name in path):
        return True
    if any(_bytes(query.get(name)) > MAX_KEY_BYTES for name in KEY_QUERIES):
        return True
    if _bytes(query.get("holder")) > MAX_HOLDER_BYTES or _bytes(body.get("holder")) > MAX_HOLDER_BYTES:
        return True
    keys = body.get("keys")
    if isinstance(keys, list) and any(_bytes(key) > MAX_KEY_BYTES for key in keys):
        return True
    return (
        _json_bytes(body.get("metadata")) > MAX_METADATA_BYTES
        or _json_bytes(body.get("labels")) > MAX_LABELS_BYTES
        or ("capabilities" in body and _json_bytes(body["capabilities"]) > MAX_CAPABILITIES_BYTES)
    )


def _rewrite_body(op: str | None, body: dict) -> None:
    """The body as the server takes it, where the rules above say how."""
    if op in TTL_OR_SESSION | {"reserveSubnet"} and _present(body, "ttl_ms") and _present(body, "session"):
        body.pop("session")
    if _present(body, "session"):
        body.pop("max_lifetime_ms", None)
    if op in TTL_OR_SESSION and not _present(body, "ttl_ms") and not _present(body, "session"):
        body["ttl_ms"] = EXAMPLE_TTL_MS
    if op == "reserveSubnet":
        if _present(body, "subnet") and (
            _present(body, "prefix_len") or not _network(body["subnet"], strict=True)
        ):
            body.pop("subnet")
        if not _present(body, "prefix_len") and not _present(body, "subnet"):
            body["prefix_len"] = EXAMPLE_PREFIX_LEN
        if isinstance(body.get("labels"), dict):
            body["labels"].setdefault(*EXAMPLE_LABEL)
        else:
            body["labels"] = dict([EXAMPLE_LABEL])
        if _present(body, "subnet") and body.get("count") not in (None, 1):
            body.pop("count")
        length = body.get("prefix_len")
        if isinstance(length, int) and not FUZZED_POOL_LENGTHS[0] <= length <= FUZZED_POOL_LENGTHS[1]:
            body["prefix_len"] = EXAMPLE_PREFIX_LEN
        if isinstance(body.get("exclude"), list):
            body["exclude"] = [text for text in body["exclude"] if _network(text, strict=False)]
    if op == "putPool":
        if not _network(body.get("cidr"), strict=True):
            body["cidr"] = EXAMPLE_CIDR
        body.pop("parent", None)
        body.pop("rules", None)
    if op == "putLimit" and all(isinstance(body.get(f), int) and body[f] > 0 for f in ("rate", "period_ms")):
        burst = body.get("burst") if isinstance(body.get("burst"), int) else body["rate"]
        if burst * body["period_ms"] > MAX_REFILL_MS * body["rate"]:
            body.pop("burst", None)
            body["period_ms"] = min(body["period_ms"], MAX_REFILL_MS)
    if op in ("takeLimit", "refundLimit") and isinstance(body.get("cost"), int):
        body["cost"] = min(body["cost"], EXAMPLE_COST)
    if op in ("acquireLock", "acquireLockSet") and isinstance(body.get("permits"), int):
        body["permits"] = 1
    if op == "leaveGroup" and _present(body, "token") == _present(body, "session"):
        body.pop("session", None)
        body["token"] = body.get("token") or EXAMPLE_TOKEN


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    return not (_positive(case) and _over_byte_bounds(case))


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    if not _positive(case):
        return case
    op = _operation_id(case)
    if isinstance(case.body, dict):
        for field, value in case.body.items():
            if isinstance(value, float) and value.is_integer():
                case.body[field] = int(value)
        _rewrite_body(op, case.body)
        wait = case.body.get("wait_ms")
        if isinstance(wait, int) and wait > WAIT_CAP_MS:
            case.body["wait_ms"] = WAIT_CAP_MS
    if case.query:
        case.query.pop("cursor", None)
        if "since" in case.query:
            case.query["since"] = 0
        wait = case.query.get("wait_ms")
        if wait is not None and (not str(wait).isdigit() or int(wait) > WAIT_CAP_MS):
            case.query["wait_ms"] = WAIT_CAP_MS
        if op == "getPoolMap":
            case.query.pop("prefix_len", None)
    if op == "getPoolFree":
        case.query = {**(case.query or {}), "prefix_len": EXAMPLE_PREFIX_LEN}
    if case.headers:
        if "Last-Event-ID" in case.headers:
            case.headers["Last-Event-ID"] = "0"
        if "Idempotency-Key" in case.headers:
            case.headers["Idempotency-Key"] = uuid.uuid4().hex
    return case
