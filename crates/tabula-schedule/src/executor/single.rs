//! The single-threaded executor: the schedule's order, on the calling thread.

use tabula_core::{UnsafeWorldCell, World};

use super::ticks::TickLayout;
use super::{Node, RunContext, SystemSlot, apply_deferred_node, apply_pending, run_system, traced_apply};
use crate::graph::Built;
use crate::skipped::SkippedCommand;
use crate::trace::TraceKind;

/// Runs every node in `built.order`, each system at its tick from `ticks`.
pub(crate) fn run(
    slots: &mut [SystemSlot],
    nodes: &[Node],
    built: &Built,
    ticks: &TickLayout,
    world: &mut World,
    ctx: RunContext<'_>,
    errors: &mut Vec<SkippedCommand>,
) {
    // The first tick of the segment being run (see `ticks`).
    let mut segment = world.reserve_change_ticks(ticks.first_segment());
    for &node in &built.order {
        match nodes[node] {
            Node::System(index) if slots[index].is_apply_deferred => {
                traced_apply(ctx, TraceKind::ApplyDeferred, Some(index), || {
                    apply_deferred_node(
                        slots,
                        index,
                        &built.apply_order,
                        world,
                        errors,
                        ctx.command_errors,
                    )
                });
            }
            Node::System(index) if slots[index].access.is_exclusive() => {
                // SAFETY: `&mut World` grants every access, and the schedule initialised the
                // slot with this world.
                unsafe { run_system(&mut slots[index], index, UnsafeWorldCell::new_mutable(world), ctx) }
            }
            Node::System(index) => {
                let cell = UnsafeWorldCell::new_mutable(world).with_run_tick(segment + ticks.offset(node));
                // SAFETY: as above.
                unsafe { run_system(&mut slots[index], index, cell, ctx) };
                continue;
            }
            Node::Sync => traced_apply(ctx, TraceKind::Sync, None, || {
                apply_pending(slots, &built.apply_order, world, errors, ctx.command_errors)
            }),
        }
        // An exclusive node ends a segment: the next one's ticks come after every tick it
        // took.
        segment = world.reserve_change_ticks(ticks.segment_after(node));
    }
}
