//! The shipped device table and device look-up.

use kernel_families::{Devices, FamiliesErrorKind, Precision};

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
        // Each says where its plain-plan memory comes from.
        assert!(dev.source.contains("memory:"), "{name}");
    }
    assert_eq!(d.get("h100-sxm").unwrap().memory_bytes, 85_520_809_984);
    assert!(
        d.get("b200")
            .unwrap()
            .source
            .contains("the datasheet says 180 GB")
    );
    // The devices with an SM count and memory, in file order; the ten above keep the
    // figures the plain planner's golden outputs were made with.
    assert_eq!(
        d.names(),
        [
            "h100-sxm",
            "h100-pcie",
            "h100-nvl",
            "h200",
            "h20",
            "gh200",
            "b200",
            "a100-80gb",
            "a100-40gb",
            "a100-pcie-80gb",
            "a100-pcie-40gb",
            "l40s",
            "l4",
            "a40",
            "rtx4090",
            "rtx3090",
            "rtx6000-ada",
            "rtx5090",
            "mi300x"
        ]
    );
    let named_only: Vec<(&str, &str)> = d
        .named_only()
        .iter()
        .map(|n| (n.name.as_str(), n.missing.as_str()))
        .collect();
    assert_eq!(
        named_only,
        [
            ("gb200", "SM count and memory"),
            ("l40", "SM count and memory"),
            ("a10g", "SM count and memory"),
            ("a10", "SM count"),
            ("mi325x", "SM count and memory"),
        ]
    );
}

/// A device the table names without its SM count or memory is refused naming what is missing
/// and where its other figures come from, not "unknown".
#[test]
fn a_named_device_without_figures_is_refused_with_what_is_missing() {
    let d = Devices::builtin().unwrap();
    let e = d.get("L40").unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel-families/devices.toml: device `l40`: the table names this device without its SM count and memory (no attributable print-out gives it: no print-out of any kind was found (data/devices/README.md, 'Not found'): no product string, SM count, memory, CUDA's total, L2 or compute capability); the planner refuses it rather than guess: give the SM count itself (--sm-count N) and a --budget in bytes for a plain plan, or name a device with figures"
    );
    assert!(matches!(*e.kind, FamiliesErrorKind::FiguresUnknown { .. }));
    assert!(
        d.get("a10")
            .unwrap_err()
            .to_string()
            .contains("without its SM count (")
    );
    assert!(d.get("amd-mi325x").is_err());
}

/// The figures an engine reads, per device, as the print-outs of data/devices/devices.csv give
/// them: product string, CUDA's total and its precision, L2, compute capability, vendor.
#[test]
fn engine_figures_match_the_print_outs() {
    let d = Devices::builtin().unwrap();
    let rows = csv(include_str!("../../../data/devices/devices.csv"));
    let header = &rows[0];
    let col = |row: &[String], name: &str| -> String {
        let i = header.iter().position(|h| h == name).unwrap();
        row[i].clone()
    };
    let num = |s: String| (!s.is_empty()).then(|| s.parse::<u64>().unwrap());
    for dev in d.all() {
        let row = rows
            .iter()
            .find(|r| r[0] == short(&dev.name))
            .unwrap_or_else(|| panic!("{}: no row", dev.name));
        let product = col(row, "product_string");
        assert_eq!(
            dev.product.as_deref(),
            Some(product.as_str()),
            "{}",
            dev.name
        );
        assert_eq!(
            dev.vendor.as_deref(),
            Some(col(row, "vendor").as_str()),
            "{}",
            dev.name
        );
        let cc = col(row, "compute_capability");
        let cc = cc.split(' ').next().unwrap_or("");
        assert_eq!(
            dev.compute_capability.as_deref(),
            (!cc.is_empty()).then_some(cc),
            "{}",
            dev.name
        );
        let precision = col(row, "total_precision");
        let expected = if precision.starts_with("exact") {
            Some(Precision::Exact)
        } else if precision.starts_with("MiB floor") {
            Some(Precision::MibFloor)
        } else {
            None
        };
        if dev.name == "h100-sxm" {
            // vLLM's own print on the logged runs (79.19 GiB), not the deviceQuery's driver.
            assert_eq!(dev.cuda_total_bytes, Some(85_032_697_856));
            assert_eq!(dev.cuda_total_precision, Some(Precision::PrintedGib));
            assert_eq!(num(col(row, "cuda_total_bytes")), Some(85_045_477_376));
        } else {
            assert_eq!(
                dev.cuda_total_bytes,
                num(col(row, "cuda_total_bytes")),
                "{}",
                dev.name
            );
            assert_eq!(dev.cuda_total_precision, expected, "{}", dev.name);
        }
        if let Some(sm) = num(col(row, "sm_count")) {
            assert_eq!(dev.sm_count, sm, "{}", dev.name);
        }
        match num(col(row, "l2_cache_bytes")) {
            Some(l2) => {
                assert_eq!(dev.l2_cache_bytes, Some(l2), "{}", dev.name);
                assert_eq!(
                    dev.l2_cache_precision,
                    Some(Precision::Exact),
                    "{}",
                    dev.name
                );
            }
            // torch prints L2 in whole MiB, floored: H200 60MB, B200 126MB.
            None => match dev.name.as_str() {
                "h200" => assert_eq!(dev.l2_cache_bytes, Some(60 * MIB)),
                "b200" => assert_eq!(dev.l2_cache_bytes, Some(126 * MIB)),
                _ => assert_eq!(dev.l2_cache_bytes, None, "{}", dev.name),
            },
        }
        match num(col(row, "nvidia_smi_total_mib")) {
            Some(mib) => assert_eq!(dev.memory_bytes, mib * MIB, "{}", dev.name),
            // No nvidia-smi figure: the plain planner's memory is CUDA's total for the devices
            // added with this table, the figure it always had for the others.
            None => match dev.name.as_str() {
                "h100-pcie" | "h200" | "b200" | "mi300x" => {}
                _ => assert_eq!(Some(dev.memory_bytes), dev.cuda_total_bytes, "{}", dev.name),
            },
        }
    }
}

