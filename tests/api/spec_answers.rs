//! The server's answers are what the OpenAPI document says, checked over real
//! HTTP: each status is declared for its operation, with the media type sent;
//! each body is an instance of the declared schema, strictly (no property the
//! schema does not declare, so a field the server adds without the spec
//! fails); a problem's `type` is one the response names; and `Retry-After`,
//! `WWW-Authenticate` and `Location` are declared wherever they are sent.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::auth::{CI, QUOTA, acquire_as, send, spawn_secured};
use crate::helpers::{TestApp, spawn_app};

fn spec() -> Value {
    serde_json::to_value(leasehold::api::openapi()).unwrap()
}

fn resolve<'a>(spec: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let name = r.trim_start_matches("#/components/schemas/");
            resolve(spec, &spec["components"]["schemas"][name])
        }
        None => schema,
    }
}

/// The properties and required names of the parts of an `allOf`, as one object.
fn merged(spec: &Value, parts: &[Value]) -> Value {
    let (mut properties, mut required) = (serde_json::Map::new(), vec![]);
    for part in parts {
        let part = resolve(spec, part);
        if let Some(p) = part["properties"].as_object() {
            properties.extend(p.clone());
        }
        required.extend(part["required"].as_array().cloned().unwrap_or_default());
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Whether `value` is an instance of `schema` (the subset of JSON Schema the
/// document uses), objects strictly; the first mismatch, with its path.
fn conforms(spec: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(spec, schema);
    if let Some(values) = schema["enum"].as_array()
        && !values.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {values:?}"));
    }
    if let Some(branches) = schema["oneOf"].as_array() {
        let fits = branches
            .iter()
            .filter(|b| conforms(spec, b, value, at).is_ok())
            .count();
        return match fits {
            1 => Ok(()),
            n => Err(format!("{at}: {value} fits {n} branches of {schema}")),
        };
    }
    if let Some(parts) = schema["allOf"].as_array() {
        return conforms(spec, &merged(spec, parts), value, at);
    }
    let fits = match schema["type"].as_str() {
        None => true,
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("boolean") => value.is_boolean(),
        Some("array") => {
            let items = value
                .as_array()
                .ok_or(format!("{at}: {value} is not an array"))?;
            for (i, item) in items.iter().enumerate() {
                conforms(spec, &schema["items"], item, &format!("{at}[{i}]"))?;
            }
            true
        }
        Some("object") => {
            let fields = value
                .as_object()
                .ok_or(format!("{at}: {value} is not an object"))?;
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str().unwrap();
                if !fields.contains_key(name) {
                    return Err(format!("{at}: required {name} is missing from {value}"));
                }
            }
            for (name, field) in fields {
                let place = format!("{at}.{name}");
                match (&schema["properties"][name], &schema["additionalProperties"]) {
                    (Value::Null, Value::Null) => {
                        return Err(format!("{place} is not declared by {schema}"));
                    }
                    (Value::Null, extra) => conforms(spec, extra, field, &place)?,
                    (declared, _) => conforms(spec, declared, field, &place)?,
                }
            }
            true
        }
        Some(other) => panic!("{at}: the checker reads no type {other}"),
    };
    match fits {
        true => Ok(()),
        false => Err(format!("{at}: {value} is not of {schema}")),
    }
}

/// The problem `type`s a schema pins, through its `$ref`s and `oneOf`.
fn pinned_types(spec: &Value, schema: &Value) -> Vec<Value> {
    let schema = resolve(spec, schema);
    match schema["oneOf"].as_array() {
        Some(branches) => branches
            .iter()
            .flat_map(|b| pinned_types(spec, b))
            .collect(),
        None => schema["properties"]["type"]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    }
}

/// Checks `response` of `method template` against the document; its body.
pub async fn answered(method: &str, template: &str, response: Response) -> Value {
    let spec = spec();
    let status = response.status().as_u16().to_string();
    let operation = format!("{method} {template} {status}");
    let declared = &spec["paths"][template][method]["responses"][&status];
    assert!(declared.is_object(), "{operation} is not declared");
    let headers = response.headers().clone();
    for name in ["retry-after", "www-authenticate", "location"] {
        if headers.contains_key(name) {
            let listed = declared["headers"].as_object().into_iter().flatten();
            assert!(
                listed.map(|(n, _)| n).any(|n| n.eq_ignore_ascii_case(name)),
                "{operation} sends {name} but does not declare it"
            );
        }
    }
    let Some(media) = headers.get("content-type") else {
        return Value::Null;
    };
    let media = media
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let schema = &declared["content"][&media]["schema"];
    assert!(schema.is_object(), "{operation} does not declare {media}");
    let body: Value = response.json().await.unwrap();
    if let Err(e) = conforms(&spec, schema, &body, "body") {
        panic!("{operation}: {e}");
    }
    if media == "application/problem+json" {
        let pinned = pinned_types(&spec, schema);
        assert!(
            pinned.contains(&body["type"]),
            "{operation} answered {} but names {pinned:?}",
            body["type"]
        );
    }
    body
}

async fn post(app: &TestApp, path: &str, body: Value) -> Response {
    app.post(path, body).await
}

async fn every_answer_of_the_lock_routes_is_what_the_spec_declares() {
    let app = spawn_app().await;
    let acquire = "/v1/locks/{key}/acquire";
    let grant = json!({"holder": "a", "ttl_ms": 60_000});
    let lease = answered(
        "post",
        acquire,
        post(&app, "/v1/locks/k/acquire", grant).await,
    )
    .await;
    let again = json!({"holder": "b", "ttl_ms": 60_000});
    let held = answered(
        "post",
        acquire,
        post(&app, "/v1/locks/k/acquire", again).await,
    )
    .await;
    assert_eq!(held["holder"], "a");
    let semaphore = json!({"holder": "b", "ttl_ms": 60_000, "max_holders": 2});
    let body = post(&app, "/v1/locks/k/acquire", semaphore).await;
    assert_eq!(
        answered("post", acquire, body).await["max_holders"],
        Value::Null
    );
    let short = json!({"holder": "b", "ttl_ms": 5});
    let invalid = answered(
        "post",
        acquire,
        post(&app, "/v1/locks/j/acquire", short).await,
    )
    .await;
    assert_eq!(invalid["field"], "ttl_ms");
    let raw = |content_type: &'static str| {
        app.client
            .post(app.url("/v1/locks/j/acquire"))
            .header("content-type", content_type)
            .body("{\"holder\": ")
            .send()
    };
    answered("post", acquire, raw("application/json").await.unwrap()).await;
    answered("post", acquire, raw("text/plain").await.unwrap()).await;

    let renew = json!({"token": "not-the-token"});
    answered(
        "post",
        "/v1/locks/{key}/renew",
        post(&app, "/v1/locks/k/renew", renew).await,
    )
    .await;
    let shown = answered("get", "/v1/locks/{key}", app.get("/v1/locks/k").await).await;
    assert!(
        shown.get("token").is_none(),
        "inspect never shows the token"
    );
    answered("get", "/v1/locks/{key}", app.get("/v1/locks/none").await).await;
    answered("get", "/v1/locks", app.get("/v1/locks?prefix=k").await).await;
    answered("get", "/v1/locks", app.get("/v1/locks?limit=0").await).await;
    let release = json!({"token": lease["token"]});
    let released = post(&app, "/v1/locks/k/release", release).await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    answered("post", "/v1/locks/{key}/release", released).await;
    answered("delete", "/v1/locks/{key}", app.delete("/v1/locks/k").await).await;
    let replayed = |holder: &'static str| {
        app.client
            .post(app.url("/v1/locks/i/acquire"))
            .header("Idempotency-Key", "once")
            .json(&json!({"holder": holder, "ttl_ms": 60_000}))
            .send()
    };
    answered("post", acquire, replayed("a").await.unwrap()).await;
    answered("post", acquire, replayed("a").await.unwrap()).await;
    answered("post", acquire, replayed("b").await.unwrap()).await;
}

