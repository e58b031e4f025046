//! JSON written by hand, for the largest files (CaseLarge's `deps.json`
//! is 60 MB, its Perfetto trace 42 MB): [`JsonBuf`] (numbers into a
//! reused buffer) and [`str_val`] (strings, escaped exactly as
//! serde_json escapes them). The writers that use them are tested byte
//! for byte against serde_json.

use std::io::{self, Write};

/// A byte buffer that JSON is formatted into by hand. Its methods are
/// `#[inline]`: called across crates per field, they showed as functions
/// of their own in profiles.
pub struct JsonBuf {
    b: Vec<u8>,
}

impl Default for JsonBuf {
    /// Room for a piece and the item that ends it, reserved once (memory
    /// not written is not touched).
    fn default() -> Self {
        JsonBuf {
            b: Vec::with_capacity(crate::durable::BUFFER_BYTES + (64 << 10)),
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
        u64_val(&mut self.b, v);
    }

    /// Append a signed integer.
    #[inline]
    pub fn i64(&mut self, v: i64) {
        if v < 0 {
            self.b.push(b'-');
        }
        u64_val(&mut self.b, v.unsigned_abs());
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

/// Append `v` in decimal ([`put_u64`], the one decimal writer; a single
/// digit — most of a `deps.json`'s slots and flags — is one push).
#[inline]
pub fn u64_val(b: &mut Vec<u8>, v: u64) {
    if v < 10 {
        b.push(b'0' + v as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let n = put_u64(&mut digits, v);
    b.extend_from_slice(&digits[..n]);
}

/// JSON formatted into a slice sized beforehand for the worst case of
/// what goes in, for the per-record writers of the largest files: each
/// piece is one bounds check and a copy (no capacity check, no growth),
/// and numbers are written in place (no copy out of a digit buffer).
///
/// Every method panics when its piece does not fit: the caller sized the
/// slice wrong. A number needs room for its longest form (20 bytes for a
/// `u64`, 18 for a hex id) whatever its value.
pub struct Cursor<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// Write from the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Cursor { buf, at: 0 }
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.at
    }

    /// Nothing written yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.at == 0
    }

    /// Append bytes as they are.
    #[inline]
    pub fn raw(&mut self, s: &[u8]) {
        self.buf[self.at..self.at + s.len()].copy_from_slice(s);
        self.at += s.len();
    }

    /// Append the first `len` bytes of `padded` by copying all `N` of
    /// them (needs `N` bytes of room; what lies beyond `len` is written
    /// over by the next piece, or left beyond [`Cursor::len`]). A copy of
    /// a size known at compile time is a few moves the compiler writes
    /// inline; one known only at run time is a call to `memcpy` (~20
    /// instructions for the short pieces of a record).
    #[inline]
    pub fn raw_padded<const N: usize>(&mut self, padded: &[u8; N], len: usize) {
        self.buf[self.at..self.at + N].copy_from_slice(padded);
        self.at += len.min(N);
    }

    /// Append an unsigned integer (needs 20 bytes of room).
    #[inline]
    pub fn u64(&mut self, v: u64) {
        let room: &mut [u8; 20] = (&mut self.buf[self.at..self.at + 20])
            .try_into()
            .expect("20 bytes");
        self.at += put_u64(room, v);
    }

    /// Append a signed integer (needs 21 bytes of room).
    #[inline]
    pub fn i64(&mut self, v: i64) {
        if v < 0 {
            self.raw(b"-");
        }
        self.u64(v.unsigned_abs());
    }

    /// Append `0x%016x` (needs 18 bytes of room).
    #[inline]
    pub fn hex64(&mut self, v: u64) {
        self.raw(b"0x");
        self.raw(&crate::hex::digits16(v));
    }
}

/// Two decimal digits for each of 0..100.
const PAIRS: &[u8; 200] = b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// 10^i for i in 0..20.
const POW10: [u64; 20] = {
    let mut p = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        p[i] = p[i - 1] * 10;
        i += 1;
    }
    p
};

/// Decimal digits of `v`: from its bit length (`bits · log10 2 ≈ bits ·
/// 1233 / 4096` gives the count or one less) and one comparison, in a few
/// instructions where `ilog10` took ~35 per number (callgrind). `v | 1`
/// makes 0 count one digit without changing any other count (powers of
/// ten above 1 are even).
#[inline]
pub fn decimal_len(v: u64) -> usize {
    let v = v | 1;
    let t = (((64 - v.leading_zeros()) * 1233) >> 12) as usize;
    t + usize::from(v >= POW10[t])
}

/// Write `v` in decimal at the start of `dst`; the number of digits.
/// One digit (arg indices, zero offsets) is written at once; longer
/// numbers go straight to their places, two digits at a time from the
/// last, once their count is known. (Four at a time measured more
/// instructions per record, callgrind: the function stopped being inlined.)
#[inline]
pub fn put_u64(dst: &mut [u8; 20], v: u64) -> usize {
    if v < 10 {
        dst[0] = b'0' + v as u8;
        return 1;
    }
    let n = decimal_len(v);
    let (mut v, mut end) = (v, n);
    while v >= 100 {
        let pair = (v % 100) as usize * 2;
        v /= 100;
        dst[end - 2..end].copy_from_slice(&PAIRS[pair..pair + 2]);
        end -= 2;
    }
    if v >= 10 {
        let pair = v as usize * 2;
        dst[..2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        dst[0] = b'0' + v as u8;
    }
    n
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

/// Write `items` comma-separated, each formatted by `one` into `b`, and
/// `b` emptied into `w` whenever it is full (so a 60 MB list is never
/// held whole).
///
/// # Errors
/// Write failures.
pub fn list<T>(
    w: &mut impl Write,
    b: &mut JsonBuf,
    items: impl IntoIterator<Item = T>,
    mut one: impl FnMut(&mut JsonBuf, T),
) -> io::Result<()> {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            b.raw(b",");
        }
        one(b, item);
        if b.full() {
            w.write_all(b.bytes())?;
            b.clear();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_written_as_to_string_writes_them() {
        let mut b = JsonBuf::default();
        let edges = [0, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 12_345, u64::MAX];
        let signed = [0, 7, 10_000, -1, -9_999, i64::MIN, i64::MAX];
        for v in edges
            .into_iter()
            .chain((0..20_000).map(|i| i * 7919 % 100_000))
        {
            b.clear();
            b.u64(v);
            assert_eq!(b.bytes(), v.to_string().as_bytes(), "{v}");
        }
        for v in signed {
            b.clear();
            b.i64(v);
            assert_eq!(b.bytes(), v.to_string().as_bytes(), "{v}");
        }
    }

    #[test]
    fn the_cursor_writes_numbers_as_to_string_writes_them() {
        let mut buf = [0u8; 64];
        let mut v = 0x9e37_79b9_7f4a_7c15u64;
        let mut values = vec![0, 9, 10, 99, 100, 101, 999, 1000, u64::MAX];
        values.extend((0..20).map(|p| 10u64.pow(p)));
        values.extend((1..20).map(|p| 10u64.pow(p) - 1));
        values.extend((1..20).map(|p| 10u64.pow(p) + 1));
        values.extend((0..64).flat_map(|k| [1u64 << k, (1u64 << k) - 1]));
        for _ in 0..20_000 {
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            values.push(v >> (v % 64));
        }
        for &v in &values {
            assert_eq!(decimal_len(v), v.to_string().len(), "{v}");
            let signed = v as i64;
            let mut c = Cursor::new(&mut buf);
            c.raw(b"[");
            c.u64(v);
            c.raw(b",");
            c.i64(signed);
            c.raw(b",");
            c.hex64(v);
            let n = c.len();
            let want = format!("[{v},{signed},{:#018x}", v);
            assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), want);
        }
        let mut c = Cursor::new(&mut buf);
        c.raw_padded(b"abcdXXXX", 4);
        c.raw_padded(b"ef\0\0", 2);
        assert_eq!((c.len(), &buf[..6]), (6, &b"abcdef"[..]));
        let mut c = Cursor::new(&mut buf);
        c.i64(i64::MIN);
        let n = c.len();
        assert_eq!(&buf[..n], i64::MIN.to_string().as_bytes());
    }

    #[test]
    #[should_panic]
    fn a_cursor_without_room_for_a_number_panics() {
        let mut buf = [0u8; 19];
        Cursor::new(&mut buf).u64(1);
    }

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
