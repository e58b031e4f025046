//! `kernel::run`: a kernel's panic comes back as a value, and the thread is
//! marked as running a kernel exactly while it runs (the CLI's panic hook
//! relies on it to stay quiet about kernel panics it reports itself).

use simpler_isa::kernel::{self, in_kernel, panic_message};
use simpler_isa::{Args, Core, KResult};

use crate::common::{aiv, gm};

fn checks_the_mark(_core: &mut Core, _args: &Args) -> KResult<()> {
    assert!(in_kernel(), "marked while the kernel runs");
    Ok(())
}

fn panics(_core: &mut Core, _args: &Args) -> KResult<()> {
    assert!(in_kernel());
    panic!("index {} out of range", 7)
}

#[test]
fn the_thread_is_marked_only_while_a_kernel_runs() {
    let gm = gm();
    let mut core = aiv(&gm);
    let args = Args::new(&gm, 0);
    assert!(!in_kernel());
    let r = kernel::run(checks_the_mark, &mut core, &args);
    assert!(
        matches!(r, Ok(Ok(()))),
        "a passing kernel returns its result"
    );
    assert!(!in_kernel(), "unmarked after a normal return");
}

#[test]
fn a_panicking_kernel_comes_back_as_its_message_and_unmarks_the_thread() {
    let gm = gm();
    let mut core = aiv(&gm);
    let args = Args::new(&gm, 0);
    let p = kernel::run(panics, &mut core, &args).expect_err("the panic is caught");
    assert_eq!(panic_message(p.as_ref()), "index 7 out of range");
    assert!(!in_kernel(), "unmarked after a panic");
    let p = std::panic::catch_unwind(|| panic!("literal")).unwrap_err();
    assert_eq!(panic_message(p.as_ref()), "literal");
}
