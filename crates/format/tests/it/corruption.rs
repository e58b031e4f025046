//! Damaged files: truncated, bytes flipped, fields misspelled. Every one
//! is a clear error naming the file (and the field where there is one);
//! none panics.

use std::path::Path;

use proptest::prelude::*;
use simpler_format::args_dump::ArgsDump;
use simpler_format::json::from_slice;
use simpler_format::kernel_args::KernelArgsDump;
use simpler_format::tensor_dump::Manifest;
use simpler_format::ErrorKind;

use crate::strategies::{args_dump, kernel_args, manifest};

fn check_damaged<T: serde::de::DeserializeOwned>(
    text: &[u8],
    cut: usize,
    flip: Option<(usize, u8)>,
) {
    let mut t = text[..cut.min(text.len())].to_vec();
    if let Some((i, b)) = flip {
        if !t.is_empty() {
            let i = i % t.len();
            t[i] = b;
        }
    }
    if let Err(e) = from_slice::<T>(Path::new("f.json"), &t) {
        let m = e.to_string();
        assert!(m.starts_with("f.json"), "{m}");
        if cut < text.len() && flip.is_none() {
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::TruncatedJson { .. }
                        | ErrorKind::MalformedJson { .. }
                        | ErrorKind::Field { .. }
                ),
                "{m}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tensor_dump_damage(m in manifest(), cut in any::<usize>(), i in any::<usize>(), b in any::<u8>()) {
        let text = serde_json::to_vec(&m).unwrap();
        check_damaged::<Manifest>(&text, cut % (text.len() + 1), None);
        check_damaged::<Manifest>(&text, text.len(), Some((i, b)));
    }

    #[test]
    fn args_dump_damage(d in args_dump(), cut in any::<usize>(), i in any::<usize>(), b in any::<u8>()) {
        let text = serde_json::to_vec(&d).unwrap();
        check_damaged::<ArgsDump>(&text, cut % (text.len() + 1), None);
        check_damaged::<ArgsDump>(&text, text.len(), Some((i, b)));
    }

    #[test]
    fn kernel_args_damage(d in kernel_args(), cut in any::<usize>(), i in any::<usize>(), b in any::<u8>()) {
        let text = serde_json::to_vec(&d).unwrap();
        check_damaged::<KernelArgsDump>(&text, cut % (text.len() + 1), None);
        check_damaged::<KernelArgsDump>(&text, text.len(), Some((i, b)));
    }

    /// Our formats refuse a misspelled field, naming its path.
    #[test]
    fn misspelled_fields_are_errors(d in kernel_args().prop_filter("one dispatch", |d| !d.dispatches.is_empty())) {
        let text = serde_json::to_string(&d).unwrap().replacen("\"core_id\"", "\"core_idd\"", 1);
        let e = from_slice::<KernelArgsDump>(Path::new("k.json"), text.as_bytes()).unwrap_err().to_string();
        prop_assert!(e.contains("field dispatches[0]") && e.contains("unknown field `core_idd`"), "{}", e);
    }
}

#[test]
fn args_dump_misspelling_and_strict_hex() {
    let good = r#"{"schema_version":1,"workload":"w","case":"c","total_args":1,"args":[
      {"arg_index":0,"kind":"scalar","dtype":"FLOAT32","value":0.25,"bits":"0x000000003e800000"}]}"#;
    from_slice::<ArgsDump>(Path::new("a.json"), good.as_bytes()).unwrap();
    let e = from_slice::<ArgsDump>(
        Path::new("a.json"),
        good.replace("\"bits\"", "\"bitz\"").as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("field args[0].bitz") && e.contains("unknown field"),
        "{e}"
    );
    let e = from_slice::<ArgsDump>(
        Path::new("a.json"),
        good.replace("0x000000003e800000", "0x3e800000").as_bytes(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("field args[0].bits") && e.contains("exactly 16 hex digits"),
        "{e}"
    );
    let huge = good.replace("FLOAT32", &"X".repeat(10 << 20));
    let e = from_slice::<ArgsDump>(Path::new("a.json"), huge.as_bytes())
        .unwrap_err()
        .to_string();
    assert!(
        e.len() < 400,
        "a 10 MB bad value is echoed cut: {} chars",
        e.len()
    );
}
