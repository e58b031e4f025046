//! The `--json` document of a diff: header fields first, then every pair
//! and unpaired record one per line (from the kept lists, or streamed
//! back from the spill files), so memory stays flat.

use std::io::{BufRead, Seek, Write};

use super::report::{DiffReport, Difference};
use super::{ElementDiff, PairResult, Unpaired, DIFF_SCHEMA_VERSION};

impl DiffReport {
    /// The `--json` document as a value (kept lists only; see
    /// [`DiffReport::write_json`] for every pair of a spilled report).
    pub fn to_json(&self) -> serde_json::Value {
        let mut doc = self.json_head();
        doc.insert(
            "pairs".into(),
            self.pairs.iter().map(pair_json).collect::<Vec<_>>().into(),
        );
        doc.insert(
            "only_in_a".into(),
            self.only_in_a
                .iter()
                .map(unpaired_json)
                .collect::<Vec<_>>()
                .into(),
        );
        doc.insert(
            "only_in_b".into(),
            self.only_in_b
                .iter()
                .map(unpaired_json)
                .collect::<Vec<_>>()
                .into(),
        );
        serde_json::Value::Object(doc)
    }

    /// Stream the `--json` document to `w`: the header fields first, then
    /// one pair or unpaired record per line.
    ///
    /// # Errors
    /// Writing to `w` or reading the spill files failed.
    pub fn write_json(&mut self, w: &mut dyn Write) -> std::io::Result<()> {
        let head = self.json_head();
        writeln!(w, "{{")?;
        for key in [
            "schema_version",
            "a",
            "b",
            "match",
            "rtol",
            "atol",
            "passed",
            "summary",
            "first_difference",
            "notes",
        ] {
            let v = serde_json::to_string(&head[key]).map_err(std::io::Error::other)?;
            writeln!(w, "  \"{key}\": {v},")?;
        }
        let names = ["pairs", "only_in_a", "only_in_b"];
        for (i, key) in names.iter().enumerate() {
            write!(w, "  \"{key}\": [")?;
            let mut first = true;
            let mut item = |w: &mut dyn Write, line: &str| -> std::io::Result<()> {
                write!(w, "{}\n    {line}", if first { "" } else { "," })?;
                first = false;
                Ok(())
            };
            match &mut self.spill {
                Some(s) => {
                    s.lists[i].flush()?;
                    let mut f = s.lists[i].get_ref().try_clone()?;
                    f.rewind()?;
                    for line in std::io::BufReader::new(f).lines() {
                        item(w, &line?)?;
                    }
                }
                None => {
                    let lines: Vec<serde_json::Value> = match i {
                        0 => self.pairs.iter().map(pair_json).collect(),
                        1 => self.only_in_a.iter().map(unpaired_json).collect(),
                        _ => self.only_in_b.iter().map(unpaired_json).collect(),
                    };
                    for v in lines {
                        item(
                            w,
                            &serde_json::to_string(&v).map_err(std::io::Error::other)?,
                        )?;
                    }
                }
            }
            let close = if first { "]" } else { "\n  ]" };
            writeln!(w, "{close}{}", if i + 1 < names.len() { "," } else { "" })?;
        }
        writeln!(w, "}}")
    }

    /// Everything of the JSON document but the three lists.
    fn json_head(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let o = &self.options;
        let first = self.first_difference().map(|d| match &d {
            Difference::Pair(p) => json!({
                "kind": "pair", "task_id_a": p.task_a.to_string(), "task_id_b": p.task_b.to_string(),
                "stage": p.stage.name(), "arg_index": p.arg_index, "role": p.role.name(),
                "reason": p.reason,
            }),
            Difference::OnlyInA(u) | Difference::OnlyInB(u) => json!({
                "kind": if matches!(d, Difference::OnlyInA(_)) { "only_in_a" } else { "only_in_b" },
                "task_id": u.task_id.to_string(), "stage": u.stage.name(),
                "arg_index": u.arg_index, "role": u.role.name(),
            }),
        });
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: serde_json::Value| {
            m.insert(k.to_string(), v);
        };
        put("schema_version", DIFF_SCHEMA_VERSION.into());
        put("a", self.a.display().to_string().into());
        put("b", self.b.display().to_string().into());
        put("match", o.match_mode.name().into());
        put("rtol", o.rtol.into());
        put("atol", o.atol.into());
        put("passed", self.passed().into());
        put("summary", json!(self.summary()));
        put("first_difference", first.unwrap_or(serde_json::Value::Null));
        put("notes", self.notes.clone().into());
        m
    }
}

/// f64 for JSON: a number when finite, else `"nan"`, `"inf"`, `"-inf"`.
fn num(x: f64) -> serde_json::Value {
    if x.is_nan() {
        "nan".into()
    } else if x == f64::INFINITY {
        "inf".into()
    } else if x == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        x.into()
    }
}

fn elem_json(e: &ElementDiff) -> serde_json::Value {
    serde_json::json!({"index": e.index, "a": num(e.a), "b": num(e.b), "a_text": e.a_text, "b_text": e.b_text})
}

pub(crate) fn pair_json(p: &PairResult) -> serde_json::Value {
    let compared = p.bit_equal.is_some();
    serde_json::json!({
        "task_id_a": p.task_a.to_string(),
        "task_id_b": p.task_b.to_string(),
        "stage": p.stage.name(),
        "arg_index": p.arg_index,
        "role": p.role.name(),
        "record_a": p.record_a,
        "record_b": p.record_b,
        "func_id_a": p.func_ids_a,
        "func_id_b": p.func_ids_b,
        "kind_a": p.kind_a.name(),
        "kind_b": p.kind_b.name(),
        "dtype_a": p.dtype_a.name(),
        "dtype_b": p.dtype_b.name(),
        "shape_a": p.shape_a,
        "shape_b": p.shape_b,
        "passed": p.passed,
        "reason": p.reason,
        "bit_equal": p.bit_equal,
        "elements": p.elements,
        "mismatched": p.mismatched,
        "max_abs_err": if compared { num(p.max_abs_err) } else { serde_json::Value::Null },
        "max_rel_err": if compared { num(p.max_rel_err) } else { serde_json::Value::Null },
        "cosine": p.cosine.map(num),
        "first_diff": p.first_diff.as_ref().map(elem_json),
        "first_violation": p.first_violation.as_ref().map(elem_json),
    })
}

pub(crate) fn unpaired_json(u: &Unpaired) -> serde_json::Value {
    serde_json::json!({
        "task_id": u.task_id.to_string(),
        "stage": u.stage.name(),
        "arg_index": u.arg_index,
        "role": u.role.name(),
        "kind": u.kind.name(),
        "dtype": u.dtype.name(),
        "shape": u.shape,
        "func_id": u.func_ids,
        "record": u.record,
    })
}
