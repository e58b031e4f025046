//! The per-sub-core CSV tables: `<subcore>_instr_exe.csv` and
//! `<subcore>_code_exe.csv`.
//!
//! `instr_exe` has one row per distinct (mnemonic, pipe, call site `file:line`),
//! in order of first execution. Its `addr` is synthetic — there is no
//! binary — but stable for a given kernel: `0x` + hex of (row index × 4),
//! as if each distinct call site were one 4-byte instruction laid out in
//! first-execution order. `detail` is `file:line` and the average recorded
//! size with its unit.
//!
//! `code_exe` has one row per source line `file:line`, in order of first
//! execution, summing every instruction issued from it.
//!
//! `cycles` sums instruction durations (the trace's `args.cycles`), so a
//! table's cycle column adds up to the sub-core's summed trace durations;
//! `running_time(us)` is those cycles at the profile's clock, 3 decimals.
//! Fields are quoted (RFC 4180) when they hold a comma, quote or line break.

use std::{
    borrow::Cow,
    collections::HashMap,
    io::{self, Write},
};

use simpler_isa::{InstrRecord, Pipe};

use crate::timing::{size_unit, CoreTiming, TimingParams};

/// Header of `<subcore>_instr_exe.csv`; changing it changes the format.
pub const INSTR_EXE_HEADER: &str = "instr,addr,pipe,call_count,cycles,running_time(us),detail";
/// Header of `<subcore>_code_exe.csv`; changing it changes the format.
pub const CODE_EXE_HEADER: &str = "code,call_count,cycles,running_time(us)";

/// `field` as a CSV field: quoted, with quotes doubled, when it holds a
/// comma, a quote or a line break.
pub fn escape(field: &str) -> Cow<'_, str> {
    if field.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", field.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(field)
    }
}

struct InstrRow {
    mnemonic: &'static str,
    pipe: Pipe,
    file: &'static str,
    line: u32,
    count: u64,
    cycles: u64,
    size: u128,
}

struct CodeRow {
    file: &'static str,
    line: u32,
    count: u64,
    cycles: u64,
}

/// Write `<subcore>_instr_exe.csv`; returns the cycle total of its rows.
pub(crate) fn write_instr_exe<W: Write>(
    w: &mut W,
    params: &TimingParams,
    records: &[InstrRecord],
    timing: &CoreTiming,
) -> io::Result<u64> {
    let mut index: HashMap<(&'static str, Pipe, &'static str, u32), usize> = HashMap::new();
    let mut rows: Vec<InstrRow> = Vec::new();
    for (r, s) in records.iter().zip(&timing.spans) {
        let key = (r.mnemonic, r.pipe, r.loc.file(), r.loc.line());
        let i = *index.entry(key).or_insert_with(|| {
            rows.push(InstrRow {
                mnemonic: r.mnemonic,
                pipe: r.pipe,
                file: r.loc.file(),
                line: r.loc.line(),
                count: 0,
                cycles: 0,
                size: 0,
            });
            rows.len() - 1
        });
        let row = &mut rows[i];
        row.count += 1;
        row.cycles += s.cycles();
        row.size += u128::from(r.size);
    }
    writeln!(w, "{INSTR_EXE_HEADER}")?;
    let mut total = 0;
    for (i, row) in rows.iter().enumerate() {
        let detail = format!(
            "{}:{} avg size {} {}",
            row.file,
            row.line,
            average(row.size, row.count),
            size_unit(row.pipe)
        );
        writeln!(
            w,
            "{},0x{:x},{},{},{},{:.3},{}",
            escape(row.mnemonic),
            i * 4,
            row.pipe.name(),
            row.count,
            row.cycles,
            params.cycles_to_us(row.cycles),
            escape(&detail)
        )?;
        total += row.cycles;
    }
    Ok(total)
}

/// Write `<subcore>_code_exe.csv`; returns the cycle total of its rows.
pub(crate) fn write_code_exe<W: Write>(
    w: &mut W,
    params: &TimingParams,
    records: &[InstrRecord],
    timing: &CoreTiming,
) -> io::Result<u64> {
    let mut index: HashMap<(&'static str, u32), usize> = HashMap::new();
    let mut rows: Vec<CodeRow> = Vec::new();
    for (r, s) in records.iter().zip(&timing.spans) {
        let key = (r.loc.file(), r.loc.line());
        let i = *index.entry(key).or_insert_with(|| {
            rows.push(CodeRow {
                file: key.0,
                line: key.1,
                count: 0,
                cycles: 0,
            });
            rows.len() - 1
        });
        rows[i].count += 1;
        rows[i].cycles += s.cycles();
    }
    writeln!(w, "{CODE_EXE_HEADER}")?;
    let mut total = 0;
    for row in &rows {
        writeln!(
            w,
            "{},{},{},{:.3}",
            escape(&format!("{}:{}", row.file, row.line)),
            row.count,
            row.cycles,
            params.cycles_to_us(row.cycles)
        )?;
        total += row.cycles;
    }
    Ok(total)
}

/// `sum / count`, as an integer when exact, else with one decimal.
fn average(sum: u128, count: u64) -> String {
    let count = u128::from(count.max(1));
    if sum.is_multiple_of(count) {
        (sum / count).to_string()
    } else {
        format!("{:.1}", sum as f64 / count as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_quotes_only_when_needed() {
        assert_eq!(escape("TADD"), "TADD");
        assert_eq!(escape("a,b"), "\"a,b\"");
        assert_eq!(escape("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(escape("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn averages_are_exact_or_one_decimal() {
        assert_eq!(average(10, 2), "5");
        assert_eq!(average(10, 4), "2.5");
        assert_eq!(average(0, 0), "0");
    }
}
