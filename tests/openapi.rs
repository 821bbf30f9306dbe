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