async fn every_answer_of_the_pool_routes_is_what_the_spec_declares() {
    let app = spawn_app().await;
    let put = |cidr: &'static str| {
        app.client
            .put(app.url("/v1/pools/p"))
            .json(&json!({"cidr": cidr}))
            .send()
    };
    let pool = "/v1/pools/{pool}";
    assert_eq!(
        answered("put", pool, put("10.0.0.0/24").await.unwrap()).await["family"],
        "ipv4"
    );
    answered("put", pool, put("10.0.0.0/24").await.unwrap()).await;
    answered("put", pool, put("10.1.0.0/24").await.unwrap()).await;
    answered("put", pool, put("10.1.0.1/24").await.unwrap()).await;
    answered("get", pool, app.get("/v1/pools/p").await).await;
    answered("get", pool, app.get("/v1/pools/none").await).await;
    answered("get", "/v1/pools", app.get("/v1/pools").await).await;

    let reserve = "/v1/pools/{pool}/reservations";
    let any = json!({"holder": "h", "prefix_len": 24});
    let granted = post(&app, "/v1/pools/p/reservations", any.clone()).await;
    let reservation = answered("post", reserve, granted).await;
    let exhausted = post(&app, "/v1/pools/p/reservations", any).await;
    assert!(answered("post", reserve, exhausted).await["largest_free"].is_null());
    let taken = json!({"holder": "h", "subnet": "10.0.0.0/25"});
    let unavailable = post(&app, "/v1/pools/p/reservations", taken).await;
    assert_eq!(
        answered("post", reserve, unavailable).await["conflicts"][0]["state"],
        "reserved"
    );
    answered("get", reserve, app.get("/v1/pools/p/reservations").await).await;

    let one = "/v1/pools/{pool}/reservations/{id}";
    let path = format!(
        "/v1/pools/p/reservations/{}",
        reservation["id"].as_str().unwrap()
    );
    let shown = answered("get", one, app.get(&path).await).await;
    assert!(
        shown.get("token").is_none(),
        "inspect never shows the token"
    );
    answered(
        "get",
        one,
        app.get("/v1/pools/p/reservations/r_00000000000000ff").await,
    )
    .await;
    answered("delete", pool, app.delete("/v1/pools/p").await).await;
    let wrong = json!({"token": "not-the-token"});
    let lost = post(&app, &format!("{path}/confirm"), wrong).await;
    answered("post", &format!("{one}/confirm"), lost).await;
    let token = json!({"token": reservation["token"]});
    let confirmed = post(&app, &format!("{path}/confirm"), token.clone()).await;
    assert!(answered("post", &format!("{one}/confirm"), confirmed).await["expires_at"].is_null());
    let released = post(&app, &format!("{path}/release"), token).await;
    answered("post", &format!("{one}/release"), released).await;
    answered("delete", pool, app.delete("/v1/pools/p").await).await;
}

