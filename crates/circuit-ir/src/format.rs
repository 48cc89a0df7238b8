//! Tensor storage formats (docs/formats.md, "Tensor formats") and the bytes of a `rows x width`
//! tensor in each.
//!
//! Invariants:
//! - `Format::from_str` and `Display` round-trip: `f.to_string().parse() == Ok(f)`.
//! - Byte counts are checked u64 arithmetic; a grouped format refuses a width that is not a
//!   multiple of its group, and every block or group size is at least 1.
//! - Sub-byte elements (int4, nvfp4) are packed two per byte within a row, so an odd row
//!   length takes a last half-filled byte: bytes are `rows * ceil(width / 2)` plus scales.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// bfloat16, 2 bytes.
    Bf16,
    /// IEEE half, 2 bytes.
    F16,
    /// IEEE single, 4 bytes.
    F32,
    /// 32-bit integer, 4 bytes.
    I32,
    /// 64-bit integer, 8 bytes.
    I64,
    /// 8-bit integer, 1 byte (quantized int8 weights, safetensors `I8`).
    I8,
    /// Unsigned byte, 1 byte: packed sub-byte payloads and exponent scales stored as bytes
    /// (MXFP4 blocks and E8M0 scales, NVFP4's packed pairs; safetensors `U8`).
    U8,
    /// 8-bit float without scales, 1 byte.
    Fp8,
    /// 8-bit float with one f32 scale per row: `fp8/token`.
    Fp8PerToken,
    /// 8-bit float with one f32 scale per tensor: `fp8/tensor`.
    Fp8PerTensor,
    /// 8-bit float with one f32 scale per `rows x cols` block (ceil on both sides):
    /// `fp8/block<R>x<C>`.
    Fp8Block {
        /// Block height in rows.
        rows: u64,
        /// Block width in elements.
        cols: u64,
    },
    /// 4-bit integers with a 2-byte scale per `group` elements along the row: `int4/g<N>`.
    Int4 {
        /// Elements per scale.
        group: u64,
    },
    /// 4-bit floats with a 1-byte scale per `group` elements along the row: `nvfp4/g<N>`.
    Nvfp4 {
        /// Elements per scale.
        group: u64,
    },
}

/// The formats, as written, for messages and docs.
pub const FORMAT_NAMES: &str = "bf16, f16, f32, i32, i64, i8, u8, fp8, fp8/token, fp8/tensor, fp8/block<R>x<C>, int4/g<N>, nvfp4/g<N>";

/// A format that does not parse, or a tensor it cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Not one of the formats.
    #[error("unknown format `{text}` (known: {FORMAT_NAMES})")]
    Unknown {
        /// The text.
        text: String,
    },
    /// A block or group size of zero, or one that does not parse.
    #[error("format `{text}`: {what} must be a whole number of at least 1")]
    BadSize {
        /// The text.
        text: String,
        /// Which size.
        what: &'static str,
    },
    /// A row whose width does not fill whole groups.
    #[error("width {width} is not a multiple of the group of {format} ({group} elements)")]
    WidthNotMultiple {
        /// The format.
        format: Format,
        /// The width.
        width: u64,
        /// The group.
        group: u64,
    },
    /// The byte count does not fit in u64.
    #[error("{rows} x {width} elements in {format} overflow 64-bit bytes")]
    Overflow {
        /// The format.
        format: Format,
        /// Rows.
        rows: u64,
        /// Width.
        width: u64,
    },
}

impl Format {
    /// Checks that a row of `width` elements fills whole groups of this format.
    pub fn check_width(self, width: u64) -> Result<(), FormatError> {
        match self {
            Format::Int4 { group } | Format::Nvfp4 { group } if !width.is_multiple_of(group) => {
                Err(FormatError::WidthNotMultiple {
                    format: self,
                    width,
                    group,
                })
            }
            _ => Ok(()),
        }
    }

