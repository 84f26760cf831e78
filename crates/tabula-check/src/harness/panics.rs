//! Provoked panics: the panic hook that keeps them quiet, telling them from real failures
//! (only an [`ExpectedPanic`] payload is provoked; anything else is re-raised), and running a
//! call with the [`Bomb`](crate::Bomb) fuse armed, checking that it panicked exactly when the
//! model says it must.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Once;

use tabula::World;

use super::Harness;
use crate::components::ExpectedPanic;

/// Installs (once per process) a panic hook that stays silent for the harness's provoked
/// panics ([`ExpectedPanic`] payloads) and hands every other panic to the hook that was
/// installed before (the default one, or libFuzzer's, which aborts).
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<ExpectedPanic>().is_none() {
                previous(info);
            }
        }));
    });
}

/// Re-raises `payload` unless it is a provoked panic.
pub(super) fn expect_provoked(payload: Box<dyn Any + Send>) {
    if payload.downcast_ref::<ExpectedPanic>().is_none() {
        resume_unwind(payload);
    }
}

impl Harness {
    /// Runs `f` on the first world with the bomb fuse armed when `armed`; checks that it
    /// panicked exactly when `expect_panic` (with a provoked panic) and returns its result
    /// when it did not.
    pub(super) fn guarded<R>(
        &mut self,
        armed: bool,
        expect_panic: bool,
        what: &str,
        f: impl FnOnce(&mut World) -> R,
    ) -> Option<R> {
        if armed {
            self.side.shared.arm();
        }
        let result = catch_unwind(AssertUnwindSafe(|| f(&mut self.side.world)));
        let fuse_left = self.side.shared.disarm();
        match result {
            Ok(value) => {
                assert!(!expect_panic, "{what}: a Bomb should have gone off");
                assert!(
                    !armed || fuse_left,
                    "{what}: a Bomb went off without a panic reaching the caller"
                );
                Some(value)
            }
            Err(payload) => {
                expect_provoked(payload);
                assert!(expect_panic, "{what}: panicked, but the model drops no Bomb");
                self.stats.panics += 1;
                None
            }
        }
    }
}
