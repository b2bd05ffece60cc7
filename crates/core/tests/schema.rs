//! docs/results-schema.json is generated from the result types; this test fails when it is stale.
//! Regenerate with `NVMSWAP_UPDATE_SCHEMA=1 cargo test -p nvmswap-core --test schema`.

use nvmswap_core::results::{json_schema, RunResult, RunsReport};

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results-schema.json")
}

#[test]
fn committed_json_schema_is_fresh() {
    let fresh = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
    if std::env::var_os("NVMSWAP_UPDATE_SCHEMA").is_some() {
        std::fs::write(path(), &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(path()).unwrap_or_default();
    assert!(
        committed == fresh,
        "docs/results-schema.json is stale: run NVMSWAP_UPDATE_SCHEMA=1 cargo test -p nvmswap-core --test schema"
    );
}

#[test]
fn schema_names_every_contract_field() {
    let schema = json_schema();
    let run = &schema["$defs"]["RunResult"];
    let report =
        serde_json::to_value(RunsReport::new("pressure", 1, vec![RunResult::default()])).unwrap();
    for field in report["runs"][0].as_object().unwrap().keys() {
        assert!(
            run["properties"].get(field).is_some(),
            "RunResult.{field} missing from the schema"
        );
    }
    assert!(run["required"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "tabs_opened"));
    assert_eq!(schema["oneOf"].as_array().unwrap().len(), 3);
}
