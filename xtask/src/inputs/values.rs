//! Values of command-line flags that clap cannot parse alone: row lists, byte budgets, `--set`.
//!
//! Invariants: every parse error is a one-line message naming the flag, the text and what to
//! write instead; row lists come out sorted and without duplicates; byte counts are exact
//! (decimal inputs are scaled with integer arithmetic, never through floating point).

use std::fmt;

/// Most row counts one `--rows` may expand to: a plan holds about 0.4 KB, so 2^20 of them stay
/// under half a GiB, and a sweep of more is surely a typo.
pub const MAX_ROW_COUNTS: usize = 1 << 20;

/// Parses `--rows`: comma-separated items, each `N`, `A..=B` (every count), `A..=B:xK` (A, A*K,
/// A*K^2, ... up to B) or `A..=B:+K` (A, A+K, ... up to B).
pub fn parse_rows(text: &str) -> Result<Vec<u64>, String> {
    let bad = |why: &str| {
        format!("--rows `{text}`: {why}; write e.g. `1,2,8`, `1..=4096` or `1..=8192:x2`")
    };
    let mut rows = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad("an empty item"));
        }
        let count = |s: &str| -> Result<u64, String> {
            let v: u64 = s
                .trim()
                .replace('_', "")
                .parse()
                .map_err(|_| bad(&format!("`{s}` is not a whole number")))?;
            if v == 0 {
                Err(bad("row counts start at 1"))
            } else {
                Ok(v)
            }
        };
        let Some((lo, rest)) = item.split_once("..=") else {
            if item.contains("..") {
                return Err(bad("ranges are inclusive: write `A..=B`"));
            }
            rows.push(count(item)?);
            continue;
        };
        let (hi, step) = match rest.split_once(':') {
            Some((hi, step)) => (hi, Some(step)),
            None => (rest, None),
        };
        let (lo, hi) = (count(lo)?, count(hi)?);
        if lo > hi {
            return Err(bad(&format!("{lo} is above {hi}")));
        }
        let mut n = lo;
        loop {
            rows.push(n);
            if rows.len() > MAX_ROW_COUNTS {
                return Err(bad(&format!("more than {MAX_ROW_COUNTS} row counts")));
            }
            let next = match step {
                None => n.checked_add(1),
                Some(s) if s.starts_with('x') => {
                    let k = count(&s[1..])?;
                    if k < 2 {
                        return Err(bad("a factor `xK` needs K >= 2"));
                    }
                    n.checked_mul(k)
                }
                Some(s) if s.starts_with('+') => n.checked_add(count(&s[1..])?),
                Some(s) => return Err(bad(&format!("unknown step `{s}` (use `xK` or `+K`)"))),
            };
            match next {
                Some(v) if v <= hi => n = v,
                _ => break,
            }
        }
    }
    rows.sort_unstable();
    rows.dedup();
    Ok(rows)
}

/// A `--budget`: bytes, or a fraction of the device's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Exact bytes.
    Bytes(u64),
    /// `numerator / 10^scale` of the device's memory (`0.9` = 9 / 10^1).
    Fraction {
        /// Digits of the fraction.
        numerator: u64,
        /// Decimal places.
        scale: u32,
    },
}

impl Budget {
    /// Bytes, given the device memory (needed for a fraction).
    pub fn bytes(self, device_memory: Option<u64>) -> Result<u64, String> {
        match self {
            Budget::Bytes(b) => Ok(b),
            Budget::Fraction { numerator, scale } => {
                let memory = device_memory.ok_or(
                    "--budget as a fraction needs a device with known memory (--device NAME)",
                )?;
                let bytes = u128::from(memory) * u128::from(numerator) / 10u128.pow(scale);
                u64::try_from(bytes).map_err(|_| "--budget overflows 64-bit bytes".to_owned())
            }
        }
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Budget::Bytes(b) => write!(f, "{b} bytes"),
            Budget::Fraction { numerator, scale } => {
                write!(
                    f,
                    "{} of the device",
                    numerator as f64 / 10f64.powi(scale as i32)
                )
            }
        }
    }
}

