//! Opt-in run traces: what ran on which thread, when, for how long — systems, sync points,
//! `apply_deferred`, the end-of-run command application and the batches of `par_for_each`
//! passes — exported as Chrome trace-event JSON (open it in Perfetto or `chrome://tracing`).
//!
//! A traced run collects raw events (a kind, a slot, a thread, two `Instant`s and a count)
//! into one [`TraceLog`] under a mutex, from every thread of the run, and names them only once
//! the run is over, so recording one costs a lock and a push, never an allocation of a name.
//! Untraced runs never reach this module (see `executor::run_system`).

use std::fmt::Write;
use std::time::Instant;

use parking_lot::Mutex;

/// What a [`TraceEvent`] stands for. Its [`name`](Self::name) is the `cat` of the event in
/// the Chrome JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceKind {
    /// A system run: its run conditions and the system itself. Named after the system.
    System,
    /// An automatic sync point applying the pending commands. Named `sync`.
    Sync,
    /// An [`apply_deferred`](crate::apply_deferred) system: its run conditions, and the
    /// pending commands it applied. Named after the system.
    ApplyDeferred,
    /// The end of the run: the commands still pending applied, the entity ids reserved
    /// during the run made real, and (when on) the events aged. Named `apply_at_end`.
    ApplyAtEnd,
    /// One run of rows of a `par_for_each` pass (or a whole pass, when it ran serially), on
    /// the thread that ran it. Named after the system that started the pass.
    Batch,
}

impl TraceKind {
    /// The kind's name, as written in the `cat` field of the Chrome JSON: `system`, `sync`,
    /// `apply_deferred`, `apply_at_end` or `batch`.
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::System => "system",
            TraceKind::Sync => "sync",
            TraceKind::ApplyDeferred => "apply_deferred",
            TraceKind::ApplyAtEnd => "apply_at_end",
            TraceKind::Batch => "batch",
        }
    }

    /// True for the kinds that apply commands.
    pub fn applies_commands(self) -> bool {
        matches!(
            self,
            TraceKind::Sync | TraceKind::ApplyDeferred | TraceKind::ApplyAtEnd
        )
    }
}

/// One interval of a traced run.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// What the interval was spent on.
    pub kind: TraceKind,
    /// The system's name for [`System`](TraceKind::System), [`Batch`](TraceKind::Batch)
    /// (the system that started the pass) and [`ApplyDeferred`](TraceKind::ApplyDeferred)
    /// events; `sync` or `apply_at_end` for the others.
    pub name: String,
    /// `1 + rayon index` for a thread of a rayon pool, 0 for any other thread (so the thread
    /// that called `run` is 0 unless it is itself a pool thread, as under `pool.install`).
    pub thread: usize,
    /// Microseconds since the run started.
    pub start_us: f64,
    /// Microseconds the interval lasted.
    pub duration_us: f64,
    /// For the kinds that apply commands ([`TraceKind::applies_commands`]): how many commands
    /// were applied, as the systems recorded them (`args.commands` in the Chrome JSON;
    /// commands that applied commands or hooks record in turn are not counted); for a batch,
    /// its rows (`args.rows`); 0 for a system.
    pub count: usize,
}

impl TraceEvent {
    /// The microsecond at which the interval ended.
    pub fn end_us(&self) -> f64 {
        self.start_us + self.duration_us
    }
}

/// The trace of one schedule run.
///
/// The run's interval, `0..wall_us`, starts just before the executor does (after the
/// schedule is built and old change ticks are clamped) and ends with the end-of-run command
/// application ([`TraceKind::ApplyAtEnd`]), which is the last thing a run does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// The events, ordered by start time.
    pub events: Vec<TraceEvent>,
    /// Wall-clock microseconds of the whole run.
    pub wall_us: f64,
}

