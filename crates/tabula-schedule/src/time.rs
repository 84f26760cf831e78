//! [`Time`]: the game clock a frame advances, with its fixed-timestep view.
//!
//! The clock is virtual: it moves only when a frame says by how much
//! ([`run_frame(delta)`](crate::WorldFrame::run_frame)), scaled by its relative speed and
//! stopped while paused. Nothing here reads the wall clock, so a test or a replay that feeds
//! the same deltas gets the same times, the same number of fixed steps, and the same world.
//! A real-time loop measures its frames with [`FrameTimer`] (or a window library's clock)
//! and passes the result in.

use std::time::{Duration, Instant};

/// The fixed step a new [`Time`] uses: 1/64 s (15.625 ms, exact in nanoseconds).
pub const DEFAULT_FIXED_STEP: Duration = Duration::from_nanos(15_625_000);

/// The most fixed steps one frame runs by default (see [`Time::set_max_fixed_steps`]).
pub const DEFAULT_MAX_FIXED_STEPS: u32 = 8;

/// The game clock, a resource the frame keeps up to date (systems read it as `Res<Time>`).
///
/// In the frame's schedules it shows the frame: [`delta`](Self::delta) is this frame's
/// (virtual) time and [`elapsed`](Self::elapsed) the sum of all frames'. While the
/// `FixedUpdate` schedule runs it shows the fixed clock instead: `delta` is the fixed step
/// and `elapsed` the fixed steps' total, so one system reads the right delta in either place
/// ([`is_fixed_step`](Self::is_fixed_step) says which).
///
/// Fixed steps come from an accumulator: each frame adds its delta, and every whole step in
/// it runs `FixedUpdate` once (0, 1 or more times a frame); the rest waits for the next
/// frame ([`overstep`](Self::overstep), for interpolating what is drawn). A frame runs at
/// most [`max_fixed_steps`](Self::max_fixed_steps) steps: when the game falls behind, by
/// more than that, the time it cannot catch up on is dropped (counted by
/// [`dropped`](Self::dropped)) rather than carried into the next frame, which would then
/// run even more steps, take even longer, and fall further behind (the spiral of death).
/// The game then runs slower than real time instead of freezing.
///
/// `Time` is not in the prelude, where it would clash with the `Time` many games define
/// (both imported by `*`): import it as `tabula::schedule::Time`.
///
/// ```
/// use std::time::Duration;
/// use tabula::prelude::*;
/// use tabula::schedule::Time;
///
/// #[derive(Default)]
/// struct Steps(u32);
/// fn physics(time: Res<Time>, mut steps: ResMut<Steps>) {
///     assert_eq!(time.delta(), Duration::from_millis(10)); // the fixed step
///     steps.0 += 1;
/// }
///
/// let mut world = World::new();
/// world.init_resource::<Steps>();
/// let mut time = Time::default();
/// time.set_fixed_step(Duration::from_millis(10));
/// world.insert_resource(time);
/// world.add_systems(FixedUpdate, physics);
/// world.run_frame(Duration::from_millis(25)); // two steps, 5 ms left over
/// world.run_frame(Duration::from_millis(5)); // one more
/// assert_eq!(world.resource::<Steps>().unwrap().0, 3);
/// let time = world.resource::<Time>().unwrap();
/// assert_eq!(time.elapsed(), Duration::from_millis(30));
/// assert_eq!(time.overstep(), Duration::ZERO);
/// ```
#[derive(Clone, Debug)]
pub struct Time {
    /// What systems read now: the frame's clock, or the fixed one during a fixed step.
    delta: Duration,
    elapsed: Duration,
    /// The frame's clock, kept while the fixed view is shown.
    frame_delta: Duration,
    frame_elapsed: Duration,
    frames: u64,
    relative_speed: f64,
    paused: bool,
    fixed_step: Duration,
    accumulator: Duration,
    fixed_elapsed: Duration,
    fixed_steps: u64,
    max_fixed_steps: u32,
    dropped: Duration,
    in_fixed_step: bool,
}

impl Default for Time {
    fn default() -> Self {
        Self {
            delta: Duration::ZERO,
            elapsed: Duration::ZERO,
            frame_delta: Duration::ZERO,
            frame_elapsed: Duration::ZERO,
            frames: 0,
            relative_speed: 1.0,
            paused: false,
            fixed_step: DEFAULT_FIXED_STEP,
            accumulator: Duration::ZERO,
            fixed_elapsed: Duration::ZERO,
            fixed_steps: 0,
            max_fixed_steps: DEFAULT_MAX_FIXED_STEPS,
            dropped: Duration::ZERO,
            in_fixed_step: false,
        }
    }
}

impl Time {
    /// The time this frame covers (the fixed step, during a fixed step).
    pub fn delta(&self) -> Duration {
        self.delta
    }

    /// [`delta`](Self::delta) in seconds.
    pub fn delta_secs(&self) -> f32 {
        self.delta.as_secs_f32()
    }

    /// The time since the first frame, up to the end of this one (during a fixed step: the
    /// fixed steps run so far, this one included).
    pub fn elapsed(&self) -> Duration {
        self.elapsed
    }

