//! The committed OpenAPI document is the one the code generates, and it is
//! complete: every operation named, tagged, summarised, with its problems.

use serde_json::Value;

const REGENERATE: &str = "regenerate it with: cargo run -- openapi > openapi/openapi.json";

fn committed() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path} ({e}); {REGENERATE}"));
    serde_json::from_str(&text).expect("openapi/openapi.json is JSON")
}

fn generated() -> Value {
    serde_json::to_value(leasehold::api::openapi()).unwrap()
}

#[test]
fn the_committed_spec_matches_the_code() {
    assert!(
        committed() == generated(),
        "openapi/openapi.json differs from what the code generates; {REGENERATE}"
    );
}

const REGENERATE_30: &str =
    "regenerate it with: cargo run -- openapi --openapi-version 3.0 > openapi/openapi-3.0.json";

#[test]
fn the_committed_3_0_spec_matches_the_code() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi-3.0.json");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path} ({e}); {REGENERATE_30}"));
    let committed: Value = serde_json::from_str(&text).expect("openapi-3.0.json is JSON");
    assert!(
        committed == leasehold::api::openapi_30(),
        "openapi/openapi-3.0.json differs from what the code generates; {REGENERATE_30}"
    );
}

/// Every schema keyword the 3.0 rendering holds, wherever it is.
fn find_3_1_only(value: &Value, path: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let here = format!("{path}/{k}");
                let schema_context = !path.ends_with("/properties") && !path.ends_with("/schemas");
                if schema_context
                    && (matches!(
                        k.as_str(),
                        "const" | "propertyNames" | "prefixItems" | "$defs"
                    ) || (k == "type" && !v.is_string())
                        || (k == "exclusiveMinimum" && v.is_number())
                        || (k == "exclusiveMaximum" && v.is_number()))
                {
                    found.push(here.clone());
                }
                if k == "$ref" && map.len() > 1 {
                    found.push(format!("{here} has siblings"));
                }
                find_3_1_only(v, &here, found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                find_3_1_only(v, &format!("{path}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn the_3_0_rendering_holds_nothing_only_3_1_knows() {
    let spec = leasehold::api::openapi_30();
    assert_eq!(spec["openapi"], "3.0.3");
    let mut found = vec![];
    find_3_1_only(&spec, "", &mut found);
    assert!(found.is_empty(), "3.1-only constructs: {found:?}");
    // What was nullable stays nullable; the rest of the document is the same.
    let nullable = &spec["components"]["schemas"]["AcquireRequest"]["properties"]["wait_ms"];
    assert_eq!(nullable["type"], "integer");
    assert_eq!(nullable["nullable"], true);
    let original = generated();
    assert_eq!(
        spec["paths"].as_object().unwrap().len(),
        original["paths"].as_object().unwrap().len()
    );
    assert_eq!(
        spec["components"]["schemas"].as_object().unwrap().len(),
        original["components"]["schemas"].as_object().unwrap().len()
    );
}

#[test]
fn every_operation_is_named_tagged_summarised_and_lists_its_problems() {
    let spec = generated();
    assert!(spec["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(
        spec["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );
    let mut ids = vec![];
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(
                id.chars().next().unwrap().is_ascii_lowercase() && !id.contains('_'),
                "{id} is camelCase"
            );
            assert!(
                op["tags"].as_array().is_some_and(|t| !t.is_empty()),
                "{id} has a tag"
            );
            assert!(
                op["summary"].as_str().is_some_and(|s| !s.is_empty()),
                "{id} has a summary"
            );
            for (status, response) in op["responses"].as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    let problem = &response["content"]["application/problem+json"]["schema"];
                    let refs: Vec<&Value> = match problem["oneOf"].as_array() {
                        Some(items) => items.iter().map(|i| &i["$ref"]).collect(),
                        None => vec![&problem["$ref"]],
                    };
                    assert!(
                        refs.iter().all(|r| r
                            .as_str()
                            .is_some_and(|r| r.starts_with("#/components/schemas/")
                                && r.ends_with("Problem"))),
                        "{id} {status} is a problem"
                    );
                }
            }
            ids.push(id.to_owned());
        }
    }
    for id in [
        "acquireLock",
        "renewLock",
        "releaseLock",
        "getLock",
        "listLocks",
        "forceReleaseLock",
    ] {
        assert!(ids.iter().any(|i| i == id), "{id} is in the spec");
    }
}