/// How much work overlapped in a run (see [`Trace::overlap`]).
///
/// The *work* of a run is its [`System`](TraceKind::System) and [`Batch`](TraceKind::Batch)
/// events. A thread is *at work* at an instant when one of them is open on it, with one
/// exception: a system whose `par_for_each` has a batch open — on any thread — is
/// represented by its batches for that time, not by its own thread, which is then either
/// running one of those batches (counted once) or waiting for them. So a pass started from
/// outside the pool counts as the pool's threads, not one more, and a system counts once
/// however many events it has on its thread. Sync points and command application are left
/// out: they run alone, and are no work that could overlap.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Overlap {
    /// Microseconds during which at least one thread was at work.
    pub busy_us: f64,
    /// Microseconds during which two or more threads were at work at once.
    pub overlapped_us: f64,
    /// Threads at work, integrated over the run: microseconds of work summed over threads.
    pub thread_us: f64,
    /// The most threads at work at one instant.
    pub peak: usize,
    /// Pairs of system events whose intervals intersect (for more than an instant), on two
    /// threads or — a system started while another waited for its `par_for_each` — on one.
    pub overlapping_systems: usize,
}

impl Trace {
    /// The trace as Chrome trace-event JSON: one complete (`"ph":"X"`) event per
    /// [`TraceEvent`], its kind as `cat` and its count in `args` (`commands` for command
    /// application, `rows` for batches), and a name for each thread (`calling thread` for 0,
    /// `rayon N` for the others).
    pub fn to_chrome_json(&self) -> String {
        let mut out = String::from("{\"traceEvents\":[");
        let mut threads: Vec<usize> = self.events.iter().map(|e| e.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        for (i, thread) in threads.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let name = match thread {
                0 => "calling thread".to_string(),
                n => format!("rayon {}", n - 1),
            };
            write!(
                out,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{thread},\"args\":{{\"name\":\"{name}\"}}}}"
            )
            .expect("writing to a String cannot fail");
        }
        for e in &self.events {
            if !out.ends_with('[') {
                out.push(',');
            }
            let name = e.name.replace('\\', "\\\\").replace('"', "\\\"");
            write!(
                out,
                "{{\"name\":\"{name}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3}",
                e.kind.name(),
                e.thread,
                e.start_us,
                e.duration_us
            )
            .expect("writing to a String cannot fail");
            match e.kind {
                TraceKind::System => {}
                TraceKind::Batch => write!(out, ",\"args\":{{\"rows\":{}}}", e.count).expect("String"),
                _ => write!(out, ",\"args\":{{\"commands\":{}}}", e.count).expect("String"),
            }
            out.push('}');
        }
        out.push_str("],\"displayTimeUnit\":\"ms\"}");
        out
    }

    /// The fraction of the run's wall time that the trace explains: the share of `0..wall_us`
    /// during which at least one event, of any kind and on any thread, is open (the length
    /// of the union of all events' intervals, clipped to the run, over `wall_us`). What is
    /// left is executor overhead: deciding what runs next, handing work to threads, waiting
    /// for a thread to start, and recording the trace itself. 0 for an empty run.
    pub fn attributed(&self) -> f64 {
        if self.wall_us <= 0.0 {
            return 0.0;
        }
        let spans = self
            .events
            .iter()
            .map(|e| (e.start_us.max(0.0), e.end_us().min(self.wall_us)));
        (union_length(spans) / self.wall_us).min(1.0)
    }

    /// Threads at work over the run's wall time ([`Overlap::thread_us`] over `wall_us`): the
    /// average number of threads working at once across the whole run, idle stretches
    /// included.
    pub fn parallelism(&self) -> f64 {
        if self.wall_us > 0.0 {
            self.overlap().thread_us / self.wall_us
        } else {
            0.0
        }
    }

    /// The average number of threads at work at once (see [`Overlap`]), over the time when
    /// at least one was: [`Overlap::thread_us`] over [`Overlap::busy_us`]. 1 when no two
    /// pieces of work ever overlapped, whether they ran inline on the calling thread or not;
    /// 0 for a run with no work. Being an average over the whole run, a short overlap in a
    /// long serial run moves it little: [`overlap`](Self::overlap) gives the overlapped time
    /// and the overlapping systems themselves.
    pub fn concurrency(&self) -> f64 {
        let overlap = self.overlap();
        if overlap.busy_us > 0.0 {
            overlap.thread_us / overlap.busy_us
        } else {
            0.0
        }
    }