/// Parses `--budget`: a size with a unit (`80GiB`, `141GB`, `1.5TiB`, `85899345920B`), or a
/// fraction of the device in (0, 1] written with a decimal point (`0.9`, `1.0`). A bare whole
/// number is refused: `1` could mean one byte or the whole device.
pub fn parse_budget(text: &str) -> Result<Budget, String> {
    let bad = |why: &str| {
        format!(
            "--budget `{text}`: {why}; write a size with a unit (`80GiB`, `141GB`, `85899345920B`) or a fraction of the device with a decimal point (`0.9`, `1.0`)"
        )
    };
    let t = text.trim().replace('_', "");
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let unit = unit.trim();
    if number.is_empty() || number == "." {
        return Err(bad("no number"));
    }
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if frac.contains('.') {
        return Err(bad("more than one decimal point"));
    }
    if frac.len() > 18 {
        return Err(bad("more than 18 decimal places"));
    }
    let digits: u128 = format!("{whole}{frac}")
        .parse()
        .map_err(|_| bad("not a number"))?;
    let scale = frac.len() as u32;
    let multiplier: u128 = match unit {
        "" if number.contains('.') => {
            let numerator = u64::try_from(digits).map_err(|_| bad("not a number"))?;
            if numerator == 0 || u128::from(numerator) > 10u128.pow(scale) {
                return Err(bad("a fraction of the device is above 0 and at most 1"));
            }
            return Ok(Budget::Fraction { numerator, scale });
        }
        "" => return Err(bad("a bare number is ambiguous (bytes, or the device?)")),
        "B" => 1,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        other => {
            return Err(bad(&format!(
                "unknown unit `{other}` (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
            )));
        }
    };
    let scaled = digits
        .checked_mul(multiplier)
        .ok_or_else(|| bad("more than 2^64 - 1 bytes"))?;
    // A decimal size rounds down to whole bytes (`1.1GiB` is 1181116006 bytes).
    let bytes =
        u64::try_from(scaled / 10u128.pow(scale)).map_err(|_| bad("more than 2^64 - 1 bytes"))?;
    Ok(Budget::Bytes(bytes))
}

/// Parses `--set KEY=VALUE`.
pub fn parse_set(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!(
            "--set `{text}`: write KEY=VALUE, e.g. `--set mode=decode`"
        )),
    }
}

/// The largest `--align`: 1 GiB, far above any allocator's alignment (CUDA's caching
/// allocator rounds to 512 bytes, huge pages are 2 MiB), so an aligned size or the arena's sum
/// overflows only through the sizes themselves, never through the alignment.
pub const MAX_ALIGN: u64 = 1 << 30;

