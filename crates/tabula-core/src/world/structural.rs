//! Inserting and removing components: moving a row along a cached archetype edge.

use crate::archetype::{Archetype, ArchetypeId, pair_mut};
use crate::bundle::Bundle;
use crate::change::Tick;
use crate::component::Component;
use crate::entity::{Entities, Entity, EntityLocation};
use crate::error::EntityError;
use crate::hierarchy::{Children, Parent, hierarchy_refused, in_hierarchy};
use crate::storage::Table;

use super::World;

impl World {
    /// Adds the components of `bundle` to `entity`. Components it already has are replaced
    /// and the old values dropped.
    ///
    /// ```
    /// let mut world = tabula_core::World::new();
    /// let e = world.spawn((1u32,));
    /// world.insert(e, (2u32, "tag"))?;
    /// assert_eq!(world.get::<u32>(e), Ok(&2));
    /// assert_eq!(world.get::<&str>(e), Ok(&"tag"));
    /// # Ok::<(), tabula_core::EntityError>(())
    /// ```
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] when `entity` is not alive, and
    /// [`EntityError::HierarchyComponent`] for a bundle holding a [`Parent`](crate::Parent)
    /// or [`Children`](crate::Children): those change only through
    /// [`set_parent`](Self::set_parent) and the other hierarchy methods, which keep both
    /// sides of the relation in step.
    // Always inlined: the hot structural path. With several callers (the batch fallbacks)
    // the compiler would keep one out-of-line copy, about 25 more instructions per call.
    #[inline(always)]
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), EntityError> {
        // A constant once inlined: free for every other bundle.
        if in_hierarchy::<B>() {
            return Err(hierarchy_refused::<B>(entity));
        }
        self.insert_raw(entity, bundle)
    }

    /// [`insert`](Self::insert) without the hierarchy check, for the hierarchy methods.
    #[inline(always)]
    pub(crate) fn insert_raw<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let bundle_id = self.bundles.id_of::<B>(&mut self.components);
        let edge = self.archetypes.insert_edge(
            &self.components,
            location.archetype,
            &self.bundles.infos[bundle_id],
        );
        let tick = super::tick_now(&mut self.change_tick);
        // SAFETY: `insert_edge` returns the index of an existing edge (edges are never removed).
        let edge = unsafe { self.archetypes.insert_edges.get_unchecked(edge) };

        if edge.target == location.archetype {
            // Every component is already there: replace in place.
            let table = &mut self.archetypes.archetypes[edge.target.index()].table;
            let row = location.row as usize;
            // SAFETY: `row` is live, every field replaces an initialised value of its type
            // (`replaced` is all true for a self-edge) in distinct columns.
            unsafe { bundle.write_or_replace(table, &edge.bundle_columns, &edge.replaced, row, tick) };
            return Ok(());
        }

        // SAFETY: `move_map` maps every source column to the target column of the same
        // component (the target's set is a superset); the target columns it leaves empty are
        // exactly the fields with `replaced == false`, which `write_or_replace` fills next,
        // and writing cannot panic.
        let (_, dst, dst_row) = unsafe {
            move_entity(
                &mut self.archetypes.archetypes,
                &mut self.entities,
                entity,
                location,
                edge.target,
                &edge.move_map,
                tick,
            )
        };
        // SAFETY: see above; old values (if any) are dropped only after every field is written.
        unsafe { bundle.write_or_replace(dst, &edge.bundle_columns, &edge.replaced, dst_row, tick) };
        Ok(())
    }

    /// Adds one component; shorthand for `insert(entity, (component,))`.
    pub fn insert_one<T: Component>(&mut self, entity: Entity, component: T) -> Result<(), EntityError> {
        self.insert(entity, (component,))
    }

    /// Removes the components of bundle type `B` from `entity` and returns them.
    ///
    /// If the entity lacks any of them, nothing is removed and the error names the first
    /// missing component.
    ///
    /// Removing a [`Parent`](crate::Parent) also takes the entity out of its parent's
    /// [`Children`](crate::Children), and removing `Children` makes every listed child a root,
    /// as [`remove_parent`](Self::remove_parent) and `despawn` do.
    ///
    /// ```
    /// let mut world = tabula_core::World::new();
    /// let e = world.spawn((1u32, 2.5f64));
    /// assert_eq!(world.remove::<(f64,)>(e), Ok((2.5,)));
    /// assert!(world.remove::<(f64,)>(e).is_err());
    /// assert_eq!(world.get::<u32>(e), Ok(&1));
    /// ```
    // Always inlined, as `insert`.
    #[inline(always)]
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, EntityError> {
        let removed = self.remove_raw::<B>(entity)?;
        // A constant once inlined, as in `insert`.
        if in_hierarchy::<B>() {
            self.detach_removed(
                entity,
                removed.field::<Parent>().copied(),
                removed.field::<Children>(),
            );
        }
        Ok(removed)
    }

    /// [`remove`](Self::remove) without the hierarchy bookkeeping, for the hierarchy methods.
    #[inline(always)]
    pub(crate) fn remove_raw<B: Bundle>(&mut self, entity: Entity) -> Result<B, EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let bundle_id = self.bundles.id_of::<B>(&mut self.components);
        let edge = self.archetypes.remove_edge(
            &self.components,
            location.archetype,
            &self.bundles.infos[bundle_id],
        );
        // SAFETY: `remove_edge` returns the index of an existing edge (edges are never removed).
        let edge = unsafe { self.archetypes.remove_edges.get_unchecked(edge) };
        if let Some(component) = edge.missing {
            return Err(EntityError::MissingComponent { entity, component });
        }
        if edge.target == location.archetype {
            // Only the empty bundle removes nothing and stays put.
            // SAFETY: `B` has no fields, so nothing is read.
            return Ok(unsafe {
                B::take_removed(&mut self.archetypes.archetypes[edge.target.index()].table, &[])
            });
        }

        let now = super::tick_now(&mut self.change_tick);
        // SAFETY: the target's set is the source's minus `B`, so `move_map` fills every target
        // column; `B`'s columns are unmapped and wait past the source's end.
        let (src, _, _) = unsafe {
            move_entity(
                &mut self.archetypes.archetypes,
                &mut self.entities,
                entity,
                location,
                edge.target,
                &edge.move_map,
                now,
            )
        };
        // SAFETY: `bundle_columns` are the source columns of `B`'s fields, each unmapped by
        // `move_map`, so their removed values wait past the end; each is read once.
        Ok(unsafe { B::take_removed(src, &edge.bundle_columns) })
    }

    /// Removes one component and returns it; shorthand for `remove::<(T,)>`.
    pub fn remove_one<T: Component>(&mut self, entity: Entity) -> Result<T, EntityError> {
        self.remove::<(T,)>(entity).map(|(value,)| value)
    }
}

