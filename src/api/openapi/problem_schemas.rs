//! The schemas of the problem types of `problems::kinds` in the OpenAPI
//! document: one schema per type (`LockHeldProblem`, …), so that a generated
//! client reads a 409's `holder` as a typed field, and `Problem`, the union
//! of them all told apart by `type`.

use utoipa::openapi::schema::{
    ArrayBuilder, Discriminator, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{OpenApi, Ref, RefOr};

use crate::api::problems::kinds::{Field, KINDS, Kind, NESTED, Ty};

impl Kind {
    fn schema(&self) -> Schema {
        let text = || ObjectBuilder::new().schema_type(Type::String);
        let base = ObjectBuilder::new()
            .description(Some(format!(
                "`{}` ({}): {}.",
                self.uri(),
                self.status,
                self.summary
            )))
            .property("type", text().enum_values(Some([self.uri()])))
            .property("title", text())
            .property("status", ObjectBuilder::new().schema_type(Type::Integer))
            .property(
                "detail",
                text().description(Some("What happened, for a person.")),
            )
            .required("type")
            .required("title")
            .required("status")
            .required("detail");
        object(base, self.fields)
    }
}

fn object(mut builder: ObjectBuilder, fields: &[Field]) -> Schema {
    for field in fields {
        builder = builder.property(field.name, field_schema(field));
        if field.required {
            builder = builder.required(field.name);
        }
    }
    builder.into()
}

fn field_schema(field: &Field) -> RefOr<Schema> {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    let schema: RefOr<Schema> = match field.ty {
        Ty::Text => text().into(),
        Ty::Int => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Int64,
            )))
            .into(),
        Ty::Bool => ObjectBuilder::new().schema_type(Type::Boolean).into(),
        Ty::Texts => ArrayBuilder::new().items(text()).into(),
        Ty::OneOf(values) => text().enum_values(Some(values.iter().copied())).into(),
        Ty::Labels => ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(text()))
            .into(),
        Ty::Named(name) => Ref::from_schema_name(name).into(),
        Ty::ListOf(name) => ArrayBuilder::new()
            .items(Ref::from_schema_name(name))
            .into(),
    };
    let schema = if field.nullable {
        OneOfBuilder::new()
            .item(schema)
            .item(super::nullable::null())
            .into()
    } else {
        schema
    };
    describe(schema, field.doc)
}

fn describe(schema: RefOr<Schema>, doc: &str) -> RefOr<Schema> {
    match schema {
        RefOr::T(Schema::Object(mut o)) => {
            o.description = Some(doc.to_owned());
            RefOr::T(Schema::Object(o))
        }
        RefOr::T(Schema::Array(mut a)) => {
            a.description = Some(doc.to_owned());
            RefOr::T(Schema::Array(a))
        }
        RefOr::T(Schema::OneOf(mut o)) => {
            o.description = Some(doc.to_owned());
            RefOr::T(Schema::OneOf(o))
        }
        RefOr::Ref(mut r) => {
            r.description = doc.to_owned();
            RefOr::Ref(r)
        }
        other => other,
    }
}

/// Adds the schema of every kind, their nested objects, and `Problem`.
pub fn add_components(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    let mut union = OneOfBuilder::new().description(Some(
        "An RFC 9457 problem: `type`, `title`, `status`, `detail`, and the extension \
         fields of its `type`. Any problem the server answers.",
    ));
    let mut discriminator = Discriminator::new("type");
    for kind in KINDS {
        components
            .schemas
            .insert(kind.schema_name(), kind.schema().into());
        union = union.item(Ref::from_schema_name(kind.schema_name()));
        discriminator.mapping.insert(
            kind.uri(),
            format!("#/components/schemas/{}", kind.schema_name()),
        );
    }
    components.schemas.insert(
        "Problem".to_owned(),
        union.discriminator(Some(discriminator)).into(),
    );
    for (name, doc, fields) in NESTED {
        let schema = object(ObjectBuilder::new().description(Some(*doc)), fields);
        components.schemas.insert((*name).to_owned(), schema.into());
    }
}
