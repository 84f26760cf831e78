//! Opt-in run traces: which system ran on which thread, when, for how long — exported as
//! Chrome trace-event JSON (open it in Perfetto or `chrome://tracing`).

use std::fmt::Write;

/// One system execution in a traced run.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// The system's name.
    pub name: String,
    /// 0 for the thread that called `run`, `1 + rayon index` for pool threads.
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

    /// Average number of systems running at once: total system time over wall time.
    pub fn parallelism(&self) -> f64 {
        let busy: f64 = self.events.iter().map(|e| e.duration_us).sum();
        if self.wall_us > 0.0 {
            busy / self.wall_us
        } else {
            0.0
        }
    }
}

/// The thread id used in traces.
pub(crate) fn thread_id() -> usize {
    rayon::current_thread_index().map_or(0, |i| i + 1)
}