/// Moves `entity`'s row from `location` to archetype `target` along `move_map` and records
/// the new locations of `entity` and of the entity that filled its old row. Returns the
/// source table, the target table and the entity's new row there.
///
/// Always inlined: it is the body of every insert and remove, and a call would spill the
/// half-dozen values both sides keep in registers.
///
/// # Safety
/// `target != location.archetype`; `location` is `entity`'s live location; `move_map` has one
/// entry per source column, naming a target column of the same component type (all distinct)
/// or `NO_COLUMN`. The caller must fill every target column the map leaves empty at the
/// returned row, with nothing in between that can panic, and must read or drop every value
/// left in an unmapped source column before that table changes again.
#[inline(always)]
unsafe fn move_entity<'a>(
    archetypes: &'a mut [Archetype],
    entities: &mut Entities,
    entity: Entity,
    location: EntityLocation,
    target: ArchetypeId,
    move_map: &[u32],
    now: Tick,
) -> (&'a mut Table, &'a mut Table, usize) {
    let row = location.row as usize;
    let (src, dst) = pair_mut(archetypes, location.archetype, target);
    // SAFETY: `push_uninit` reserves before it records anything (the only step that can
    // fail); the map satisfies `move_row`'s contract (the caller's), and the caller fills the
    // rest of the row.
    let dst_row = unsafe {
        let dst_row = dst.table.push_uninit(entity);
        src.table.move_row(row, &mut dst.table, dst_row, move_map, now);
        dst_row
    };
    // SAFETY: `moved` is listed in a table, so it is live; `entity` is live (the caller's
    // contract). Both locations are recorded before any value is dropped.
    unsafe {
        if let Some(&moved) = src.table.entities().get(row) {
            entities.set_location_unchecked(moved, location);
        }
        entities.set_location_unchecked(
            entity,
            EntityLocation {
                archetype: target,
                row: dst_row as u32,
            },
        );
    }
    (&mut src.table, &mut dst.table, dst_row)
}
