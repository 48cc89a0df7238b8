//! The dims an engine profile's kernel families read: every folder's own `families.toml` (a
//! folder without one takes the one of the folder it extends) reads exactly the dims of the
//! standard families, `kernel_families::standard::REQUIRED_DIMS`, by the same families, and
//! the import of every shared model (`data/models/`) defines them. A circuit without one is refused when a
//! profile binds its families, with the dim and the family that reads it (as
//! `kernel_families::standard` shows).

use kernel_families::Families;
use kernel_families::standard::REQUIRED_DIMS;

#[test]
fn every_folder_reads_the_standard_dims_and_an_import_defines_them() {
    let standard: Vec<(String, Vec<String>)> = REQUIRED_DIMS
        .iter()
        .map(|(d, f)| (d.to_string(), f.iter().map(|s| s.to_string()).collect()))
        .collect();
    let mut own = Vec::new();
    for folder in engines::folders() {
        let Some(text) = folder.families else {
            continue;
        };
        own.push(folder.name);
        let families = Families::from_toml(text, folder.name).unwrap();
        // SGLang's flow plans no forward, so its folders name no kernel family at all.
        if folder.name.starts_with("sglang-") {
            assert_eq!(families.dims_read(), Vec::new(), "{}", folder.name);
            continue;
        }
        assert_eq!(families.dims_read(), standard, "{}", folder.name);
    }
    assert!(!own.is_empty());
    // Every shared model's import defines them.
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/models");
    let mut imported = 0;
    for entry in std::fs::read_dir(&models).unwrap() {
        let config = entry.unwrap().path().join("config.json");
        let Ok(text) = std::fs::read_to_string(&config) else {
            continue;
        };
        let origin = config.display().to_string();
        let circuit = circuit_hf::import(&text, &origin).unwrap().circuit;
        for (dim, _) in REQUIRED_DIMS {
            assert!(circuit.dim(dim).is_some(), "{origin}: {dim}");
        }
        imported += 1;
    }
    assert!(imported >= 5, "{imported} models");
}
