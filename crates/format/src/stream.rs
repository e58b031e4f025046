//! Writing a large file without building it in memory first: a JSON
//! array serialized from an iterator as it is written ([`Seq`]).
//!
//! A format struct whose lists are type parameters (`Deps<T, N, E>` in
//! [`crate::swimlane`]) is then written with `Seq`s in place of its
//! `Vec`s — the same field names, the same bytes — straight from the
//! caller's own records. Building the lists first touches every byte of
//! them twice (fresh memory costs more than the instructions that fill
//! it) and frees them after.

use serde::{Serialize, Serializer};

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
