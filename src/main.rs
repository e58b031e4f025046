//! `simpler`: the command-line front end. Parses flags and dispatches; the
//! work lives in the library crates.

mod bench;
mod cli;
mod dispatch_view;
mod dump_cfg;
mod dump_diff;
mod dump_view;
mod insight;
mod list;
mod run;
mod signals;
mod swimlane_cfg;
mod swimlane_cmd;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    quiet_panics();
    // Before anything is created: temporary files never outlive a signal.
    if let Err(e) = signals::install() {
        eprintln!("error: {e:#}");
        return ExitCode::from(2);
    }
    let args = cli::Cli::parse();
    match dispatch(args) {
        Ok(code) => code,
        // `simpler … | head`: the reader left; stop quietly, as other tools do.
        Err(e) if broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// True when a write to a closed pipe is somewhere in the error chain.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn dispatch(args: cli::Cli) -> anyhow::Result<ExitCode> {
    match args.command {
        cli::Command::Run(a) => run::run(&a),
        cli::Command::List => list::list(),
        cli::Command::Bench(a) => bench::bench(&a),
        cli::Command::Dump(cli::DumpCommand::View(a)) => dump_view::view(&a),
        cli::Command::Dump(cli::DumpCommand::Diff(a)) => dump_diff::diff(&a),
        cli::Command::InsightTrace(a) => insight::insight_trace(&a),
        cli::Command::Swimlane(a) => swimlane_cmd::swimlane(&a),
    }
}

/// Kernel panics are caught by the runtime and reported as errors naming the
/// task; the default hook would also print a "thread panicked" line for them.
/// Keep one line for panics elsewhere (a bug in simpler itself), no backtrace.
/// A closed stdout (`| head`) ends the program quietly.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        // `simpler … | head`: the reader left; stop quietly like other tools.
        if info.to_string().contains("Broken pipe") {
            std::process::exit(0);
        }
        if !simpler_isa::kernel::in_kernel() {
            eprintln!("internal error: {info}");
        }
    }));
}
