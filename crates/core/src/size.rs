//! Byte sizes in configuration files: a bare integer is bytes; a string takes a unit, binary
//! (`4GiB`, `512 MiB`) or decimal (`4GB`), as the `bytesize` crate parses it.

use serde::{de, Deserializer};

/// `deserialize_with` for a `u64` byte count that may be written with a unit.
pub fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    struct V;
    impl de::Visitor<'_> for V {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a size: bytes, or a string with a unit such as \"4GiB\" or \"512MiB\"")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("a size cannot be negative ({v})")))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            parse(v).map_err(E::custom)
        }
    }
    d.deserialize_any(V)
}

/// Parses `4GiB`, `512 MiB`, `4GB` or `4096` into bytes.
pub fn parse(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("a size cannot be negative ('{text}')"));
    }
    t.parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|_| format!("'{text}' is not a size (examples: 4096, \"64MiB\", \"4GiB\")"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn units() {
        assert_eq!(super::parse("4GiB").unwrap(), 4 << 30);
        assert_eq!(super::parse("512 MiB").unwrap(), 512 << 20);
        assert_eq!(super::parse("4096").unwrap(), 4096);
        assert!(super::parse("4 parsecs").is_err());
        assert!(super::parse("-1GiB").is_err());
    }
}
