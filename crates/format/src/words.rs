//! Counts in the messages people read: "1 task", "2 tasks".

/// `n` followed by `one` when `n` is 1, else by `many`.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    match n.into() {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1u32, "task", "tasks"), "1 task");
        assert_eq!(super::count(0u32, "task", "tasks"), "0 tasks");
        assert_eq!(
            super::count(12u64, "dispatch", "dispatches"),
            "12 dispatches"
        );
    }
}
