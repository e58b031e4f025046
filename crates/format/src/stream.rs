//! JSON written by hand, for the largest files (CaseLarge's `deps.json`
//! is 60 MB, its Perfetto trace 42 MB): [`JsonBuf`] (numbers into a
//! reused buffer) and [`str_val`] (strings, escaped exactly as
//! serde_json escapes them). The writers that use them are tested byte
//! for byte against serde_json.

/// A byte buffer that JSON is formatted into by hand. Its methods are
/// `#[inline]`: called across crates per field, they showed as functions
/// of their own in profiles.
pub struct JsonBuf {
    b: Vec<u8>,
    num: itoa::Buffer,
}

impl Default for JsonBuf {
    /// Room for a piece and the item that ends it, reserved once (memory
    /// not written is not touched).
    fn default() -> Self {
        JsonBuf {
            b: Vec::with_capacity(crate::durable::BUFFER_BYTES + (64 << 10)),
            num: itoa::Buffer::new(),
        }
    }
}

impl JsonBuf {
    /// Whether a piece is ready to be written out: at least
    /// [`crate::durable::BUFFER_BYTES`], so it passes straight through the
    /// durable writer's buffer.
    #[inline]
    pub fn full(&self) -> bool {
        self.b.len() >= crate::durable::BUFFER_BYTES
    }

    /// Append bytes as they are.
    #[inline]
    pub fn raw(&mut self, s: &[u8]) {
        self.b.extend_from_slice(s);
    }

    /// Append an unsigned integer.
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.b.extend_from_slice(self.num.format(v).as_bytes());
    }

    /// Append a signed integer.
    #[inline]
    pub fn i64(&mut self, v: i64) {
        self.b.extend_from_slice(self.num.format(v).as_bytes());
    }

    /// What was formatted.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.b
    }

    /// The buffer itself, to append to.
    #[inline]
    pub fn vec(&mut self) -> &mut Vec<u8> {
        &mut self.b
    }

    /// Forget what was formatted (once written).
    #[inline]
    pub fn clear(&mut self) {
        self.b.clear();
    }
}

/// Nothing in `s` needs escaping in JSON (control characters, `"`, `\`).
#[inline]
pub fn plain(s: &str) -> bool {
    s.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\')
}

/// A JSON string as serde_json writes it: raw when [`plain`], else
/// through serde_json.
#[inline]
pub fn str_val(b: &mut Vec<u8>, s: &str) {
    if plain(s) {
        b.push(b'"');
        b.extend_from_slice(s.as_bytes());
        b.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *b, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_serde_json_does() {
        for s in [
            "plain",
            "q\"uote",
            "back\\slash",
            "tab\there",
            "ünï",
            "\u{1}",
            "\u{7f}",
        ] {
            let mut b = Vec::new();
            str_val(&mut b, s);
            assert_eq!(b, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }
}