    /// Bytes of a `rows x width` tensor.
    pub fn bytes(self, rows: u64, width: u64) -> Result<u64, FormatError> {
        self.check_width(width)?;
        let overflow = || FormatError::Overflow {
            format: self,
            rows,
            width,
        };
        let elements = |per: u64| {
            rows.checked_mul(width)
                .and_then(|e| e.checked_mul(per))
                .ok_or_else(overflow)
        };
        match self {
            Format::Bf16 | Format::F16 => elements(2),
            Format::F32 | Format::I32 => elements(4),
            Format::I64 => elements(8),
            Format::I8 | Format::U8 | Format::Fp8 => elements(1),
            Format::Fp8PerToken => width
                .checked_add(4)
                .and_then(|row| row.checked_mul(rows))
                .ok_or_else(overflow),
            Format::Fp8PerTensor => elements(1)?.checked_add(4).ok_or_else(overflow),
            Format::Fp8Block { rows: br, cols: bc } => {
                let scales = rows
                    .div_ceil(br)
                    .checked_mul(width.div_ceil(bc))
                    .and_then(|s| s.checked_mul(4))
                    .ok_or_else(overflow)?;
                elements(1)?.checked_add(scales).ok_or_else(overflow)
            }
            Format::Int4 { group } => packed_row(width, group, 2)
                .and_then(|row| row.checked_mul(rows))
                .ok_or_else(overflow),
            Format::Nvfp4 { group } => packed_row(width, group, 1)
                .and_then(|row| row.checked_mul(rows))
                .ok_or_else(overflow),
        }
    }
}

/// Bytes of one row of 4-bit elements with `scale` bytes per `group` elements.
fn packed_row(width: u64, group: u64, scale: u64) -> Option<u64> {
    (width / group)
        .checked_mul(scale)?
        .checked_add(width.div_ceil(2))
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Bf16 => f.write_str("bf16"),
            Format::F16 => f.write_str("f16"),
            Format::F32 => f.write_str("f32"),
            Format::I32 => f.write_str("i32"),
            Format::I64 => f.write_str("i64"),
            Format::I8 => f.write_str("i8"),
            Format::U8 => f.write_str("u8"),
            Format::Fp8 => f.write_str("fp8"),
            Format::Fp8PerToken => f.write_str("fp8/token"),
            Format::Fp8PerTensor => f.write_str("fp8/tensor"),
            Format::Fp8Block { rows, cols } => write!(f, "fp8/block{rows}x{cols}"),
            Format::Int4 { group } => write!(f, "int4/g{group}"),
            Format::Nvfp4 { group } => write!(f, "nvfp4/g{group}"),
        }
    }
}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(text: &str) -> Result<Format, FormatError> {
        let size = |digits: &str, what: &'static str| match digits.parse::<u64>() {
            Ok(v) if v >= 1 && !digits.starts_with('+') => Ok(v),
            _ => Err(FormatError::BadSize {
                text: text.to_owned(),
                what,
            }),
        };
        Ok(match text {
            "bf16" => Format::Bf16,
            "f16" => Format::F16,
            "f32" => Format::F32,
            "i32" => Format::I32,
            "i64" => Format::I64,
            "i8" => Format::I8,
            "u8" => Format::U8,
            "fp8" => Format::Fp8,
            "fp8/token" => Format::Fp8PerToken,
            "fp8/tensor" => Format::Fp8PerTensor,
            _ => {
                if let Some(block) = text.strip_prefix("fp8/block") {
                    let (r, c) = block.split_once('x').ok_or_else(|| FormatError::BadSize {
                        text: text.to_owned(),
                        what: "the block (<rows>x<cols>)",
                    })?;
                    Format::Fp8Block {
                        rows: size(r, "the block height")?,
                        cols: size(c, "the block width")?,
                    }
                } else if let Some(g) = text.strip_prefix("int4/g") {
                    Format::Int4 {
                        group: size(g, "the group")?,
                    }
                } else if let Some(g) = text.strip_prefix("nvfp4/g") {
                    Format::Nvfp4 {
                        group: size(g, "the group")?,
                    }
                } else {
                    return Err(FormatError::Unknown {
                        text: text.to_owned(),
                    });
                }
            }
        })
    }
}

