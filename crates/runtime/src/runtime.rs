//! `Runtime`: a simulated chip plus kernels, ready to run orchestrations.

use std::{
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use crossbeam::sync::Parker;
use parking_lot::Mutex;
use simpler_chip::Gm;
use simpler_core::{ChipTensor, DType, WriteRace};

use crate::{
    scheduler::{Chip, ChipSpec, Shared},
    KernelDef, KernelRegistry, OrchArg, OrchArgs, Orchestrator, RuntimeConfig, RuntimeError,
    Tensor,
};

/// What a finished run reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Tasks submitted (and completed).
    pub tasks: u64,
    /// Dispatches sent to cores (blocks × members).
    pub dispatches: u64,
    /// Dependency edges: for each task, the producers it had to wait for
    /// (the sum of [`crate::Submitted::deps`] lengths).
    pub edges: u64,
    /// Most tasks live (submitted, not complete) at one time.
    pub peak_live_tasks: u64,
    /// GM bytes in use after the run (uploads and results; intermediates are freed).
    pub gm_used_bytes: u64,
    /// Most GM bytes in use at once since the runtime was created.
    pub gm_peak_bytes: u64,
    /// Wall time of the run.
    pub wall: Duration,
    /// Wall time from the run's start until the orchestration returned and
    /// every task completed (or the run stopped); the rest of `wall` is
    /// stopping the workers and writing the dump's files — what a dump
    /// costs after the graph, apart from what its captures cost during it.
    pub graph: Duration,
    /// Time the orchestration function ran, minus the time it was blocked
    /// (waiting for a task slot, GM or a scalar's producer): what
    /// submitting the graph cost the orchestrator thread.
    pub orchestration: Duration,
    /// Overlapping writes of dispatches that could run at the same time
    /// (0 when `racecheck` is off).
    pub write_races: u64,
    /// The first [`crate::RACE_LIST_CAP`] of them, in the order found.
    pub races: Vec<WriteRace>,
    /// What the dump wrote, when dumping was on.
    pub dump: Option<simpler_dump::DumpSummary>,
}

