//! The OpenAPI document rendered as 3.0.3, for generators that read only 3.0
//! (`GET /openapi-3.0.json`, `leasehold openapi --openapi-version 3.0`).
//!
//! It converts the 3.1 document as JSON, so both say the same by
//! construction: a null type becomes `nullable: true` (a `oneOf` with a null
//! branch folds into the other branch), `const` a one-value `enum`, a
//! schema's `examples` its first `example`, `exclusiveMinimum`/`Maximum`
//! numbers the 3.0 booleans, a `$ref` with siblings an `allOf` of one (3.0
//! ignores a `$ref`'s siblings), and the keywords 3.0 lacks are dropped.

use serde_json::{Map, Value, json};

/// The version the rendering declares.
pub const VERSION: &str = "3.0.3";

/// JSON Schema keywords 3.0 does not know; dropped.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "$comment",
    "$dynamicRef",
    "$dynamicAnchor",
    "propertyNames",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

/// The 3.0.3 rendering of a 3.1 document.
pub fn render(doc: &Value) -> Value {
    let mut out = doc.clone();
    let Some(root) = out.as_object_mut() else {
        return out;
    };
    root.insert("openapi".into(), VERSION.into());
    root.remove("jsonSchemaDialect");
    root.remove("webhooks");
    if let Some(info) = root.get_mut("info").and_then(Value::as_object_mut) {
        info.remove("summary");
        if let Some(license) = info.get_mut("license").and_then(Value::as_object_mut) {
            license.remove("identifier");
        }
    }
    if let Some(components) = root.get_mut("components").and_then(Value::as_object_mut) {
        components.remove("pathItems");
        if let Some(schemas) = components.get_mut("schemas").and_then(Value::as_object_mut) {
            schemas.values_mut().for_each(schema);
        }
        for section in ["parameters", "headers"] {
            if let Some(items) = components.get_mut(section).and_then(Value::as_object_mut) {
                items.values_mut().for_each(holder);
            }
        }
        for section in ["responses", "requestBodies"] {
            if let Some(items) = components.get_mut(section).and_then(Value::as_object_mut) {
                items.values_mut().for_each(with_content);
            }
        }
    }
    if let Some(paths) = root.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for (name, op) in item.iter_mut() {
                match name.as_str() {
                    "parameters" => each(op, holder),
                    "summary" | "description" | "servers" | "$ref" => {}
                    _ => operation(op),
                }
            }
        }
    }
    out
}

fn each(list: &mut Value, f: fn(&mut Value)) {
    if let Some(items) = list.as_array_mut() {
        items.iter_mut().for_each(f);
    }
}

fn operation(op: &mut Value) {
    let Some(op) = op.as_object_mut() else { return };
    if let Some(parameters) = op.get_mut("parameters") {
        each(parameters, holder);
    }
    if let Some(body) = op.get_mut("requestBody") {
        with_content(body);
    }
    if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
        responses.values_mut().for_each(with_content);
    }
}

/// A response or request body: its media types and headers.
fn with_content(item: &mut Value) {
    let Some(item) = item.as_object_mut() else {
        return;
    };
    if let Some(content) = item.get_mut("content").and_then(Value::as_object_mut) {
        content.values_mut().for_each(holder);
    }
    if let Some(headers) = item.get_mut("headers").and_then(Value::as_object_mut) {
        headers.values_mut().for_each(holder);
    }
}

/// A parameter, header or media type: its `schema`. Their own `examples` (a
/// map of Example Objects) mean the same in 3.0 and stay.
fn holder(item: &mut Value) {
    if let Some(s) = item.get_mut("schema") {
        schema(s);
    }
}