    /// How the run's work overlapped in time, across threads (see [`Overlap`]).
    pub fn overlap(&self) -> Overlap {
        // Each thread's work intervals, merged so that a thread counts once at a time.
        let mut per_thread: Vec<(usize, f64, f64)> = Vec::new();
        for e in &self.events {
            match e.kind {
                TraceKind::Batch => per_thread.push((e.thread, e.start_us, e.end_us())),
                TraceKind::System => {
                    // The system's interval less those of its batches.
                    let mut batches: Vec<(f64, f64)> = self
                        .events
                        .iter()
                        .filter(|b| b.kind == TraceKind::Batch && b.name == e.name)
                        .filter(|b| b.start_us >= e.start_us && b.end_us() <= e.end_us())
                        .map(|b| (b.start_us, b.end_us()))
                        .collect();
                    let mut from = e.start_us;
                    for (start, end) in merge(&mut batches) {
                        if start > from {
                            per_thread.push((e.thread, from, start));
                        }
                        from = from.max(end);
                    }
                    if e.end_us() > from {
                        per_thread.push((e.thread, from, e.end_us()));
                    }
                }
                _ => {}
            }
        }
        per_thread.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        // +1 at each start, -1 at each end, over every thread's merged intervals.
        let mut steps: Vec<(f64, i32)> = Vec::new();
        let mut i = 0;
        while i < per_thread.len() {
            let thread = per_thread[i].0;
            let mut spans: Vec<(f64, f64)> = per_thread[i..]
                .iter()
                .take_while(|s| s.0 == thread)
                .map(|s| (s.1, s.2))
                .collect();
            i += spans.len();
            for (start, end) in merge(&mut spans) {
                steps.push((start, 1));
                steps.push((end, -1));
            }
        }
        // Ends before starts at the same instant: touching intervals do not overlap.
        steps.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut overlap = Overlap::default();
        let mut at_work = 0_i32;
        let mut last = 0.0;
        for (time, step) in steps {
            let span = time - last;
            if at_work >= 1 {
                overlap.busy_us += span;
                overlap.thread_us += span * f64::from(at_work);
            }
            if at_work >= 2 {
                overlap.overlapped_us += span;
            }
            at_work += step;
            overlap.peak = overlap.peak.max(usize::try_from(at_work).unwrap_or(0));
            last = time;
        }
        let mut systems: Vec<(f64, f64)> = self
            .events
            .iter()
            .filter(|e| e.kind == TraceKind::System)
            .map(|e| (e.start_us, e.end_us()))
            .collect();
        systems.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (i, &(_, end)) in systems.iter().enumerate() {
            overlap.overlapping_systems += systems[i + 1..].iter().take_while(|s| s.0 < end).count();
        }
        overlap
    }
}