/// A simulated chip with its GM and kernels.
///
/// ```
/// use simpler_core::DType;
/// use simpler_runtime::{OrchArgs, Runtime, RuntimeConfig};
/// let rt = Runtime::new(RuntimeConfig { gm_bytes: 1 << 20, ..Default::default() }, vec![]).unwrap();
/// let t = rt.upload_pod(&[1.0f32, 2.0], &[2], DType::Float32).unwrap();
/// let report = rt.run(&OrchArgs::new().tensor(t), |_o, _args| Ok(())).unwrap();
/// assert_eq!(report.tasks, 0);
/// assert_eq!(rt.download_pod::<f32>(&t).unwrap(), vec![1.0, 2.0]);
/// ```
pub struct Runtime {
    cfg: RuntimeConfig,
    gm: Arc<Gm>,
    registry: KernelRegistry,
    /// What the last run's dump wrote.
    last_dump: Mutex<Option<simpler_dump::DumpSummary>>,
    /// What the last run's timeline recording kept, as recorded (turned
    /// into a log when taken, off the run's clock).
    last_swimlane: Mutex<Option<crate::swimlane::LastRecording>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cfg", &self.cfg)
            .field("gm", &self.gm)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Reserve GM and register `kernels`.
    ///
    /// # Errors
    /// Bad configuration, duplicate func ids, or GM that cannot be reserved.
    pub fn new(cfg: RuntimeConfig, kernels: Vec<KernelDef>) -> Result<Runtime, RuntimeError> {
        cfg.validate()?;
        let registry = KernelRegistry::new(kernels)?;
        let gm = Arc::new(Gm::new(cfg.gm_bytes)?);
        Ok(Runtime {
            cfg,
            gm,
            registry,
            last_dump: Mutex::new(None),
            last_swimlane: Mutex::new(None),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.cfg
    }

    /// The token that stops this runtime's runs from another thread (the
    /// one in its configuration).
    pub fn cancel_token(&self) -> crate::CancelToken {
        self.cfg.cancel.clone()
    }

    /// The registered kernels.
    pub fn registry(&self) -> &KernelRegistry {
        &self.registry
    }

    /// Global memory.
    pub fn gm(&self) -> &Arc<Gm> {
        &self.gm
    }

    /// Allocate a zero-filled GM tensor (an orchestration argument).
    ///
    /// # Errors
    /// Bad shape or GM exhausted.
    pub fn alloc_tensor(&self, shape: &[u32], dtype: DType) -> Result<Tensor, RuntimeError> {
        if shape.is_empty() || shape.len() > simpler_core::MAX_DIMS {
            return Err(RuntimeError::InvalidSubmit(format!(
                "shape {shape:?} must have 1..=5 dims"
            )));
        }
        let bytes = shape
            .iter()
            .try_fold(dtype.size() as u64, |a, &s| a.checked_mul(u64::from(s)))
            .ok_or_else(|| RuntimeError::InvalidSubmit(format!("shape {shape:?} overflows")))?;
        let addr = self.gm.alloc(bytes)?;
        Ok(Tensor::from_desc(ChipTensor::contiguous(
            addr, shape, dtype,
        )))
    }

    /// Copy host bytes into a new GM tensor.
    ///
    /// # Errors
    /// When `bytes` does not match the shape, or GM is exhausted.
    pub fn upload(
        &self,
        bytes: &[u8],
        shape: &[u32],
        dtype: DType,
    ) -> Result<Tensor, RuntimeError> {
        let t = self.alloc_tensor(shape, dtype)?;
        if bytes.len() as u64 != t.desc().nbytes() {
            let _ = self.gm.free(t.addr());
            return Err(RuntimeError::InvalidSubmit(format!(
                "upload of {} bytes into a {shape:?} {dtype} tensor ({} bytes)",
                bytes.len(),
                t.desc().nbytes()
            )));
        }
        self.gm
            .write(t.addr(), bytes)
            .map_err(|e| RuntimeError::InvalidSubmit(e.to_string()))?;
        Ok(t)
    }

    /// Copy a typed host slice into a new GM tensor.
    ///
    /// # Errors
    /// As for [`Runtime::upload`].
    pub fn upload_pod<T: bytemuck::Pod>(
        &self,
        data: &[T],
        shape: &[u32],
        dtype: DType,
    ) -> Result<Tensor, RuntimeError> {
        self.upload(bytemuck::cast_slice(data), shape, dtype)
    }

    /// Gather a tensor view's bytes (row-major) from GM.
    ///
    /// # Errors
    /// When the view is not inside live GM.
    pub fn download(&self, t: &Tensor) -> Result<Vec<u8>, RuntimeError> {
        let mut out = vec![0u8; t.desc().nbytes() as usize];
        self.gm
            .gather(t.desc(), &mut out)
            .map_err(|e| RuntimeError::InvalidSubmit(e.to_string()))?;
        Ok(out)
    }

    /// Gather a tensor view into a typed vector.
    ///
    /// # Errors
    /// As for [`Runtime::download`].
    pub fn download_pod<T: bytemuck::Pod>(&self, t: &Tensor) -> Result<Vec<T>, RuntimeError> {
        let bytes = self.download(t)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Run an orchestration to completion on a fresh pool of worker
    /// threads.
    ///
    /// An abnormal end still exports the dump, marked incomplete with the
    /// reason; after a timeout or a cancel ([`crate::CancelToken`]) the
    /// run does not wait for running kernels, lists every unfinished task
    /// in the dump and snapshots the outputs of those dispatched. A failed
    /// payload write (a full disk) stops the run with
    /// [`RuntimeError::DumpWrite`]. [`Runtime::last_dump`] tells what the
    /// dump wrote, also when the run failed.
    ///
    /// # Errors
    /// The first kernel error (naming task, func id and core), a timeout, a
    /// cancel, a failed dump write, or an error returned by the orchestration.
    pub fn run<F>(&self, args: &OrchArgs, orch: F) -> Result<RunReport, RuntimeError>
    where
        F: FnOnce(&mut Orchestrator<'_>, &OrchArgs) -> Result<(), RuntimeError>,
    {
        let start = Instant::now();
        *self.last_dump.lock() = None;
        let parker = Parker::new();
        let mut dump = self
            .cfg
            .dump
            .as_ref()
            .map(|cfg| {
                simpler_dump::DumpSession::start(cfg.clone())
                    .map_err(|e| RuntimeError::Dump(e.to_string()))
            })
            .transpose()?;
        let deadline = self.cfg.timeout.and_then(|t| start.checked_add(t));
        let spec = ChipSpec {
            arch: &self.cfg.arch,
            clusters: self.cfg.clusters,
            sched_threads: self.cfg.sched_threads,
            workers: self.cfg.workers,
            dump: dump.as_ref(),
            swimlane: self.cfg.swimlane.as_ref(),
            deadline,
            racecheck: self.cfg.racecheck,
            task_window: self.cfg.task_window,
        };
        let mut chip = Chip::start(self.gm.clone(), &spec, parker.unparker().clone())?;
        let shared = chip.shared.clone();
        self.cfg.cancel.attach(&shared);
        if let Some(d) = &dump {
            hook_dump(d, &shared, args);
        }
        let mut o = self.orchestrator(&shared, parker);
        // Cancelled before it started: the orchestration does not run.
        let orch_start = Instant::now();
        let result = match self.cfg.cancel.reason() {
            Some(r) => Err(RuntimeError::Cancelled(r)),
            None => orch(&mut o, args),
        };
        let orchestration = orch_start.elapsed().saturating_sub(o.waited());
        let result = result.and_then(|()| o.finish());
        let graph = start.elapsed();
        // A timeout or a cancel does not wait for running kernels.
        let hang = matches!(
            shared.error(),
            Some(RuntimeError::Timeout(_) | RuntimeError::Cancelled(_))
        );
        if result.is_err() {
            o.close_all_scopes();
            shared.fail(RuntimeError::Aborted("orchestration stopped".into()));
        }
        let peak_live = o.peak_live_tasks();
        let live = o.live_tasks();
        let edges = o.edges();
        let orch_rec = o.take_recording().map(|mut r| {
            r.live(&live);
            r
        });
        drop(o);
        chip.stop_workers(hang);
        let background = self.cfg.swimlane.as_ref().is_some_and(|s| s.background);
        *self.last_swimlane.lock() = orch_rec.map(|r| {
            crate::swimlane::LastRecording::new(self.swimlane_recorded(r, &chip), background)
        });
        let unfinished = match shared.forced() {
            true => crate::snapshot::take(&shared, &live, dump.as_ref()),
            false => Vec::new(),
        };
        drop(live);
        chip.release();
        self.cfg.cancel.detach();
        let error = first_error(&shared, result);
        let (write_races, races) = (shared.race.count(), shared.race.list());
        if let Some(d) = &mut dump {
            d.set_write_races(self.cfg.racecheck.name(), write_races, &races);
        }
        let (dump, error) = self.finish_dump(dump, error, unfinished)?;
        if let Some(e) = error {
            return Err(e);
        }
        Ok(RunReport {
            tasks: shared.counters.completed.load(Ordering::Relaxed),
            dispatches: shared.counters.dispatches.load(Ordering::Relaxed),
            edges,
            peak_live_tasks: peak_live,
            gm_used_bytes: self.gm.used(),
            gm_peak_bytes: self.gm.peak(),
            wall: start.elapsed(),
            graph,
            orchestration,
            write_races,
            races,
            dump,
        })
    }

    /// The orchestrator of a run on `shared`.
    fn orchestrator(&self, shared: &Arc<Shared>, parker: Parker) -> Orchestrator<'_> {
        let rec = self.cfg.swimlane.as_ref();
        Orchestrator::new(
            shared.clone(),
            &self.registry,
            self.cfg.task_window,
            parker,
            self.cfg.timeout,
            rec.map(|s| crate::swimlane::OrchRecorder::new(s.level, shared.clock)),
        )
    }

    /// Take what the last run's timeline recording kept (also when the
    /// run failed: the dispatches that finished); `None` when recording
    /// was off.
    ///
    /// The graph's edges are rebuilt here from the submit sequence, so
    /// this takes a while on a large graph (it is not on the run's clock)
    /// — unless [`crate::SwimlaneConfig::background`] started it when the
    /// run ended; then this waits for it.
    pub fn take_swimlane(&self) -> Option<crate::SwimlaneLog> {
        let last = self.last_swimlane.lock().take()?;
        last.into_log()
    }

    fn swimlane_recorded(
        &self,
        orch: crate::swimlane::OrchRecorder,
        chip: &Chip,
    ) -> crate::swimlane::Recorded {
        let level = self.cfg.swimlane.as_ref().map_or(0, |s| s.level);
        crate::swimlane::Recorded {
            level,
            clusters: self.cfg.clusters,
            sched_threads: chip.sched_threads(),
            scale: chip.scale(),
            orch,
            workers: chip.take_recorded(),
            // Only scheduler phases (level ≥ 3) carry queue lengths.
            unpopped: match level {
                0..=2 => Vec::new(),
                _ => chip.take_unpopped(),
            },
            func_names: self.registry.iter().map(|k| (k.func_id, k.name)).collect(),
        }
    }

    /// What the dump of the last run wrote (also when the run failed);
    /// `None` without a dump, or when not even its manifest could be written.
    pub fn last_dump(&self) -> Option<simpler_dump::DumpSummary> {
        self.last_dump.lock().clone()
    }

    /// Export what was collected, complete or not. A write that failed
    /// turns a finished run into [`RuntimeError::DumpWrite`]; a dump that
    /// kept nothing is [`RuntimeError::Dump`], naming the run's own error.
    #[allow(clippy::type_complexity)]
    fn finish_dump(
        &self,
        dump: Option<simpler_dump::DumpSession>,
        mut error: Option<RuntimeError>,
        unfinished: Vec<simpler_dump::UnfinishedTask>,
    ) -> Result<(Option<simpler_dump::DumpSummary>, Option<RuntimeError>), RuntimeError> {
        let Some(d) = dump else {
            return Ok((None, error));
        };
        let status = match &error {
            None => simpler_dump::RunStatus::Complete,
            Some(e) => simpler_dump::RunStatus::Incomplete(e.to_string()),
        };
        match d.finish(status, unfinished) {
            Ok(s) => {
                if let (None, Some(msg)) = (&error, &s.write_error) {
                    error = Some(RuntimeError::DumpWrite(msg.clone()));
                }
                *self.last_dump.lock() = Some(s.clone());
                Ok((Some(s), error))
            }
            Err(e) => Err(match error {
                None | Some(RuntimeError::DumpWrite(_)) => RuntimeError::Dump(e.to_string()),
                Some(first) => RuntimeError::Dump(format!("{e} (the run had ended: {first})")),
            }),
        }
    }
}

/// The error that ended the run: the first real one (a kernel's, a
/// timeout, a cancel, a failed write) wins over the aborts it caused. A
/// cancel that came after every task completed does not fail the run.
fn first_error(shared: &Shared, result: Result<(), RuntimeError>) -> Option<RuntimeError> {
    match (shared.take_error(), result) {
        (Some(RuntimeError::Cancelled(_)), Ok(())) => None,
        (Some(RuntimeError::Aborted(_)) | None, r) => r.err(),
        (Some(e), _) => Some(e),
    }
}

/// Make a failed dump write stop the run (the hook holds the run weakly),
/// then record the run's own arguments.
fn hook_dump(d: &simpler_dump::DumpSession, shared: &Arc<Shared>, args: &OrchArgs) {
    let s = Arc::downgrade(shared);
    d.on_write_failure(move |msg| {
        if let Some(s) = s.upgrade() {
            s.fail(RuntimeError::DumpWrite(msg.to_string()));
        }
    });
    record_orch_args(d, args);
}

/// The orchestration's own arguments, through the same dump pipeline
/// (the orchestrator thread is the producer).
fn record_orch_args(d: &simpler_dump::DumpSession, args: &OrchArgs) {
    let mut p = d.producer();
    for (i, a) in args.args.iter().enumerate() {
        let (role, subject) = match *a {
            OrchArg::Tensor(t, role) => (role, simpler_dump::Subject::Tensor(*t.desc())),
            OrchArg::Scalar(s) => (
                simpler_core::ArgRole::Input,
                simpler_dump::Subject::Scalar(s),
            ),
        };
        p.orch_arg(i as u32, role, subject);
    }
}