    /// [`elapsed`](Self::elapsed) in seconds.
    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }

    /// How many frames have advanced the clock (this one included).
    pub fn frame_count(&self) -> u64 {
        self.frames
    }

    /// True while the `FixedUpdate` schedule runs, when the clock shows the fixed step.
    pub fn is_fixed_step(&self) -> bool {
        self.in_fixed_step
    }

    /// The fixed step.
    pub fn fixed_step(&self) -> Duration {
        self.fixed_step
    }

    /// Sets the fixed step (from the next frame on).
    ///
    /// # Panics
    /// When `step` is zero: a fixed schedule would have to run without end.
    pub fn set_fixed_step(&mut self, step: Duration) -> &mut Self {
        assert!(
            !step.is_zero(),
            "Time::set_fixed_step: the fixed step must be longer than zero"
        );
        self.fixed_step = step;
        self
    }

    /// Fixed steps run since the first frame.
    pub fn fixed_steps(&self) -> u64 {
        self.fixed_steps
    }

    /// The accumulated time not yet run as a fixed step (less than one step after a frame).
    pub fn overstep(&self) -> Duration {
        self.accumulator
    }

    /// [`overstep`](Self::overstep) as a fraction of the fixed step, in `0.0..1.0` after a
    /// frame: how far to interpolate between the last two fixed states when drawing.
    pub fn overstep_fraction(&self) -> f64 {
        self.accumulator.as_secs_f64() / self.fixed_step.as_secs_f64()
    }

    /// The most fixed steps one frame runs.
    pub fn max_fixed_steps(&self) -> u32 {
        self.max_fixed_steps
    }

    /// Sets the most fixed steps one frame runs (see the [type docs](Self) on falling
    /// behind). `0` turns the fixed schedule off: every frame's time is dropped.
    pub fn set_max_fixed_steps(&mut self, steps: u32) -> &mut Self {
        self.max_fixed_steps = steps;
        self
    }

    /// The time the step cap dropped since the first frame: how far the fixed clock is
    /// behind the frame clock.
    pub fn dropped(&self) -> Duration {
        self.dropped
    }

    /// How fast the clock runs against the deltas it is given (1.0 by default).
    pub fn relative_speed(&self) -> f64 {
        self.relative_speed
    }

    /// Runs the clock faster or slower: each frame's delta is multiplied by `speed`.
    ///
    /// # Panics
    /// When `speed` is negative or not finite.
    pub fn set_relative_speed(&mut self, speed: f64) -> &mut Self {
        assert!(
            speed.is_finite() && speed >= 0.0,
            "Time::set_relative_speed: the speed must be finite and not negative, got {speed}"
        );
        self.relative_speed = speed;
        self
    }

    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Stops the clock: frames still run, with a zero delta and no fixed steps.
    pub fn pause(&mut self) {
        self.paused = true;
    }

    /// Starts the clock again.
    pub fn unpause(&mut self) {
        self.paused = false;
    }

    /// Advances the frame clock by `delta` (scaled, or zero while paused) and returns how
    /// many fixed steps are due this frame, after the step cap.
    pub(crate) fn advance(&mut self, delta: Duration) -> u32 {
        let delta = if self.paused {
            Duration::ZERO
        } else if self.relative_speed == 1.0 {
            delta
        } else {
            delta.mul_f64(self.relative_speed)
        };
        self.frames += 1;
        self.frame_delta = delta;
        self.frame_elapsed += delta;
        self.delta = delta;
        self.elapsed = self.frame_elapsed;
        self.accumulator += delta;
        let due = self.accumulator.as_nanos() / self.fixed_step.as_nanos();
        let steps = due.min(u128::from(self.max_fixed_steps)) as u32;
        if due > u128::from(steps) {
            // Keep the part of a step that was accumulating, drop the whole steps.
            let kept = self.accumulator.as_nanos() % self.fixed_step.as_nanos();
            let ran = self.fixed_step * steps;
            let lost = self.accumulator - ran - Duration::from_nanos(kept as u64);
            self.dropped += lost;
            self.accumulator -= lost;
            tracing::debug!(
                "fixed timestep: {due} steps were due this frame, the cap is {steps}; {lost:?} dropped"
            );
        }
        steps
    }

    /// Shows the fixed clock for one step, taking the step from the accumulator.
    pub(crate) fn begin_fixed_step(&mut self) {
        self.accumulator -= self.fixed_step;
        self.fixed_elapsed += self.fixed_step;
        self.fixed_steps += 1;
        self.delta = self.fixed_step;
        self.elapsed = self.fixed_elapsed;
        self.in_fixed_step = true;
    }

    /// Shows the frame clock again.
    pub(crate) fn end_fixed_step(&mut self) {
        self.delta = self.frame_delta;
        self.elapsed = self.frame_elapsed;
        self.in_fixed_step = false;
    }
}

/// Measures real frame times for a live loop: [`tick`](Self::tick) returns the time since
/// the previous tick (zero on the first). The only place tabula reads the wall clock, and
/// only when called; tests and replays pass their own deltas to
/// [`run_frame`](crate::WorldFrame::run_frame) instead.
///
/// ```no_run
/// use tabula::prelude::*;
///
/// let mut world = World::new();
/// let mut timer = FrameTimer::new();
/// loop {
///     world.run_frame(timer.tick());
///     // draw, sleep until the next frame, ...
/// }
/// ```
#[derive(Debug, Default)]
pub struct FrameTimer {
    last: Option<Instant>,
}

impl FrameTimer {
    /// A timer that has not ticked yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The time since the last tick (zero on the first).
    pub fn tick(&mut self) -> Duration {
        let now = Instant::now();
        let delta = self.last.map_or(Duration::ZERO, |last| now - last);
        self.last = Some(now);
        delta
    }
}