/// Sorts `spans` and merges the ones that overlap or touch; returns them, disjoint and in
/// order.
fn merge(spans: &mut [(f64, f64)]) -> Vec<(f64, f64)> {
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(spans.len());
    for &(start, end) in spans.iter() {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// The length of the union of `spans` (empty or reversed ones count nothing).
fn union_length(spans: impl Iterator<Item = (f64, f64)>) -> f64 {
    let mut spans: Vec<(f64, f64)> = spans.filter(|s| s.1 > s.0).collect();
    merge(&mut spans).iter().map(|s| s.1 - s.0).sum()
}

/// The thread id used in traces.
pub(crate) fn thread_id() -> usize {
    rayon::current_thread_index().map_or(0, |i| i + 1)
}

/// One event as recorded during a run, named when the trace is made.
#[derive(Clone, Copy)]
struct RawEvent {
    kind: TraceKind,
    /// The slot of the system the event belongs to (none for sync points and the end).
    slot: Option<usize>,
    thread: usize,
    start: Instant,
    end: Instant,
    count: usize,
}

/// The events of one traced run, recorded from every thread of it.
pub(crate) struct TraceLog {
    start: Instant,
    events: Mutex<Vec<RawEvent>>,
}

impl TraceLog {
    /// A log whose run starts now.
    pub(crate) fn new() -> Self {
        let events = Mutex::new(Vec::with_capacity(128));
        Self {
            start: Instant::now(),
            events,
        }
    }

    /// Records an event of `kind` on the current thread, from `start` to `end`.
    pub(crate) fn record(
        &self,
        kind: TraceKind,
        slot: Option<usize>,
        start: Instant,
        end: Instant,
        count: usize,
    ) {
        let event = RawEvent {
            kind,
            slot,
            thread: thread_id(),
            start,
            end,
            count,
        };
        self.events.lock().push(event);
    }

    /// Times `apply` (a command application of `kind`, returning how many commands it
    /// applied) and records it.
    pub(crate) fn record_apply(&self, kind: TraceKind, slot: Option<usize>, apply: impl FnOnce() -> usize) {
        let start = Instant::now();
        let count = apply();
        self.record(kind, slot, start, Instant::now(), count);
    }

    /// The trace of the run, which ended at `end`; `name_of` names a slot's system.
    pub(crate) fn finish<'s>(self, end: Instant, name_of: impl Fn(usize) -> &'s str) -> Trace {
        let micros = |t: Instant| t.saturating_duration_since(self.start).as_secs_f64() * 1e6;
        let mut events: Vec<TraceEvent> = self
            .events
            .into_inner()
            .into_iter()
            .map(|raw| TraceEvent {
                kind: raw.kind,
                name: match (raw.kind, raw.slot) {
                    (TraceKind::ApplyAtEnd, _) => "apply_at_end".to_string(),
                    (_, Some(slot)) => name_of(slot).to_string(),
                    (_, None) => "sync".to_string(),
                },
                thread: raw.thread,
                start_us: micros(raw.start),
                duration_us: raw.end.saturating_duration_since(raw.start).as_secs_f64() * 1e6,
                count: raw.count,
            })
            .collect();
        events.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
        Trace {
            events,
            wall_us: micros(end),
        }
    }
}

/// Reports the `par_for_each` batches of one system's traced run to the run's log (see
/// `tabula_core::query::with_batch_sink`).
pub(crate) fn batch_sink(log: &TraceLog, slot: usize) -> impl Fn(Instant, Instant, usize) + Sync + '_ {
    move |start, end, rows| log.record(TraceKind::Batch, Some(slot), start, end, rows)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn event(kind: TraceKind, name: &str, thread: usize, start_us: f64, duration_us: f64) -> TraceEvent {
        TraceEvent {
            kind,
            name: name.into(),
            thread,
            start_us,
            duration_us,
            count: 0,
        }
    }

    #[test]
    fn attributed_is_the_share_of_the_run_inside_some_event() {
        use TraceKind::*;
        // 100 us: a system 0..30, a batch 20..40 elsewhere, a sync 50..60, the end 90..100,
        // and an event past the end that counts only up to it.
        let trace = Trace {
            events: vec![
                event(System, "a", 0, 0.0, 30.0),
                event(Batch, "a", 1, 20.0, 20.0),
                event(Sync, "sync", 0, 50.0, 10.0),
                event(ApplyAtEnd, "apply_at_end", 0, 90.0, 20.0),
            ],
            wall_us: 100.0,
        };
        assert!((trace.attributed() - 0.6).abs() < 1e-9);
        assert_eq!(Trace::default().attributed(), 0.0);
    }

    #[test]
    fn concurrency_counts_threads_at_work_inline_or_not() {
        use TraceKind::*;
        // Thread 0 runs `a` (0..10) inline, then `c` (20..30); thread 1 runs `b` (5..15),
        // overlapping `a` for 5 us. Thread 0 then runs `d` 40..60, whose par_for_each has
        // batches on threads 1 and 2 over 45..55 while thread 0 waits: 2 threads then, not 3.
        // A sync point 16..18 is no work.
        let trace = Trace {
            events: vec![
                event(System, "a", 0, 0.0, 10.0),
                event(System, "b", 1, 5.0, 10.0),
                event(Sync, "sync", 0, 16.0, 2.0),
                event(System, "c", 0, 20.0, 10.0),
                event(System, "d", 0, 40.0, 20.0),
                event(Batch, "d", 1, 45.0, 10.0),
                event(Batch, "d", 2, 45.0, 10.0),
            ],
            wall_us: 80.0,
        };
        let overlap = trace.overlap();
        // At work: 0..15 (two threads over 5..10), 20..30, 40..60 (two over 45..55).
        assert!((overlap.busy_us - 45.0).abs() < 1e-9, "{overlap:?}");
        assert!((overlap.overlapped_us - 15.0).abs() < 1e-9, "{overlap:?}");
        assert!((overlap.thread_us - 60.0).abs() < 1e-9, "{overlap:?}");
        assert_eq!(overlap.peak, 2);
        assert_eq!(overlap.overlapping_systems, 1); // a and b
        assert!((trace.concurrency() - 60.0 / 45.0).abs() < 1e-9);
        assert!((trace.parallelism() - 60.0 / 80.0).abs() < 1e-9);
        assert_eq!(Trace::default().concurrency(), 0.0);
    }

    #[test]
    fn a_system_and_its_own_batch_on_one_thread_count_once() {
        use TraceKind::*;
        // The calling thread is a pool thread: it runs a batch of its own pass, another
        // thread runs the other batch; a second system starts on the first thread while it
        // waits inside the pass (nested).
        let trace = Trace {
            events: vec![
                event(System, "p", 1, 0.0, 10.0),
                event(Batch, "p", 1, 1.0, 4.0),
                event(Batch, "p", 2, 1.0, 8.0),
                event(System, "q", 1, 6.0, 2.0),
            ],
            wall_us: 10.0,
        };
        let overlap = trace.overlap();
        // Thread 1: 0..1 (p), 1..5 (batch), 6..8 (q), 9..10 (p); thread 2: 1..9.
        assert!((overlap.busy_us - 10.0).abs() < 1e-9, "{overlap:?}");
        assert!((overlap.thread_us - 16.0).abs() < 1e-9, "{overlap:?}");
        assert!((overlap.overlapped_us - 6.0).abs() < 1e-9, "{overlap:?}");
        assert_eq!(overlap.peak, 2);
        assert_eq!(overlap.overlapping_systems, 1); // q inside p
    }

    #[test]
    fn chrome_json_carries_kinds_counts_and_thread_names() {
        let mut sync = event(TraceKind::Sync, "sync", 0, 10.0, 1.0);
        sync.count = 3;
        let mut batch = event(TraceKind::Batch, "a\"b", 2, 2.0, 3.0);
        batch.count = 512;
        let trace = Trace {
            events: vec![event(TraceKind::System, "a\"b", 0, 0.0, 9.0), batch, sync],
            wall_us: 12.0,
        };
        let json = trace.to_chrome_json();
        assert!(json.contains("\"cat\":\"system\""), "{json}");
        assert!(json.contains("\"name\":\"a\\\"b\",\"cat\":\"batch\""), "{json}");
        assert!(json.contains("\"args\":{\"rows\":512}"), "{json}");
        assert!(
            json.contains("\"cat\":\"sync\"") && json.contains("\"args\":{\"commands\":3}"),
            "{json}"
        );
        assert!(json.contains("\"args\":{\"name\":\"calling thread\"}"), "{json}");
        assert!(json.contains("\"args\":{\"name\":\"rayon 1\"}"), "{json}");
        assert!(json.starts_with("{\"traceEvents\":[{") && json.ends_with("}],\"displayTimeUnit\":\"ms\"}"));
    }
}
