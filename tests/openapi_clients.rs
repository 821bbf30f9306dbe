//! The OpenAPI document is typed enough for generated clients (CI generates
//! them in Python, TypeScript and Rust): what those generators need, checked
//! on the document itself.

use serde_json::Value;

fn spec() -> Value {
    serde_json::to_value(leasehold::api::openapi()).unwrap()
}

fn schema<'a>(spec: &'a Value, name: &str) -> &'a Value {
    &spec["components"]["schemas"][name]
}

/// Every schema object in `value`, depth first.
fn walk<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(map) => {
            out.push(value);
            map.values().for_each(|v| walk(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
        _ => {}
    }
}

#[test]
fn nullable_values_have_the_one_shape_that_3_0_readers_parse() {
    let spec = spec();
    let mut nodes = vec![];
    walk(&spec["components"], &mut nodes);
    for node in nodes {
        let kind = &node["type"];
        assert!(
            !kind.is_array(),
            "a list of types (progenitor cannot read it): {node}"
        );
        assert_ne!(
            kind, "null",
            "a null type (progenitor panics on it): {node}"
        );
    }
    let expires = &schema(&spec, "ReservationBody")["properties"]["expires_at"];
    assert_eq!(expires["oneOf"][1], serde_json::json!({"enum": [null]}));
}

#[test]
fn a_grant_requires_its_token_and_an_inspection_has_none() {
    let spec = spec();
    for (grant, inspect) in [
        ("LockGrantBody", "LockLeaseBody"),
        ("ReservationGrantBody", "ReservationBody"),
    ] {
        let own = &schema(&spec, grant)["allOf"][1];
        assert!(
            own["required"]
                .as_array()
                .unwrap()
                .contains(&"token".into())
        );
        assert_eq!(own["properties"]["token"]["type"], "string");
        assert!(schema(&spec, inspect)["properties"].get("token").is_none());
    }
    let acquire = &spec["paths"]["/v1/locks/{key}/acquire"]["post"]["responses"];
    let get = &spec["paths"]["/v1/locks/{key}"]["get"]["responses"];
    let body = |r: &Value| r["content"]["application/json"]["schema"]["$ref"].clone();
    assert_eq!(body(&acquire["201"]), "#/components/schemas/LockGrantBody");
    assert_eq!(body(&get["200"]), "#/components/schemas/LockLeaseBody");
}

#[test]
fn fixed_values_are_enums() {
    let spec = spec();
    for (name, values) in [
        ("ReservationState", vec!["reserved", "allocated"]),
        ("Family", vec!["ipv4", "ipv6"]),
        ("Mode", vec!["exclusive", "shared"]),
    ] {
        assert_eq!(schema(&spec, name)["enum"], serde_json::json!(values));
    }
}

#[test]
fn every_operation_has_one_json_error_type_and_typed_problems() {
    let spec = spec();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().unwrap() {
                if !(status.starts_with('4') || status.starts_with('5')) {
                    continue;
                }
                let json = &response["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    json, "#/components/schemas/Problem",
                    "{method} {path} {status}"
                );
            }
        }
    }
    let held = schema(&spec, "LockHeldProblem");
    assert_eq!(held["properties"]["type"]["enum"][0], "/problems/lock-held");
    for field in ["holder", "expires_at", "available_at", "key"] {
        assert!(
            held["required"].as_array().unwrap().contains(&field.into()),
            "{field}"
        );
    }
    let union = schema(&spec, "Problem");
    assert_eq!(union["discriminator"]["propertyName"], "type");
}

#[test]
fn the_openapi_document_is_an_object_with_its_fields() {
    let spec = spec();
    let ok = &spec["paths"]["/openapi.json"]["get"]["responses"]["200"];
    let reference = ok["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap();
    let document = schema(&spec, reference.rsplit('/').next().unwrap());
    assert_eq!(document["properties"]["openapi"]["type"], "string");
    assert!(
        document["required"]
            .as_array()
            .unwrap()
            .contains(&"paths".into())
    );
}