async fn the_token_refusals_are_what_the_spec_declares() {
    let app = spawn_secured().await;
    let acquire = "/v1/locks/{key}/acquire";
    answered("post", acquire, app.acquire("ci/x", "h", 1_000).await).await;
    let forbidden = answered("post", acquire, acquire_as(&app, CI, "db/x").await).await;
    assert_eq!(forbidden["lock"], "db/x");
    let pool = send(&app, CI, "GET", "/v1/pools/other", None).await;
    assert_eq!(
        answered("get", "/v1/pools/{pool}", pool).await["pool"],
        "other"
    );
    for key in ["q/1", "q/2", "q/3"] {
        answered("post", acquire, acquire_as(&app, QUOTA, key).await).await;
    }
}

async fn every_answer_of_the_event_route_is_what_the_spec_declares() {
    let app = spawn_app().await;
    let path = "/v1/events";
    let lease = app.must_acquire("spec/events", "h", 60_000).await;
    app.release("spec/events", lease["token"].as_str().unwrap())
        .await;
    let pool = app
        .client
        .put(app.url("/v1/pools/spec"))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pool.status(), StatusCode::CREATED);
    let reserved = post(
        &app,
        "/v1/pools/spec/reservations",
        json!({"holder": "h", "prefix_len": 24}),
    )
    .await;
    assert_eq!(reserved.status(), StatusCode::CREATED);
    let session = post(
        &app,
        "/v1/sessions",
        json!({"holder": "h", "ttl_ms": 60_000}),
    )
    .await;
    assert_eq!(session.status(), StatusCode::CREATED);
    let page = answered(
        "get",
        path,
        app.get("/v1/events?since=0&wait_ms=2000").await,
    )
    .await;
    assert!(!page["items"].as_array().unwrap().is_empty(), "{page}");
    for query in ["?since=x", "?since=99999", "?pool=Bad", "?unknown=1"] {
        answered("get", path, app.get(&format!("{path}{query}")).await).await;
    }
    let retention = leasehold::reaper::Retention {
        age: std::time::Duration::ZERO,
        count: 1,
        max: 1_000,
    };
    leasehold::reaper::prune_events(&app.leases, retention, 10)
        .await
        .unwrap();
    let gone = answered("get", path, app.get("/v1/events?since=0").await).await;
    assert_eq!(gone["type"], "/problems/history-compacted");
}

crate::harness::tests! {
    every_answer_of_the_event_route_is_what_the_spec_declares,
    every_answer_of_the_lock_routes_is_what_the_spec_declares,
    every_answer_of_the_pool_routes_is_what_the_spec_declares,
    the_token_refusals_are_what_the_spec_declares,
}
