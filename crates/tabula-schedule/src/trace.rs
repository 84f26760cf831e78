//! Opt-in run traces: which system ran on which thread, when, for how long — exported as
//! Chrome trace-event JSON (open it in Perfetto or `chrome://tracing`).

use std::fmt::Write;

/// One system execution in a traced run.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// The system's name.
    pub name: String,
    /// `1 + rayon index` for a thread of a rayon pool, 0 for any other thread (so the thread
    /// that called `run` is 0 unless it is itself a pool thread, as under `pool.install`).
    pub thread: usize,
    /// Microseconds since the run started.
    pub start_us: f64,
    /// Microseconds the system took.
    pub duration_us: f64,
}

/// The trace of one schedule run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// The executions, ordered by start time.
    pub events: Vec<TraceEvent>,
    /// Wall-clock microseconds of the whole run.
    pub wall_us: f64,
}

impl Trace {
    /// The trace as Chrome trace-event JSON.
    pub fn to_chrome_json(&self) -> String {
        let mut out = String::from("{\"traceEvents\":[");
        for (i, e) in self.events.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let name = e.name.replace('\\', "\\\\").replace('"', "\\\"");
            write!(
                out,
                "{{\"name\":\"{name}\",\"cat\":\"system\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3}}}",
                e.thread, e.start_us, e.duration_us
            )
            .expect("writing to a String cannot fail");
        }
        out.push_str("],\"displayTimeUnit\":\"ms\"}");
        out
    }

    /// Total system time over the run's wall time: how much of the run's duration, summed
    /// over threads, was spent inside systems (below 1 when executor overhead dominates).
    pub fn parallelism(&self) -> f64 {
        if self.wall_us > 0.0 {
            self.busy_us() / self.wall_us
        } else {
            0.0
        }
    }

    /// Average number of systems running at once, counted over the time when at least one
    /// was running: total system time over the length of the union of their intervals.
    pub fn concurrency(&self) -> f64 {
        let mut spans: Vec<(f64, f64)> = self
            .events
            .iter()
            .map(|e| (e.start_us, e.start_us + e.duration_us))
            .collect();
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut covered = 0.0;
        let mut current: Option<(f64, f64)> = None;
        for (start, end) in spans {
            current = match current {
                Some((s, e)) if start <= e => Some((s, e.max(end))),
                Some((s, e)) => {
                    covered += e - s;
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        if let Some((s, e)) = current {
            covered += e - s;
        }
        if covered > 0.0 {
            self.busy_us() / covered
        } else {
            0.0
        }
    }

    fn busy_us(&self) -> f64 {
        self.events.iter().map(|e| e.duration_us).sum()
    }
}

/// The thread id used in traces.
pub(crate) fn thread_id() -> usize {
    rayon::current_thread_index().map_or(0, |i| i + 1)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn event(start_us: f64, duration_us: f64) -> TraceEvent {
        TraceEvent {
            name: "s".into(),
            thread: 0,
            start_us,
            duration_us,
        }
    }

    #[test]
    fn concurrency_counts_overlap_only_while_systems_run() {
        // Two systems overlapping fully for 10 us, then one alone for 10 us, in a 40 us run.
        let trace = Trace {
            events: vec![event(0.0, 10.0), event(0.0, 10.0), event(20.0, 10.0)],
            wall_us: 40.0,
        };
        assert!((trace.concurrency() - 1.5).abs() < 1e-9);
        assert!((trace.parallelism() - 0.75).abs() < 1e-9);
        assert_eq!(Trace::default().concurrency(), 0.0);
    }
}
