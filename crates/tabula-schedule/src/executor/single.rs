//! The single-threaded executor: the schedule's order, on the calling thread.

use tabula_core::{UnsafeWorldCell, World};

use super::{Node, RunContext, SystemSlot, apply_deferred_node, apply_pending, run_system, traced_apply};
use crate::graph::Built;
use crate::skipped::SkippedCommand;
use crate::trace::TraceKind;

/// Runs every node in `built.order`.
pub(crate) fn run(
    slots: &mut [SystemSlot],
    nodes: &[Node],
    built: &Built,
    world: &mut World,
    ctx: RunContext<'_>,
    errors: &mut Vec<SkippedCommand>,
) {
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
            Node::System(index) => {
                // SAFETY: `&mut World` grants every access, and the schedule initialised the
                // slot with this world.
                unsafe { run_system(&mut slots[index], index, UnsafeWorldCell::new_mutable(world), ctx) }
            }
            Node::Sync => traced_apply(ctx, TraceKind::Sync, None, || {
                apply_pending(slots, &built.apply_order, world, errors, ctx.command_errors)
            }),
        }
    }
}
