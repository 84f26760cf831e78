//! Spawning a set of component values chosen at run time in one move: a [`StagedRow`].
//!
//! A [template](crate::template) gives an entity components whose types are known only
//! from its list of providers. Inserting them one by one would move the entity's row once
//! per component; instead every value is made first (user code — `Clone`, `Default`, a
//! closure — which may panic while nothing in the world has changed), then the archetype of
//! the whole set is found once and the entity moves into it once, each value written
//! straight into its column.

use smallvec::SmallVec;

use super::World;
use super::hooks::{ComponentList, HookKind};
use crate::archetype::pair_mut_unchecked;
use crate::change::Tick;
use crate::component::{Component, ComponentId, Components};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::{ArchetypeId, EntityLocation};
use crate::storage::Column;

/// One staged value, its type erased.
trait StagedValue: Send {
    /// The value's component id in `components`, registering its type.
    fn register(&self, components: &mut Components) -> ComponentId;
    /// The value's `TypeId`.
    fn type_id(&self) -> std::any::TypeId;
    /// Moves the value into `column` at `row`, stamping its ticks.
    ///
    /// # Safety
    /// `column` stores this value's type; `row` is below its capacity and uninitialised.
    unsafe fn write(self: Box<Self>, column: &mut Column, row: usize, tick: Tick);
}

struct Staged<T>(T);

impl<T: Component> StagedValue for Staged<T> {
    fn register(&self, components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn type_id(&self) -> std::any::TypeId {
        std::any::TypeId::of::<T>()
    }
    unsafe fn write(self: Box<Self>, column: &mut Column, row: usize, tick: Tick) {
        // SAFETY: the caller's contract.
        unsafe { column.write_value::<T>(row, self.0, tick) }
    }
}

/// Component values made ahead of a spawn, at most one per type, to be written in one move
/// by [`World::spawn_staged`].
#[derive(Default)]
pub(crate) struct StagedRow {
    values: Vec<Box<dyn StagedValue>>,
}

impl StagedRow {
    /// Adds `value`, replacing a value of the same type staged before.
    pub(crate) fn push<T: Component>(&mut self, value: T) {
        let value: Box<dyn StagedValue> = Box::new(Staged(value));
        let type_id = std::any::TypeId::of::<T>();
        match self.values.iter_mut().find(|v| v.type_id() == type_id) {
            Some(slot) => *slot = value,
            None => self.values.push(value),
        }
    }
}

impl World {
    /// Gives `entity`, live with no components (just spawned empty, or a flushed
    /// reservation), the values of `row` in one move into the archetype of their set, then
    /// runs their `on_add` and `on_insert` hooks (as a spawn of a bundle does) and applies
    /// the hooks' commands.
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `entity` is not alive,
    /// [`EntityError::AlreadySpawned`] when it has components.
    pub(crate) fn spawn_staged(&mut self, entity: Entity, row: StagedRow) -> Result<(), EntityError> {
        self.flush();
        let location = self.location(entity)?;
        if location.archetype != ArchetypeId::EMPTY {
            return Err(EntityError::AlreadySpawned(entity));
        }
        let ids: SmallVec<[ComponentId; 8]> = (row.values.iter())
            .map(|value| value.register(&mut self.components))
            .collect();
        let mut sorted = ComponentList::from(&ids[..]);
        sorted.sort_unstable();
        debug_assert!(sorted.windows(2).all(|w| w[0] < w[1]), "one value per type");
        if sorted.is_empty() {
            return Ok(());
        }
        let target = self.archetypes.get_or_create(&self.components, &sorted);
        let archetype = &self.archetypes.archetypes.all()[target.index()];
        let columns: SmallVec<[usize; 8]> = (ids.iter())
            .map(|&id| {
                archetype
                    .column_of(id)
                    .expect("the archetype holds every staged type")
            })
            .collect();
        let tick = super::tick_now(&mut self.change_tick);
        let values = row.values;
        let source_row = location.row as usize;
        // SAFETY: `location` is the entity's live location in the empty archetype and
        // `target` differs from it (the set is not empty); both exist (archetypes are never
        // removed).
        let (src, dst) =
            unsafe { pair_mut_unchecked(self.archetypes.archetypes.all_mut(), location.archetype, target) };
        // SAFETY: `push_uninit` reserves before it records anything (the only step that can
        // fail) and returns a row whose every slot is empty; the loop fills each column of
        // the target exactly once, since the staged types are distinct, cover the target's
        // set, and `columns[i]` is the target's column of value `i`'s type. Writing only
        // moves values (no user code: they were made before), so nothing can panic between
        // the push and the last write. The empty archetype has no columns, so its move map is
        // empty and `move_row` only takes the entity's id out of its list, recording the
        // locations of both entities before anything else can run.
        unsafe {
            let dst_row = dst.table.push_uninit(entity);
            for (value, column) in values.into_iter().zip(columns) {
                value.write(dst.table.column_unchecked_mut(column), dst_row, tick);
            }
            let entities = &mut self.entities;
            src.table
                .move_row(source_row, &mut dst.table, dst_row, &[], tick, |moved| {
                    entities.record_move(
                        moved,
                        location,
                        entity,
                        EntityLocation {
                            archetype: target,
                            row: dst_row as u32,
                        },
                    )
                });
        }
        self.run_hooks(HookKind::Add, entity, &sorted);
        self.run_hooks(HookKind::Insert, entity, &sorted);
        self.apply_hook_commands();
        Ok(())
    }
}
