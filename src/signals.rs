//! SIGINT, SIGTERM and SIGHUP (a closed terminal or a dropped ssh
//! session must not lose a run's dump either).
//!
//! During `simpler run` the first signal stops the run gracefully through
//! the runtime's [`CancelToken`]: no new kernel starts, running ones are
//! not waited for, and the dump is exported as `incomplete` with the reason
//! `interrupted by SIGINT` (SIGTERM, SIGHUP) and the hang snapshot; the
//! process then exits 128 + the signal: 130 (143, 129). A second signal —
//! or the first one during any other command — removes every unfinished
//! file and folder the process registered ([`simpler_format::durable`])
//! and exits at once with that code.
//!
//! A signal ignored when the process started stays ignored (`nohup`
//! ignores SIGHUP so that a run outlives its terminal).
//!
//! Signals are taken on a thread of their own (`signal-hook`'s iterator),
//! so the handling is ordinary code, not async-signal-safe code.
//!
//! SIGQUIT (Ctrl-\\) asks for no graceful stop: like a second signal it
//! removes every unfinished file and folder at once, then ends the process
//! the way SIGQUIT's default does (killed by the signal, a core dump where
//! those are enabled) — without it a quit left `tensor_dump.bin.tmp`
//! behind. So do the other signals whose default ends a process and that
//! a handler may take ([`ABORTING`]: `kill -USR1`, an `alarm`, a CPU-time
//! limit): DESIGN §5 lets only SIGKILL leave a temporary file.
//!
//! SIGXFSZ is ignored: a write past the file-size limit (`ulimit -f`)
//! then fails with EFBIG, which the dump handles like a full disk (an
//! incomplete manifest describing what fits, `write failed: File too
//! large`), instead of the signal killing the process with its `.tmp`
//! files left behind.
//!
//! SIGHUP usually means the terminal is gone: writing to it then fails
//! (EIO), and a `println!` of the run's summary would panic after the dump
//! was exported (exit 101, not 129). So on SIGHUP the standard streams that
//! were a terminal at start are pointed at `/dev/null`; redirected ones
//! (a file, a pipe: `nohup`) keep their output.

use std::{
    io::{IsTerminal, Write},
    os::fd::AsRawFd,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, AtomicI32, Ordering},
        OnceLock,
    },
};

use anyhow::{Context, Result};
use signal_hook::{
    consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM},
    iterator::Signals,
};
use simpler_runtime::CancelToken;

struct State {
    token: CancelToken,
    /// Standard output and error were terminals at start.
    ttys: [bool; 2],
    graceful: AtomicBool,
    /// The first signal taken gracefully (0: none).
    first: AtomicI32,
}

static STATE: OnceLock<State> = OnceLock::new();

fn state() -> &'static State {
    STATE.get_or_init(|| State {
        token: CancelToken::new(),
        ttys: [
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        ],
        graceful: AtomicBool::new(false),
        first: AtomicI32::new(0),
    })
}

/// Signals that end the process by default and ask for no graceful stop:
/// unfinished files are removed, then the process dies of the signal.
/// (SIGSEGV, SIGBUS, SIGILL and SIGFPE cannot be taken on a thread; SIGABRT
/// kills before one could run; SIGPIPE is ignored by Rust programs.)
const ABORTING: [i32; 7] = [
    SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGXCPU,
];

fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGHUP => "SIGHUP",
        SIGQUIT => "SIGQUIT",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGALRM => "SIGALRM",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGXCPU => "SIGXCPU",
        _ => "SIGTERM",
    }
}

/// Take SIGINT, SIGTERM, SIGHUP and the [`ABORTING`] signals from now on —
/// those not ignored when the process started — and ignore SIGXFSZ (call
/// first thing in `main`).
///
/// # Errors
/// When the handlers cannot be installed.
pub fn install() -> Result<()> {
    // SAFETY: setting a signal's disposition to SIG_IGN installs no
    // handler code; it only changes what the kernel does with SIGXFSZ.
    if unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(std::io::Error::last_os_error()).context("cannot ignore SIGXFSZ");
    }
    let taken = [SIGINT, SIGTERM, SIGHUP].iter().chain(&ABORTING);
    let mut signals = Signals::new(taken.filter(|&&sig| !ignored_at_start(sig)))
        .context("cannot install the signal handlers")?;
    let s = state();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if ABORTING.contains(&sig) {
                    abort(
                        sig,
                        match sig {
                            SIGQUIT => "quit (SIGQUIT)".to_string(),
                            other => name(other).to_string(),
                        },
                    );
                }
                if sig == SIGHUP {
                    leave_the_terminal(s.ttys);
                }
                let graceful = s.graceful.load(Ordering::Acquire)
                    && s.first
                        .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok();
                if graceful {
                    say(&format!(
                        "interrupted by {}: stopping the run and writing what was collected (signal again to abort at once)",
                        name(sig)
                    ));
                    s.token.cancel(format!("interrupted by {}", name(sig)));
                } else {
                    abort(sig, format!("interrupted by {}", name(sig)));
                }
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

/// Say `what` happened, remove every unfinished file and folder, and end
/// the process: an [`ABORTING`] signal kills it the way its default does
/// (its default action restored and raised; the exit is the fallback),
/// any other exits with 128 + the signal.
fn abort(sig: i32, what: String) -> ! {
    say(&format!("{what}: aborting, unfinished files removed"));
    let _frozen = simpler_format::durable::remove_unfinished();
    if ABORTING.contains(&sig) {
        let _ = signal_hook::low_level::emulate_default_handler(sig);
    }
    std::process::exit(128 + sig);
}

/// `sig` was ignored when the process started: `nohup` ignores SIGHUP so
/// that a run outlives its terminal, a non-interactive shell's background
/// job ignores SIGINT and SIGQUIT. Taking it would undo what whoever
/// started the run asked for, so it stays ignored.
fn ignored_at_start(sig: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction only writes the current
    // disposition of `sig` into `old`, valid memory of its type.
    let r = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: all zeros is a valid `sigaction` (a plain C struct), and a
    // successful call wrote a whole one over it.
    let old = unsafe { old.assume_init() };
    r == 0 && old.sa_sigaction == libc::SIG_IGN
}

/// Point standard output (`ttys[0]`) and error (`ttys[1]`) at
/// `/dev/null`: the terminal they wrote to hung up.
fn leave_the_terminal(ttys: [bool; 2]) {
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    for (fd, tty) in [(1, ttys[0]), (2, ttys[1])] {
        if tty {
            // SAFETY: both descriptors are open (`null` lives until the end
            // of this function; 1 and 2 are the process's standard
            // streams, which `std` never closes), and dup2 replaces 1 or 2
            // in one step: a concurrent write goes to the old file or the
            // new one, never to a closed or reused descriptor.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
}

/// One line on stderr; a closed stderr is no reason to stop.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// From now on the first signal stops the run through [`token`] instead of
/// ending the process.
pub fn stop_runs_gracefully() {
    state().graceful.store(true, Ordering::Release);
}

/// The token every run of this process is cancelled through.
pub fn token() -> CancelToken {
    state().token.clone()
}

/// Exit code 130 (SIGINT), 143 (SIGTERM) or 129 (SIGHUP) once a signal
/// was taken.
pub fn interrupted() -> Option<ExitCode> {
    match state().first.load(Ordering::Acquire) {
        0 => None,
        sig => Some(ExitCode::from((128 + sig) as u8)),
    }
}