/// Converts one schema and every schema inside it.
fn schema(value: &mut Value) {
    let Some(obj) = value.as_object_mut() else {
        return;
    };
    for key in ["properties", "patternProperties"] {
        if let Some(props) = obj.get_mut(key).and_then(Value::as_object_mut) {
            props.values_mut().for_each(schema);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(inner) = obj.get_mut(key) {
            schema(inner);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = obj.get_mut(key) {
            each(list, schema);
        }
    }
    for key in DROPPED {
        obj.remove(*key);
    }
    if let Some(constant) = obj.remove("const") {
        obj.insert("enum".into(), Value::Array(vec![constant]));
    }
    if let Some(examples) = obj.remove("examples")
        && let Some(first) = examples.as_array().and_then(|e| e.first())
    {
        obj.entry("example").or_insert_with(|| first.clone());
    }
    for (exclusive, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if obj.get(exclusive).is_some_and(Value::is_number) {
            let limit = obj.remove(exclusive).unwrap_or_default();
            obj.insert(bound.into(), limit);
            obj.insert(exclusive.into(), Value::Bool(true));
        }
    }
    null_type(obj);
    for key in ["oneOf", "anyOf"] {
        null_branch(obj, key);
    }
    ref_with_siblings(obj);
}

/// `type: [X, "null"]` → `type: X, nullable: true`; `type: "null"` alone →
/// a schema that allows only null.
fn null_type(obj: &mut Map<String, Value>) {
    let Some(types) = obj.get("type").and_then(Value::as_array).cloned() else {
        if obj.get("type").and_then(Value::as_str) == Some("null") {
            obj.remove("type");
            obj.insert("nullable".into(), true.into());
            obj.insert("enum".into(), json!([null]));
        }
        return;
    };
    let nullable = types.iter().any(|t| t == "null");
    let rest: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
    obj.remove("type");
    match rest.len() {
        0 => {
            obj.insert("enum".into(), json!([null]));
        }
        1 => {
            obj.insert("type".into(), rest[0].clone());
        }
        _ => {
            // Several types: one branch each, the rest of the schema beside.
            let branches = rest.into_iter().map(|t| json!({ "type": t })).collect();
            obj.insert("anyOf".into(), Value::Array(branches));
        }
    }
    if nullable {
        obj.insert("nullable".into(), true.into());
    }
}

/// Whether a branch only allows null (`enum: [null]`, or a null type that
/// `null_type` has turned into that).
fn is_null_branch(branch: &Value) -> bool {
    let Some(b) = branch.as_object() else {
        return false;
    };
    let only_null = b.get("enum") == Some(&json!([null])) || b.get("type") == Some(&json!("null"));
    only_null
        && b.keys()
            .all(|k| matches!(k.as_str(), "enum" | "type" | "nullable" | "description"))
}

/// `oneOf: [S, null]` → S with `nullable: true`; with several other branches,
/// they stay and the whole is nullable.
fn null_branch(obj: &mut Map<String, Value>, key: &str) {
    let Some(branches) = obj.get(key).and_then(Value::as_array) else {
        return;
    };
    if !branches.iter().any(is_null_branch) {
        return;
    }
    let mut rest: Vec<Value> = branches
        .iter()
        .filter(|b| !is_null_branch(b))
        .cloned()
        .collect();
    obj.remove(key);
    obj.insert("nullable".into(), true.into());
    if rest.len() != 1 {
        if rest.is_empty() {
            obj.insert("enum".into(), json!([null]));
        } else {
            obj.insert(key.into(), Value::Array(rest));
        }
        return;
    }
    let Some(Value::Object(only)) = rest.pop() else {
        return;
    };
    if only.contains_key("$ref") {
        // A `$ref` takes no siblings in 3.0: wrap it, keep the rest beside.
        let mut wrapped = only;
        let reference = wrapped.remove("$ref").unwrap_or_default();
        obj.insert("allOf".into(), json!([{ "$ref": reference }]));
        merge(obj, wrapped);
    } else {
        merge(obj, only);
    }
}

/// Moves the keywords of `from` into `obj`, the outer description winning.
fn merge(obj: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        obj.entry(k).or_insert(v);
    }
}

/// `{$ref, description, …}` → `{allOf: [{$ref}], description, …}`.
fn ref_with_siblings(obj: &mut Map<String, Value>) {
    if obj.contains_key("$ref") && obj.len() > 1 {
        let reference = obj.remove("$ref").unwrap_or_default();
        obj.insert("allOf".into(), json!([{ "$ref": reference }]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: Value) -> Value {
        let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
            "paths": {}, "components": {"schemas": {"S": s}}});
        let out = render(&doc);
        assert_eq!(out["openapi"], "3.0.3");
        assert!(out["info"]["license"].get("identifier").is_none());
        out["components"]["schemas"]["S"].clone()
    }

    #[test]
    fn a_null_type_becomes_nullable() {
        assert_eq!(
            one(json!({"type": ["string", "null"]})),
            json!({"type": "string", "nullable": true})
        );
    }

    #[test]
    fn a_oneof_with_null_folds_into_its_other_branch() {
        assert_eq!(
            one(
                json!({"oneOf": [{"type": "integer", "minimum": 0}, {"enum": [null]}], "description": "d"})
            ),
            json!({"type": "integer", "minimum": 0, "nullable": true, "description": "d"})
        );
        assert_eq!(
            one(
                json!({"oneOf": [{"$ref": "#/components/schemas/M", "description": "m"}, {"enum": [null]}]})
            ),
            json!({"allOf": [{"$ref": "#/components/schemas/M"}], "description": "m", "nullable": true})
        );
    }

    #[test]
    fn const_examples_and_exclusive_bounds_take_their_3_0_forms() {
        assert_eq!(
            one(
                json!({"const": "a", "examples": ["a", "b"], "exclusiveMinimum": 0, "propertyNames": {"type": "string"}})
            ),
            json!({"enum": ["a"], "example": "a", "minimum": 0, "exclusiveMinimum": true})
        );
    }

    #[test]
    fn nested_schemas_are_converted_and_ref_siblings_wrapped() {
        assert_eq!(
            one(json!({"type": "object", "properties": {
                "a": {"type": ["array", "null"], "items": {"const": 1}},
                "b": {"$ref": "#/components/schemas/B", "description": "b"}}})),
            json!({"type": "object", "properties": {
                "a": {"type": "array", "nullable": true, "items": {"enum": [1]}},
                "b": {"allOf": [{"$ref": "#/components/schemas/B"}], "description": "b"}}})
        );
    }
}
