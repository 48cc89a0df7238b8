//! The shipped device table and device look-up.

use kernel_families::{Devices, FamiliesErrorKind};

const MIB: u64 = 1 << 20;

#[test]
fn builtin_table_loads_with_the_spec_devices() {
    let d = Devices::builtin().unwrap();
    let expect = [
        ("h100-sxm", 132, 81_559 * MIB),
        ("h200", 132, 143_771 * MIB),
        ("a100-80gb", 108, 81_920 * MIB),
        ("l40s", 142, 46_068 * MIB),
        ("rtx4090", 128, 24_564 * MIB),
        ("b200", 148, 183_359 * MIB),
        ("h100-pcie", 114, 81_559 * MIB),
        ("a100-40gb", 108, 40_960 * MIB),
        ("l4", 58, 23_034 * MIB),
        ("mi300x", 304, 196_608 * MIB),
    ];
    for (name, sm, mem) in expect {
        let dev = d.get(name).unwrap();
        assert_eq!((dev.sm_count, dev.memory_bytes), (sm, mem), "{name}");
        assert!(
            dev.source.contains("SMs:") && dev.source.contains("memory:"),
            "{name}"
        );
    }
    assert_eq!(d.get("h100-sxm").unwrap().memory_bytes, 85_520_809_984);
    assert!(
        d.get("b200")
            .unwrap()
            .source
            .contains("the datasheet says 180 GB")
    );
    assert_eq!(d.all().len(), expect.len());
    assert_eq!(d.names()[0], "h100-sxm");
}

#[test]
fn an_unknown_device_lists_the_known_names() {
    let e = Devices::builtin().unwrap().get("h100-nvl").unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel-families/devices.toml: unknown device `h100-nvl` (known: h100-sxm, h100-pcie, h200, b200, a100-80gb, a100-40gb, l40s, l4, rtx4090, mi300x); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
    );
    assert!(matches!(*e.kind, FamiliesErrorKind::UnknownDevice { .. }));
}

#[test]
fn names_ignore_case_and_aliases_name_the_common_cards() {
    let d = Devices::builtin().unwrap();
    for (asked, found) in [
        ("h100", "h100-sxm"),
        ("H100", "h100-sxm"),
        ("H100-SXM", "h100-sxm"),
        ("h200", "h200"),
        ("B200", "b200"),
        ("a100-40gb", "a100-40gb"),
        ("A100-SXM4-80GB", "a100-80gb"),
        ("l40s", "l40s"),
        ("L40S", "l40s"),
        ("mi300x", "mi300x"),
        ("MI300X", "mi300x"),
        ("4090", "rtx4090"),
    ] {
        assert_eq!(d.get(asked).unwrap().name, found, "{asked}");
    }
    assert_eq!(d.get("mi300x").unwrap().memory_bytes, 206_158_430_208);
}

#[test]
fn aliases_are_unique_ignoring_case() {
    assert_eq!(
        err(&format!(
            "schema = 1\n{GPU}aliases = [\"big\"]\n{}",
            GPU.replace("\"gpu\"", "\"BIG\"")
        )),
        "devices.toml: device `BIG`: duplicate device name `BIG`"
    );
    assert_eq!(
        err(&format!("schema = 1\n{GPU}aliases = [\"GPU\"]\n")),
        "devices.toml: device `gpu`: duplicate device name `gpu`"
    );
    assert_eq!(
        err(&format!("schema = 1\n{GPU}aliases = [\" \"]\n")),
        "devices.toml: device `gpu`: an alias is empty"
    );
}

fn err(text: &str) -> String {
    Devices::from_toml(text, "devices.toml")
        .unwrap_err()
        .to_string()
}

const GPU: &str =
    "[[device]]\nname = \"gpu\"\nsm_count = 10\nmemory_bytes = 1000\nsource = \"measured\"\n";

#[test]
fn another_table_loads() {
    let d = Devices::from_toml(&format!("schema = 1\n{GPU}"), "mine.toml").unwrap();
    assert_eq!(d.get("gpu").unwrap().sm_count, 10);
    assert_eq!(d.origin(), "mine.toml");
    assert_eq!(
        d.get("h100-sxm").unwrap_err().to_string(),
        "mine.toml: unknown device `h100-sxm` (known: gpu); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
    );
}

#[test]
fn bad_tables_are_refused_naming_the_device() {
    assert_eq!(
        err(&format!("schema = 3\n{GPU}")),
        "devices.toml: unknown schema 3; this version reads schema = 1"
    );
    assert_eq!(
        err(&format!("schema = 1\n{GPU}{GPU}")),
        "devices.toml: device `gpu`: duplicate device name `gpu`"
    );
    assert_eq!(
        err(&format!(
            "schema = 1\n{}",
            GPU.replace("sm_count = 10", "sm_count = 0")
        )),
        "devices.toml: device `gpu`: `sm_count` is 0"
    );
    assert_eq!(
        err(&format!("schema = 1\n{}", GPU.replace("= 1000", "= 0"))),
        "devices.toml: device `gpu`: `memory_bytes` is 0"
    );
    assert_eq!(
        err(&format!(
            "schema = 1\n{}",
            GPU.replace("\"measured\"", "\"\"")
        )),
        "devices.toml: device `gpu`: `source` is empty; say where the figures come from"
    );
    assert_eq!(
        err(&format!(
            "schema = 1\n{}",
            GPU.replace("name = \"gpu\"", "name = \"\"")
        )),
        "devices.toml: device #1: `name` is empty"
    );
    assert_eq!(
        err(&format!("schema = 1\n{}memory_gib = 80\n", GPU)),
        "devices.toml: device `gpu`: line 7, column 1: unknown field `memory_gib`, expected one of `name`, `sm_count`, `memory_bytes`, `source`, `aliases`, `product`, `cuda_total_bytes`, `l2_cache_bytes`, `compute_capability`, `vendor`"
    );
    assert_eq!(
        err(&format!(
            "schema = 1\n{}",
            GPU.replace("sm_count = 10", "sm_count = -1")
        )),
        "devices.toml: device `gpu`: line 4, column 12: invalid value: integer `-1`, expected u64"
    );
}
