//! The one shape of a nullable value in the OpenAPI document: `oneOf` the
//! value's schema and `{"enum": [null]}`. OpenAPI 3.1 readers take it as
//! "the value or null", and so do readers of 3.0 schemas such as progenitor,
//! which cannot parse the list of types (`"type": ["string", "null"]`) nor a
//! `{"type": "null"}` schema that utoipa writes for an `Option`.

use serde_json::Value;
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayItems, Object, OneOf, Schema, SchemaType, Type,
};
use utoipa::openapi::{OpenApi, RefOr};

/// The schema that only `null` satisfies.
pub fn null() -> Object {
    let mut schema = Object::new();
    schema.schema_type = SchemaType::AnyValue;
    schema.enum_values = Some(vec![Value::Null]);
    schema
}

/// Rewrites every nullable schema of the document's components to the one shape.
pub fn reshape(doc: &mut OpenApi) {
    if let Some(components) = doc.components.as_mut() {
        for schema in components.schemas.values_mut() {
            reshape_ref_or(schema);
        }
    }
}

fn reshape_ref_or(schema: &mut RefOr<Schema>) {
    if let RefOr::T(schema) = schema {
        reshape_schema(schema);
    }
}

/// Takes `Null` out of a list of types; whether it was there.
fn drop_null(schema_type: &mut SchemaType) -> bool {
    let SchemaType::Array(types) = schema_type else {
        return false;
    };
    let nullable = types.contains(&Type::Null);
    types.retain(|t| *t != Type::Null);
    if let [only] = types.as_slice() {
        *schema_type = SchemaType::Type(only.clone());
    }
    nullable
}

fn is_null(schema: &RefOr<Schema>) -> bool {
    matches!(schema, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null))
}

/// `schema` or null, its description kept on the whole.
fn or_null(schema: Schema, description: Option<String>) -> Schema {
    let mut one_of = OneOf::new();
    one_of.items = vec![RefOr::T(schema), RefOr::T(Schema::Object(null()))];
    one_of.description = description;
    Schema::OneOf(one_of)
}

fn reshape_schema(schema: &mut Schema) {
    match schema {
        Schema::Object(object) => {
            for property in object.properties.values_mut() {
                reshape_ref_or(property);
            }
            if let Some(extra) = object.additional_properties.as_deref_mut()
                && let AdditionalProperties::RefOr(extra) = extra
            {
                reshape_ref_or(extra);
            }
            if drop_null(&mut object.schema_type) {
                let description = object.description.take();
                let inner = std::mem::replace(object, Object::new());
                *schema = or_null(Schema::Object(inner), description);
            }
        }
        Schema::Array(array) => {
            if let ArrayItems::RefOrSchema(items) = &mut array.items {
                reshape_ref_or(items);
            }
            if drop_null(&mut array.schema_type) {
                let description = array.description.take();
                let inner = std::mem::take(array);
                *schema = or_null(Schema::Array(inner), description);
            }
        }
        Schema::OneOf(one_of) => {
            for item in one_of.items.iter_mut() {
                if is_null(item) {
                    *item = RefOr::T(Schema::Object(null()));
                } else {
                    reshape_ref_or(item);
                }
            }
        }
        Schema::AllOf(all_of) => all_of.items.iter_mut().for_each(reshape_ref_or),
        Schema::AnyOf(any_of) => any_of.items.iter_mut().for_each(reshape_ref_or),
        _ => {}
    }
}
