//! Generates the client from the committed spec into `$OUT_DIR/client.rs`.
//! progenitor reads OpenAPI 3.0 only and refuses other versions outright, so
//! it reads the 3.0.3 rendering the server serves at `/openapi-3.0.json`
//! (`leasehold openapi --openapi-version 3.0`), as it is committed.

fn main() {
    let path = std::env::var("LEASEHOLD_SPEC").unwrap_or("../../openapi/openapi-3.0.json".into());
    println!("cargo:rerun-if-changed={path}");
    println!("cargo:rerun-if-env-changed=LEASEHOLD_SPEC");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let spec: openapiv3::OpenAPI =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("openapiv3 cannot read {path}: {e}"));
    let tokens = progenitor::Generator::default()
        .generate_tokens(&spec)
        .unwrap_or_else(|e| panic!("progenitor cannot generate from {path}: {e}"));
    let code = prettyplease::unparse(&syn::parse2(tokens).expect("progenitor emits Rust"));
    let out = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("client.rs");
    std::fs::write(out, code).unwrap();
}
