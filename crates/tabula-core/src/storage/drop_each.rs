//! Dropping many values so that one panicking `Drop` leaks none of the others.

/// Calls `drop_one` on every item. If one call panics, the remaining items are still passed
/// to `drop_one` while the panic unwinds (a second panic then aborts, as in std's
/// containers), so a panicking component `Drop` does not leak the values after it.
///
/// Nesting works: an inner `drop_each` over a column's rows finishes its rows, then the
/// outer one over the columns carries on.
pub(crate) fn drop_each<I: Iterator>(items: I, drop_one: impl FnMut(I::Item)) {
    /// Holds the items not yet dropped; dropped itself during an unwind, it drops them.
    struct Rest<I: Iterator, F: FnMut(I::Item)> {
        items: I,
        drop_one: F,
    }

    impl<I: Iterator, F: FnMut(I::Item)> Drop for Rest<I, F> {
        fn drop(&mut self) {
            // Empty after a normal run; during an unwind, the items after the one whose
            // drop panicked.
            for item in &mut self.items {
                (self.drop_one)(item);
            }
        }
    }

    let mut rest = Rest { items, drop_one };
    // The iterator moves past each item before its drop runs, so an item whose drop panics
    // is not dropped again by `Rest`.
    for item in rest.items.by_ref() {
        (rest.drop_one)(item);
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::drop_each;

    #[test]
    fn a_panic_still_drops_the_rest_once() {
        let mut dropped = Vec::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            drop_each(0..5, |i| {
                dropped.push(i);
                assert_ne!(i, 1, "bomb");
            })
        }));
        assert!(result.is_err());
        assert_eq!(dropped, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn nested_runs_finish_the_inner_run_then_the_outer_one() {
        let mut dropped = Vec::new();
        let result = catch_unwind(AssertUnwindSafe(|| {
            drop_each(0..3, |column| {
                drop_each(0..3, |row| {
                    dropped.push((column, row));
                    assert_ne!((column, row), (0, 1), "bomb");
                })
            })
        }));
        assert!(result.is_err());
        let all: Vec<_> = (0..3).flat_map(|c| (0..3).map(move |r| (c, r))).collect();
        assert_eq!(dropped, all);
    }
}