/// Parses `--align`: a power of two from 1 to [`MAX_ALIGN`] bytes.
pub fn parse_align(text: &str) -> Result<u64, String> {
    let bad = |why: &str| {
        format!("--align `{text}`: {why}; write a power of two of bytes, e.g. 256 or 512")
    };
    match text.trim().parse::<u64>() {
        Ok(0) => Err(bad("an alignment is at least 1 byte")),
        Ok(v) if v > MAX_ALIGN => Err(bad("above the largest alignment, 1073741824 (1 GiB)")),
        Ok(v) if !v.is_power_of_two() => Err(bad("not a power of two")),
        Ok(v) => Ok(v),
        Err(_) => Err(bad("not a whole number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_lists() {
        assert_eq!(parse_rows("1,2,8").unwrap(), [1, 2, 8]);
        assert_eq!(parse_rows("8, 2,2,1").unwrap(), [1, 2, 8]);
        assert_eq!(parse_rows("1..=4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(parse_rows("1..=8192:x2").unwrap().len(), 14);
        assert_eq!(parse_rows("3..=20:x3").unwrap(), [3, 9]);
        assert_eq!(parse_rows("1..=10:+4").unwrap(), [1, 5, 9]);
        assert_eq!(parse_rows("1_024").unwrap(), [1024]);
        assert_eq!(parse_rows("1..=18446744073709551615:x2").unwrap().len(), 64);
        let e = |t: &str| parse_rows(t).unwrap_err();
        assert_eq!(
            e("0"),
            "--rows `0`: row counts start at 1; write e.g. `1,2,8`, `1..=4096` or `1..=8192:x2`"
        );
        assert_eq!(
            e("1..8"),
            "--rows `1..8`: ranges are inclusive: write `A..=B`; write e.g. `1,2,8`, `1..=4096` or `1..=8192:x2`"
        );
        assert!(e("8..=1").contains("8 is above 1"));
        assert!(e("1..=8:x1").contains("needs K >= 2"));
        assert!(e("1..=8:y2").contains("unknown step `y2`"));
        assert!(e("a").contains("`a` is not a whole number"));
        assert!(e("1,,2").contains("an empty item"));
        assert!(e("1..=100000000").contains("more than 1048576 row counts"));
    }

    #[test]
    fn budgets() {
        let e = |t: &str| parse_budget(t).unwrap_err();
        assert_eq!(parse_budget("80GiB").unwrap(), Budget::Bytes(80 << 30));
        assert_eq!(
            parse_budget("141GB").unwrap(),
            Budget::Bytes(141_000_000_000)
        );
        assert_eq!(parse_budget("1.5 KiB").unwrap(), Budget::Bytes(1536));
        assert_eq!(parse_budget("1024B").unwrap(), Budget::Bytes(1024));
        assert_eq!(
            parse_budget("1").unwrap_err(),
            "--budget `1`: a bare number is ambiguous (bytes, or the device?); write a size with a unit (`80GiB`, `141GB`, `85899345920B`) or a fraction of the device with a decimal point (`0.9`, `1.0`)"
        );
        assert_eq!(
            parse_budget("1.1GiB").unwrap(),
            Budget::Bytes(1_181_116_006)
        );
        assert!(e(".").contains("no number"));
        assert_eq!(
            parse_budget(".5").unwrap(),
            Budget::Fraction {
                numerator: 5,
                scale: 1
            }
        );
        assert_eq!(
            parse_budget("0.9").unwrap(),
            Budget::Fraction {
                numerator: 9,
                scale: 1
            }
        );
        assert_eq!(
            parse_budget("0.9")
                .unwrap()
                .bytes(Some(85_520_809_984))
                .unwrap(),
            76_968_728_985
        );
        assert_eq!(
            parse_budget("1.0").unwrap().bytes(Some(1000)).unwrap(),
            1000
        );
        assert!(e("lots").contains("no number"));
        assert!(e("1.5").contains("at most 1"));
        assert!(e("0.0").contains("above 0"));
        assert!(e("80 GiBs").contains("unknown unit `GiBs`"));
        assert!(e("99999999999999999999TiB").contains("more than 2^64 - 1 bytes"));
        assert!(e("1.2.3").contains("more than one decimal point"));
        assert!(parse_budget("0.9").unwrap().bytes(None).is_err());
    }

    #[test]
    fn settings_and_align() {
        assert_eq!(
            parse_set("mode=decode").unwrap(),
            ("mode".into(), "decode".into())
        );
        assert!(parse_set("mode").unwrap_err().contains("KEY=VALUE"));
        assert_eq!(parse_align("256").unwrap(), 256);
        assert_eq!(parse_align("1").unwrap(), 1);
        assert_eq!(parse_align("1073741824").unwrap(), 1 << 30);
        assert_eq!(
            parse_align("3").unwrap_err(),
            "--align `3`: not a power of two; write a power of two of bytes, e.g. 256 or 512"
        );
        assert_eq!(
            parse_align("0").unwrap_err(),
            "--align `0`: an alignment is at least 1 byte; write a power of two of bytes, e.g. 256 or 512"
        );
        assert_eq!(
            parse_align("9223372036854775808").unwrap_err(),
            "--align `9223372036854775808`: above the largest alignment, 1073741824 (1 GiB); write a power of two of bytes, e.g. 256 or 512"
        );
        assert!(parse_align("x").unwrap_err().contains("not a whole number"));
    }
}
