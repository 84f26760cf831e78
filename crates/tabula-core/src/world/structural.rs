//! Inserting and removing components: moving a row along a cached archetype edge.

use crate::archetype::pair_mut;
use crate::bundle::Bundle;
use crate::component::Component;
use crate::entity::{Entity, EntityLocation};
use crate::error::EntityError;

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
    pub fn insert<B: Bundle>(&mut self, entity: Entity, bundle: B) -> Result<(), EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let bundle_id = self.bundles.id_of::<B>(&mut self.components);
        let edge = self.archetypes.insert_edge(
            &self.components,
            location.archetype,
            &self.bundles.infos[bundle_id],
        );
        let tick = self.change_tick();
        let edge = &self.archetypes.insert_edges[edge];
        let row = location.row as usize;

        if edge.target == location.archetype {
            // Every component is already there: replace in place.
            let table = &mut self.archetypes.archetypes[edge.target.index()].table;
            // SAFETY: `row` is live, every field replaces an initialised value of its type
            // (`replaced` is all true for a self-edge) in distinct columns.
            unsafe { bundle.write_or_replace(table, &edge.bundle_columns, &edge.replaced, row, tick) };
            return Ok(());
        }

        let (src, dst) = pair_mut(&mut self.archetypes.archetypes, location.archetype, edge.target);
        dst.table.reserve(1);
        let dst_row = dst.table.len();
        // SAFETY: room is reserved, so `push_uninit` returns `dst_row` without panicking.
        // `move_map` maps every source column to the target column of the same component (the
        // target's set is a superset); the fields then fill exactly the target columns the
        // move left empty (`replaced == false`) or replace moved values (`replaced == true`).
        // Nothing between the push and the writes can panic.
        unsafe {
            dst.table.push_uninit(entity);
            src.table.move_row(row, &mut dst.table, dst_row, &edge.move_map);
        }
        if let Some(&moved) = src.table.entities().get(row) {
            self.entities.set_location(moved, location);
        }
        self.entities.set_location(
            entity,
            EntityLocation {
                archetype: edge.target,
                row: dst_row as u32,
            },
        );
        // SAFETY: see above; old values (if any) are dropped only after every field is written.
        unsafe {
            bundle.write_or_replace(
                &mut dst.table,
                &edge.bundle_columns,
                &edge.replaced,
                dst_row,
                tick,
            )
        };
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
    /// ```
    /// let mut world = tabula_core::World::new();
    /// let e = world.spawn((1u32, 2.5f64));
    /// assert_eq!(world.remove::<(f64,)>(e), Ok((2.5,)));
    /// assert!(world.remove::<(f64,)>(e).is_err());
    /// assert_eq!(world.get::<u32>(e), Ok(&1));
    /// ```
    pub fn remove<B: Bundle>(&mut self, entity: Entity) -> Result<B, EntityError> {
        self.flush();
        let location = self.location(entity)?;
        let bundle_id = self.bundles.id_of::<B>(&mut self.components);
        let edge = self.archetypes.remove_edge(
            &self.components,
            location.archetype,
            &self.bundles.infos[bundle_id],
        );
        let edge = &self.archetypes.remove_edges[edge];
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

        let row = location.row as usize;
        let (src, dst) = pair_mut(&mut self.archetypes.archetypes, location.archetype, edge.target);
        dst.table.reserve(1);
        let dst_row = dst.table.len();
        // SAFETY: room is reserved, so `push_uninit` returns `dst_row` without panicking; the
        // target's set is the source's minus `B`, and `move_map` fills every target column.
        unsafe {
            dst.table.push_uninit(entity);
            src.table.move_row(row, &mut dst.table, dst_row, &edge.move_map);
        }
        if let Some(&moved) = src.table.entities().get(row) {
            self.entities.set_location(moved, location);
        }
        self.entities.set_location(
            entity,
            EntityLocation {
                archetype: edge.target,
                row: dst_row as u32,
            },
        );
        // SAFETY: `bundle_columns` are the source columns of `B`'s fields, each unmapped by
        // `move_map`, so their removed values wait past the end; each is read once.
        Ok(unsafe { B::take_removed(&mut src.table, &edge.bundle_columns) })
    }

    /// Removes one component and returns it; shorthand for `remove::<(T,)>`.
    pub fn remove_one<T: Component>(&mut self, entity: Entity) -> Result<T, EntityError> {
        self.remove::<(T,)>(entity).map(|(value,)| value)
    }
}
