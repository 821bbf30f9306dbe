// A user's scenario through the TypeScript client generated from
// openapi/openapi.json (openapi-typescript types, openapi-fetch calls): the
// same steps as .ci/sdk_scenario.py. It must compile under `tsc --strict`;
// a refusal is read as the typed problem the spec declares.
//
// Usage: node scenario.js BASE_URL

import createClient from "openapi-fetch";
import type { paths } from "./leasehold.js";

const base = process.argv[2];
if (!base) throw new Error("usage: node scenario.js BASE_URL");
const client = createClient<paths>({ baseUrl: base });

function check(condition: boolean, message: string): void {
  if (!condition) {
    console.error(`FAIL: ${message}`);
    process.exit(1);
  }
  console.log(`ok: ${message}`);
}

async function locks(): Promise<void> {
  const key = "ts/lock-1";
  const path = { params: { path: { key } } };
  const granted = await client.POST("/v1/locks/{key}/acquire", {
    ...path,
    body: { holder: "ts-a", ttl_ms: 30_000 },
  });
  check(granted.response.status === 201, "acquire answers 201");
  check(granted.response.headers.get("Location") === "/v1/locks/ts%2Flock-1", "the grant names its Location");
  const lease = granted.data;
  if (!lease) throw new Error("no lease");
  check(lease.token.length > 0, "the grant carries a token");
  check(lease.mode === "exclusive", "the lease is exclusive");
  check(lease.ends_by === null && lease.lifetime_left_ms === null,
    "a lease without a cap on its tenure shows ends_by and lifetime_left_ms null");

  const renewed = await client.POST("/v1/locks/{key}/renew", {
    ...path,
    body: { token: lease.token, ttl_ms: 60_000 },
  });
  check(renewed.data?.fencing_token === lease.fencing_token, "renew keeps the fencing token");
  check((renewed.data?.expires_in_ms ?? 0) > 59_000, "renew extends the lease");

  const refused = await client.POST("/v1/locks/{key}/acquire", {
    ...path,
    body: { holder: "ts-b", ttl_ms: 30_000 },
  });
  check(refused.response.status === 409, "a second acquire is refused with 409");
  const problem = refused.error;
  if (problem?.type !== "/problems/lock-held") throw new Error(`expected lock-held: ${JSON.stringify(problem)}`);
  // Narrowed by `type`: `holder` is a typed field of the lock-held problem.
  const holder: string | null = problem.holder;
  check(holder === "ts-a", "the typed 409 names the holder");
  check(problem.available_at.length > 0, "and when the key is available");
  check(Number(refused.response.headers.get("Retry-After")) > 0, "with Retry-After");

  const shown = await client.GET("/v1/locks/{key}", path);
  check(shown.data?.holder === "ts-a", "inspect shows the holder");
  check(shown.data?.holders?.length === 1, "and every holder");

  const released = await client.POST("/v1/locks/{key}/release", { ...path, body: { token: lease.token } });
  check(released.response.status === 204, "release answers 204");
  const gone = await client.GET("/v1/locks/{key}", path);
  check(gone.error?.type === "/problems/lock-not-found", "the released key is not held");
}

async function pools(): Promise<void> {
  const pool = "ts-docker";
  const path = { params: { path: { pool } } };
  const created = await client.PUT("/v1/pools/{pool}", { ...path, body: { cidr: "10.20.0.0/16" } });
  check(created.response.status === 201, "put pool answers 201");
  check(created.data?.family === "ipv4", "the pool's family is typed");

  const reserved = await client.POST("/v1/pools/{pool}/reservations", {
    ...path,
    body: { holder: "ts-net", prefix_len: 24 },
  });
  check(reserved.response.status === 201, "reserve answers 201");
  // Without `count` the answer is one reservation, not a batch's items.
  const answer = reserved.data;
  if (!answer || "items" in answer) throw new Error("no single reservation");
  const reservation = answer;
  check(reservation.subnet === "10.20.0.0/24", "the first /24 is the lowest address");
  check(reservation.state === "reserved" && reservation.token.length > 0, "reserved, with a token");

  const one = { params: { path: { pool, id: reservation.id } } };
  const confirmed = await client.POST("/v1/pools/{pool}/reservations/{id}/confirm", {
    ...one,
    body: { token: reservation.token },
  });
  check(confirmed.data?.state === "allocated", "now allocated");
  check(confirmed.data?.expires_at === null, "an allocation does not expire");

  const usage = await client.GET("/v1/pools/{pool}", path);
  check(usage.data?.allocated_count === 1 && usage.data.reserved_count === 0, "usage counts the allocation");
  check(usage.data?.free_addresses === String(65536 - 256), "free addresses are exact");

  const inUse = await client.DELETE("/v1/pools/{pool}", path);
  check(inUse.response.status === 409, "a pool in use is not deleted");
  check(inUse.error?.type === "/problems/pool-in-use" && inUse.error.allocated_count === 1, "the typed 409 counts the allocation");

  const released = await client.POST("/v1/pools/{pool}/reservations/{id}/release", {
    ...one,
    body: { token: reservation.token },
  });
  check(released.response.status === 204, "release answers 204");
  const free = await client.GET("/v1/pools/{pool}", path);
  check(free.data?.allocated_count === 0 && free.data.free_addresses === "65536", "the pool is free again");
  const deleted = await client.DELETE("/v1/pools/{pool}", path);
  check(deleted.response.status === 204, "delete pool");
}

async function limits(): Promise<void> {
  const path = { params: { path: { name: "ts/rate" } } };
  const defined = await client.PUT("/v1/limits/{name}", { ...path, body: { rate: 4, period_ms: 60_000 } });
  check(defined.response.status === 201 && defined.data?.available === 4, "a new rate limit answers 201, full");
  const taken = await client.POST("/v1/limits/{name}/take", { ...path, body: { cost: 3 } });
  check(taken.data?.available === 1 && taken.data.retry_after_ms === 0, "a take of 3 leaves 1");
  const denied = await client.POST("/v1/limits/{name}/take", { ...path, body: { cost: 2 } });
  check(denied.response.status === 429, "a take of 2 with 1 left is refused with 429");
  const ms = denied.error?.type === "/problems/rate-limited" ? denied.error.retry_after_ms : undefined;
  check(ms !== undefined && ms > 0 && ms <= 15_000, "the typed problem says when it would be admitted");
  const shown = await client.GET("/v1/limits/{name}", path);
  check(shown.data?.available === 1, "a denial takes nothing");
  const deleted = await client.DELETE("/v1/limits/{name}", path);
  check(deleted.response.status === 204, "delete a rate limit");
}

const spec = await client.GET("/openapi.json");
check(spec.data?.openapi.startsWith("3.1") === true, "the served spec is OpenAPI 3.1");
await locks();
await pools();
await limits();
console.log("typescript client scenario passed");