/// The CSV's short name of a device of the table.
fn short(table: &str) -> &str {
    match table {
        "h100-sxm" => "h100-sxm5-80gb",
        "h100-pcie" => "h100-pcie-80gb",
        "h100-nvl" => "h100-nvl-94gb",
        "h200" => "h200-sxm-141gb",
        "gh200" => "gh200-96gb",
        "a100-80gb" => "a100-sxm4-80gb",
        "a100-40gb" => "a100-sxm4-40gb",
        "rtx4090" => "rtx-4090",
        "rtx3090" => "rtx-3090",
        "rtx6000-ada" => "rtx-6000-ada",
        "rtx5090" => "rtx-5090",
        other => other,
    }
}

/// RFC 4180 fields: commas, quotes doubled inside quoted fields; one record per line.
fn csv(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let mut fields = vec![String::new()];
            let mut quoted = false;
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                match (c, quoted) {
                    ('"', true) if chars.peek() == Some(&'"') => {
                        chars.next();
                        fields.last_mut().unwrap().push('"');
                    }
                    ('"', _) => quoted = !quoted,
                    (',', false) => fields.push(String::new()),
                    (c, _) => fields.last_mut().unwrap().push(c),
                }
            }
            fields
        })
        .collect()
}

#[test]
fn a_figure_comes_with_its_precision() {
    let with = |extra: &str| err(&format!("schema = 1\n{GPU}{extra}"));
    assert_eq!(
        with("cuda_total_bytes = 900\n"),
        "devices.toml: device `gpu`: `cuda_total_precision` = \"\": missing: say how exact the figure is (`exact`, `mib_floor` or `printed_gib`)"
    );
    assert_eq!(
        with("cuda_total_bytes = 900\ncuda_total_precision = \"about\"\n"),
        "devices.toml: device `gpu`: `cuda_total_precision` = \"about\": write `exact`, `mib_floor` or `printed_gib`"
    );
    assert_eq!(
        with("l2_cache_precision = \"exact\"\n"),
        "devices.toml: device `gpu`: `l2_cache_precision` = \"exact\": a precision without its figure"
    );
    assert_eq!(
        with("l2_cache_bytes = 0\nl2_cache_precision = \"exact\"\n"),
        "devices.toml: device `gpu`: `l2_cache_bytes` is 0"
    );
    let d = Devices::from_toml(
        &format!("schema = 1\n{GPU}cuda_total_bytes = 900\ncuda_total_precision = \"mib_floor\"\n"),
        "devices.toml",
    )
    .unwrap();
    assert_eq!(
        d.get("gpu").unwrap().cuda_total_precision,
        Some(Precision::MibFloor)
    );
}

#[test]
fn an_unknown_device_lists_the_known_names() {
    let e = Devices::builtin().unwrap().get("h100-nvl-4").unwrap_err();
    assert_eq!(
        e.to_string(),
        "kernel-families/devices.toml: unknown device `h100-nvl-4` (known: h100-sxm, h100-pcie, h100-nvl, h200, h20, gh200, b200, a100-80gb, a100-40gb, a100-pcie-80gb, a100-pcie-40gb, l40s, l4, a40, rtx4090, rtx3090, rtx6000-ada, rtx5090, mi300x); name one of them (--device NAME) or give the SM count itself (--sm-count N)"
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
        "devices.toml: device `gpu`: line 7, column 1: unknown field `memory_gib`, expected one of `name`, `sm_count`, `memory_bytes`, `source`, `aliases`, `product`, `cuda_total_bytes`, `cuda_total_precision`, `l2_cache_bytes`, `l2_cache_precision`, `compute_capability`, `vendor`"
    );
    assert_eq!(
        err(&format!(
            "schema = 1\n{}",
            GPU.replace("sm_count = 10", "sm_count = -1")
        )),
        "devices.toml: device `gpu`: line 4, column 12: invalid value: integer `-1`, expected u64"
    );
}
