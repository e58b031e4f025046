//! Writing a large file without building it in memory first: a JSON
//! array serialized from an iterator as it is written ([`Seq`]).
//!
//! A format struct whose lists are type parameters (`Deps<T, N, E>` in
//! [`crate::swimlane`]) is then written with `Seq`s in place of its
//! `Vec`s — the same field names, the same bytes — straight from the
//! caller's own records. Building the lists first touches every byte of
//! them twice (fresh memory costs more than the instructions that fill
//! it) and frees them after.
//!
//! For the largest files, JSON written by hand: [`JsonBuf`] (numbers),
//! [`str_val`] (strings, escaped exactly as serde_json escapes them).

use serde::{Serialize, Serializer};

/// A byte buffer that JSON is formatted into by hand. Its methods are
/// `#[inline]`: called across crates per field, they showed as functions
/// of their own in profiles.
#[derive(Default)]
pub struct JsonBuf {
    b: Vec<u8>,
    num: itoa::Buffer,
}

impl JsonBuf {
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

/// A sequence whose items `items()` produces each time it is serialized.
pub struct Seq<F>(pub F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

impl<F> std::fmt::Debug for Seq<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seq(..)")
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

    #[test]
    fn a_seq_writes_what_a_vec_writes() {
        let v = vec![(1u32, "a"), (2, "b")];
        let s = Seq(|| v.iter().map(|&(n, t)| (n, t)));
        let want = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::to_string(&s).unwrap(), want);
        assert_eq!(serde_json::to_string(&s).unwrap(), want, "again");
        let none = Seq(std::iter::empty::<u8>);
        assert_eq!(serde_json::to_string(&none).unwrap(), "[]");
    }
}
