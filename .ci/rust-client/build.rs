//! Generates the client from the committed spec into `$OUT_DIR/client.rs`.
//! progenitor reads OpenAPI 3.0 only and refuses other versions outright;
//! the document uses nothing 3.0 lacks (nullable values are `oneOf` a
//! schema and `enum: [null]`), so only its version number is changed here.

fn main() {
    let path = std::env::var("LEASEHOLD_SPEC").unwrap_or("../../openapi/openapi.json".into());
    println!("cargo:rerun-if-changed={path}");
    println!("cargo:rerun-if-env-changed=LEASEHOLD_SPEC");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("the spec is JSON");
    doc["openapi"] = "3.0.3".into();
    let spec: openapiv3::OpenAPI =
        serde_json::from_value(doc).unwrap_or_else(|e| panic!("openapiv3 cannot read {path}: {e}"));
    let tokens = progenitor::Generator::default()
        .generate_tokens(&spec)
        .unwrap_or_else(|e| panic!("progenitor cannot generate from {path}: {e}"));
    let code = prettyplease::unparse(&syn::parse2(tokens).expect("progenitor emits Rust"));
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("client.rs");
    std::fs::write(out, code).unwrap();
}
