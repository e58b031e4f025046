//! Every format: what is written reads back equal.

use proptest::prelude::*;
use simpler_format::args_dump::ArgsDump;
use simpler_format::kernel_args::KernelArgsDump;
use simpler_format::scalar::{decode, decode_upstream};
use simpler_format::tensor_dump::{Manifest, Record};
use simpler_format::upstream::ArgsDumpFile;

use crate::strategies::{args_dump as args_dumps, kernel_args, manifest, upstream_file};

/// Records equal but for `value`, which is compared by the bits it means.
fn same_record(a: &Record, b: &Record) -> Result<(), TestCaseError> {
    let strip = |r: &Record| Record {
        value: None,
        ..r.clone()
    };
    prop_assert_eq!(strip(a), strip(b));
    let bits = |r: &Record| {
        r.value
            .as_ref()
            .map(|v| decode(v.native().unwrap(), r.dtype).unwrap())
    };
    let nan = |r: &Record, x: Option<u64>| {
        x.is_some_and(|x| r.dtype.is_float() && simpler_core::decode::bits_f64(x, r.dtype).is_nan())
    };
    let (x, y) = (bits(a), bits(b));
    prop_assert!(x == y || (nan(a, x) && nan(b, y)), "{:?} vs {:?}", x, y);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn tensor_dump_manifest(m in manifest()) {
        let text = serde_json::to_vec_pretty(&m).unwrap();
        let back: Manifest = serde_json::from_slice(&text).unwrap();
        prop_assert_eq!(&back.header, &m.header);
        prop_assert_eq!(back.tensors.len(), m.tensors.len());
        for (a, b) in m.tensors.iter().zip(&back.tensors) {
            same_record(a, b)?;
        }
    }

    /// The upstream layout as its writer writes it reads as the union
    /// types (aliases, `[-1]`, `null` bin_file, upstream values).
    #[test]
    fn upstream_layout_reads_as_the_union_types(f in upstream_file()) {
        let text = serde_json::to_vec(&f).unwrap();
        let back: Manifest = serde_json::from_slice(&text).unwrap();
        let h = &back.header;
        prop_assert_eq!(h.schema_version, None);
        prop_assert_eq!(h.dump_level, Some(f.dump_args_level));
        prop_assert_eq!(
            (h.total_tensors, h.input_tensors, h.output_tensors, h.inout_tensors, h.truncated_tensors),
            (f.total_args, f.input_args, f.output_args, f.inout_args, f.truncated_args)
        );
        prop_assert_eq!(h.bin_file.clone(), Some(f.bin_file.clone()));
        for (a, b) in f.args.iter().zip(&back.tensors) {
            prop_assert_eq!(a.task_id.0, b.task_id.value);
            prop_assert_eq!(Some(a.func_id.clone()), b.func_id.clone());
            prop_assert_eq!((a.arg_index, a.role, a.stage, a.kind, a.dtype), (b.arg_index, b.role, b.stage, b.kind, b.dtype));
            prop_assert_eq!((&a.shape, &a.strides, a.numel, a.bin_offset, a.bin_size), (&b.shape, &b.strides, b.numel, b.bin_offset, b.bin_size));
            prop_assert_eq!(a.arg_index_ambiguous, b.arg_index_ambiguous);
            let decoded = |v: &Option<_>| v.as_ref().map(|v| decode_upstream(v, a.dtype).map(|x| x.0));
            let (x, y) = (decoded(&a.value), decoded(&b.value));
            let nan = |x: &Option<Result<u64, String>>| matches!(x, Some(Ok(v)) if a.dtype.is_float() && simpler_core::decode::bits_f64(*v, a.dtype).is_nan());
            prop_assert!(x == y || (nan(&x) && nan(&y)));
        }
        // And our typed upstream file reads back as itself.
        let again: ArgsDumpFile = serde_json::from_slice(&text).unwrap();
        prop_assert_eq!(again.args.len(), f.args.len());
    }

    #[test]
    fn args_dump(d in args_dumps()) {
        let text = serde_json::to_vec_pretty(&d).unwrap();
        let back: ArgsDump = serde_json::from_slice(&text).unwrap();
        for (a, b) in d.args.iter().zip(&back.args) {
            let strip = |x: &simpler_format::args_dump::OrchArg| simpler_format::args_dump::OrchArg { value: None, ..x.clone() };
            prop_assert_eq!(strip(a), strip(b));
            let bits = |x: &simpler_format::args_dump::OrchArg| x.value.map(|v| decode(v, x.dtype).ok());
            if !a.dtype.is_float() {
                prop_assert_eq!(bits(a), bits(b));
            }
        }
        prop_assert_eq!(back.args.len(), d.args.len());
    }

    #[test]
    fn kernel_args_dump(d in kernel_args()) {
        let text = serde_json::to_vec_pretty(&d).unwrap();
        let back: KernelArgsDump = serde_json::from_slice(&text).unwrap();
        prop_assert_eq!(back, d);
    }
}