impl Serialize for Format {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Format, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_format() {
        let b = |f: &str, r, w| f.parse::<Format>().unwrap().bytes(r, w).unwrap();
        assert_eq!(b("bf16", 3, 4096), 24_576);
        assert_eq!(b("f16", 3, 4096), 24_576);
        assert_eq!(b("f32", 3, 4096), 49_152);
        assert_eq!(b("i32", 5, 1), 20);
        assert_eq!(b("i64", 5, 2), 80);
        assert_eq!(b("i8", 3, 4096), 12_288);
        assert_eq!(b("u8", 7, 90), 630);
        assert_eq!(b("fp8", 3, 4096), 12_288);
        assert_eq!(b("fp8/token", 3, 4096), 12_300);
        assert_eq!(b("fp8/tensor", 3, 4096), 12_292);
        // 300 rows in 3 blocks of 128, 4096 columns in 32 blocks.
        assert_eq!(b("fp8/block128x128", 300, 4096), 300 * 4096 + 3 * 32 * 4);
        assert_eq!(b("int4/g128", 2, 4096), 2 * (2048 + 32 * 2));
        assert_eq!(b("nvfp4/g16", 2, 4096), 2 * (2048 + 256));
        assert_eq!(b("int4/g3", 2, 9), 2 * (5 + 3 * 2));
        assert_eq!(b("bf16", 0, 4096), 0);
    }

    #[test]
    fn round_trip() {
        for text in [
            "bf16",
            "f16",
            "f32",
            "i32",
            "i64",
            "i8",
            "u8",
            "fp8",
            "fp8/token",
            "fp8/tensor",
            "fp8/block128x128",
            "fp8/block1x64",
            "int4/g128",
            "nvfp4/g16",
        ] {
            let f: Format = text.parse().unwrap();
            assert_eq!(f.to_string(), text);
        }
    }

    #[test]
    fn errors() {
        let e = |t: &str| t.parse::<Format>().unwrap_err().to_string();
        assert_eq!(
            e("bf32"),
            "unknown format `bf32` (known: bf16, f16, f32, i32, i64, i8, u8, fp8, fp8/token, fp8/tensor, fp8/block<R>x<C>, int4/g<N>, nvfp4/g<N>)"
        );
        assert_eq!(
            e("int4/g0"),
            "format `int4/g0`: the group must be a whole number of at least 1"
        );
        assert_eq!(
            e("int4/g+8"),
            "format `int4/g+8`: the group must be a whole number of at least 1"
        );
        assert_eq!(
            e("fp8/block128"),
            "format `fp8/block128`: the block (<rows>x<cols>) must be a whole number of at least 1"
        );
        assert_eq!(
            e("fp8/block0x128"),
            "format `fp8/block0x128`: the block height must be a whole number of at least 1"
        );
        let int4: Format = "int4/g128".parse().unwrap();
        assert_eq!(
            int4.bytes(1, 100).unwrap_err().to_string(),
            "width 100 is not a multiple of the group of int4/g128 (128 elements)"
        );
        assert_eq!(
            Format::Bf16.bytes(u64::MAX, 2).unwrap_err().to_string(),
            "18446744073709551615 x 2 elements in bf16 overflow 64-bit bytes"
        );
        assert!(Format::Fp8PerTensor.bytes(1, u64::MAX).is_err());
        assert!(Format::Fp8PerToken.bytes(2, u64::MAX - 3).is_err());
        assert!(Format::Int4 { group: 1 }.bytes(1, u64::MAX - 1).is_err());
    }
}
