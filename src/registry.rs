//! The workloads one CLI process knows: the bundled ones plus the caller's
//! (DESIGN §13). Every command that looks a workload up by name goes
//! through [`Workloads`], so a user crate's kernels get every command.

use anyhow::{bail, Result};
use simpler_workloads::{Workload, WorkloadError};

/// Bundled and user workloads, checked once at startup.
pub(crate) struct Workloads {
    list: Vec<Box<dyn Workload>>,
    /// How many of `list`, from the front, are the caller's.
    user: usize,
}

impl Workloads {
    /// The caller's workloads first, then the bundled ones. Refused: a
    /// name used twice (a user workload may not shadow a bundled one), a
    /// name that cannot be part of a folder name, a workload without
    /// cases or with two cases of one name.
    pub(crate) fn new(user: Vec<Box<dyn Workload>>) -> Result<Workloads> {
        let n = user.len();
        let mut list = user;
        list.extend(simpler_workloads::all());
        for (i, w) in list.iter().enumerate() {
            check_one(w.as_ref(), i < n)?;
            if let Some(first) = list[..i].iter().position(|o| o.name() == w.name()) {
                let whose = |k: usize| if k < n { "yours" } else { "bundled" };
                bail!(
                    "workload '{}' is registered twice ({} and {}): give yours another name",
                    w.name(),
                    whose(first),
                    whose(i)
                );
            }
        }
        Ok(Workloads { list, user: n })
    }

    /// Every workload, the caller's first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &dyn Workload> {
        self.list.iter().map(|w| w.as_ref())
    }

    /// True for a workload the caller registered.
    pub(crate) fn is_user(&self, name: &str) -> bool {
        self.list[..self.user].iter().any(|w| w.name() == name)
    }

    /// The workload named `name`, or an error listing the valid ones.
    pub(crate) fn find(&self, name: &str) -> Result<&dyn Workload, WorkloadError> {
        self.all()
            .find(|w| w.name() == name)
            .ok_or_else(|| WorkloadError::UnknownWorkload {
                name: name.into(),
                known: self.all().map(|w| w.name()).collect::<Vec<_>>().join(", "),
            })
    }
}

/// A workload's name becomes part of folder names; its cases are looked
/// up by name and the first is the default.
fn check_one(w: &dyn Workload, user: bool) -> Result<()> {
    let name = w.name();
    let whose = if user { "your" } else { "a bundled" };
    let bad = |c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || name.contains(bad) {
        bail!("{whose} workload '{name}': a name is letters, digits, '_' and '-' (it names run folders)");
    }
    let cases = w.cases();
    if cases.is_empty() {
        bail!("{whose} workload '{name}' has no case: Workload::cases must list at least one");
    }
    for (i, c) in cases.iter().enumerate() {
        if c.name.is_empty() || c.name.contains(bad) {
            bail!(
                "workload '{name}', case '{}': a name is letters, digits, '_' and '-'",
                c.name
            );
        }
        if cases[..i].iter().any(|o| o.name == c.name) {
            bail!("workload '{name}' lists case '{}' twice", c.name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use simpler_runtime::{KernelDef, Runtime};
    use simpler_workloads::{CaseSpec, Outcome};

    struct Named(&'static str, Vec<&'static str>);

    impl Workload for Named {
        fn name(&self) -> &'static str {
            self.0
        }
        fn about(&self) -> &'static str {
            "test"
        }
        fn cases(&self) -> Vec<CaseSpec> {
            self.1
                .iter()
                .map(|n| CaseSpec {
                    name: n,
                    about: String::new(),
                })
                .collect()
        }
        fn kernels(&self) -> Vec<KernelDef> {
            Vec::new()
        }
        fn run(&self, _: &str, _: u64, _: &Runtime) -> Result<Outcome, WorkloadError> {
            unreachable!("not run")
        }
    }

    fn err(ws: Vec<Box<dyn Workload>>) -> String {
        match Workloads::new(ws) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_user_workload_may_not_shadow_a_bundled_one() {
        let e = err(vec![Box::new(Named("flood", vec!["A"]))]);
        assert_eq!(
            e,
            "workload 'flood' is registered twice (yours and bundled): give yours another name"
        );
        let e = err(vec![
            Box::new(Named("mine", vec!["A"])),
            Box::new(Named("mine", vec!["B"])),
        ]);
        assert!(e.contains("(yours and yours)"), "{e}");
    }

    #[test]
    fn names_and_cases_are_checked() {
        assert!(err(vec![Box::new(Named("a/b", vec!["A"]))]).contains("names run folders"));
        assert!(err(vec![Box::new(Named("", vec!["A"]))]).contains("names run folders"));
        assert!(err(vec![Box::new(Named("x", vec![]))]).contains("has no case"));
        assert!(err(vec![Box::new(Named("x", vec!["A", "A"]))]).contains("case 'A' twice"));
        assert!(err(vec![Box::new(Named("x", vec!["A B"]))]).contains("case 'A B'"));
        let ws = Workloads::new(vec![Box::new(Named("mine", vec!["A"]))]).unwrap();
        assert!(ws.is_user("mine") && !ws.is_user("flood"));
        assert_eq!(ws.all().next().unwrap().name(), "mine");
        assert!(ws.find("flood").is_ok());
        let e = ws.find("nope").err().unwrap().to_string();
        assert!(
            e.starts_with("unknown workload 'nope' (available: mine, "),
            "{e}"
        );
    }
}
