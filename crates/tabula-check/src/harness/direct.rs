//! Direct calls: the ops that call the first world's own methods (spawns, `spawn_at`,
//! inserts, removes, batches, despawns, writes through `get_mut`, reservations, flushes,
//! `clear`, removal tracking, events), each checked against the model call by call — return
//! values, errors, the values a removal hands back, and (with the fuse armed) the panics.

use std::collections::HashSet;

use tabula::{Entity, World};

use super::Harness;
use super::side::Side;
use crate::components::{
    BOMB, Hp, ModelBundle, ModelComponent, Name, SHAPES, Small, Tracked, Value, Wide, kind_name, shape_kinds,
};

pub(super) fn spawn<B: ModelBundle>(h: &mut Harness, seed: u16) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let entity = h.side.world.spawn(bundle);
    h.side.model.spawn(entity, Harness::row_of(&kinds, &values));
}

pub(super) fn spawn_batch<B: ModelBundle>(h: &mut Harness, count: usize, seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..count)
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.side.shared)).collect();
    h.stats.structural += count as u64;
    h.side.model.flush();
    let ids: Vec<Entity> = if seed & 1 == 0 {
        h.side.world.spawn_batch(bundles).collect()
    } else {
        // Not exact-size: the lower size hint is 0.
        let mut items = bundles.into_iter().map(Some);
        h.side
            .world
            .spawn_batch(std::iter::from_fn(move || items.next().flatten()))
            .collect()
    };
    assert_eq!(ids.len(), count, "spawn_batch yields one id per item");
    for (entity, values) in ids.into_iter().zip(values) {
        h.side.model.spawn(entity, Harness::row_of(&kinds, &values));
    }
}

/// `World::spawn_at`: only a live entity without components (a flushed reservation) takes
/// the bundle.
pub(super) fn spawn_at<B: ModelBundle>(h: &mut Harness, entity: Entity, seed: u16) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.spawn_at(entity, bundle);
    // An observer, or an entity in a pair or the hierarchy, has components besides its row's.
    let expected = match h.side.model.row(entity) {
        None => Err(h.side.absent(entity)),
        Some(row) if row.iter().any(Option::is_some) || h.side.model.extras(entity) != 0 => {
            Err(tabula::EntityError::AlreadySpawned(entity))
        }
        Some(_) => Ok(()),
    };
    assert_eq!(result, expected, "spawn_at {entity:?}");
    if result.is_ok() {
        for (&kind, value) in kinds.iter().zip(values) {
            h.side.model.write(entity, kind, value);
        }
    }
}

/// `World::insert`, or (`entity_mut`) `EntityMut::insert` through `World::entity_mut`.
pub(super) fn insert<B: ModelBundle>(h: &mut Harness, entity: Entity, seed: u16, entity_mut: bool) {
    let kinds = B::kinds();
    let values = Harness::values(&kinds, seed, h.stats.ops);
    let bundle = B::make(&values, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let world = &mut h.side.world;
    let result = if entity_mut {
        world.entity_mut(entity).map(|mut view| {
            view.insert(bundle);
        })
    } else {
        world.insert(entity, bundle)
    };
    if h.side.model.is_live(entity) {
        assert_eq!(result, Ok(()), "insert into {entity:?}");
        for (&kind, value) in kinds.iter().zip(values) {
            h.side.model.write(entity, kind, value);
        }
    } else {
        assert_eq!(result, Err(h.side.absent(entity)), "insert into {entity:?}");
    }
}

pub(super) fn insert_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity], seed: u16) {
    let kinds = B::kinds();
    let values: Vec<Vec<Value>> = (0..targets.len())
        .map(|i| Harness::values(&kinds, seed, h.stats.ops ^ (i as u64) << 40))
        .collect();
    let bundles: Vec<B> = values.iter().map(|v| B::make(v, &h.side.shared)).collect();
    h.stats.structural += targets.len() as u64;
    h.side.model.flush();
    // Every entity is checked first: the first dead one is named and nothing changes.
    let expected = match targets.iter().find(|&&e| !h.side.model.is_live(e)) {
        Some(&dead) => Err(h.side.absent(dead)),
        None => Ok(()),
    };
    let result = h.side.world.insert_batch(targets.iter().copied().zip(bundles));
    assert_eq!(result, expected, "insert_batch into {targets:?}");
    if result.is_ok() {
        // In order, so an entity listed twice keeps its last bundle.
        for (&entity, values) in targets.iter().zip(values) {
            for (&kind, value) in kinds.iter().zip(values) {
                h.side.model.write(entity, kind, value);
            }
        }
    }
}

pub(super) fn remove_batch<B: ModelBundle>(h: &mut Harness, targets: &[Entity]) {
    h.stats.structural += targets.len() as u64;
    h.side.model.flush();
    let kinds = B::kinds();
    // The first bad entity in order decides the error: dead, listed again (its second
    // removal would find nothing), or lacking a field (the first one it lacks).
    let mut seen = HashSet::new();
    let mut expected_error = None;
    for &entity in targets {
        let Some(row) = h.side.model.row(entity) else {
            expected_error = Some(h.side.absent(entity));
            break;
        };
        if !kinds.is_empty() && !seen.insert(entity) {
            expected_error = Some(Side::missing(entity, kinds[0]));
            break;
        }
        if let Some(&absent) = kinds.iter().find(|&&k| row[k].is_none()) {
            expected_error = Some(Side::missing(entity, absent));
            break;
        }
    }
    let result = h.side.world.remove_batch::<B>(targets);
    if let Some(error) = expected_error {
        assert_eq!(result.err(), Some(error), "remove_batch from {targets:?}");
        return;
    }
    let removed = result.unwrap_or_else(|err| panic!("remove_batch from {targets:?}: {err}"));
    assert_eq!(
        removed.len(),
        targets.len(),
        "remove_batch returns one bundle per entity"
    );
    for (&entity, bundle) in targets.iter().zip(removed) {
        let expected: Vec<Value> = (kinds.iter())
            .map(|&k| h.side.model.take(entity, k).expect("checked present"))
            .collect();
        assert_eq!(bundle.values(), expected, "remove_batch: values of {entity:?}");
    }
}

/// `World::insert_one`; with `armed` and a `Bomb`, the `Bomb` it drops (the one it
/// replaces, or itself when the entity is dead) panics.
pub(super) fn insert_one<T: ModelComponent>(h: &mut Harness, entity: Entity, seed: u16, armed: bool) {
    let value = Harness::values(&[T::KIND], seed, h.stats.ops).remove(0);
    let component = T::make(&value, &h.side.shared);
    h.stats.structural += 1;
    h.side.model.flush();
    let armed = armed && T::KIND == BOMB;
    let live = h.side.model.is_live(entity);
    let replaces = h.side.model.row(entity).is_some_and(|row| row[T::KIND].is_some());
    let expect_panic = armed && (!live || replaces);
    let result = h.guarded(armed, expect_panic, "insert_one", |world| {
        world.insert_one(entity, component)
    });
    if let Some(result) = result {
        let expected = if live { Ok(()) } else { Err(h.side.absent(entity)) };
        assert_eq!(
            result,
            expected,
            "insert_one {} into {entity:?}",
            kind_name(T::KIND)
        );
    }
    h.side.model.write(entity, T::KIND, value);
}

/// The shape `shape` (an op's byte) names for a removal from `entity`: with bit 7 set, one
/// the entity holds whole, if it is live.
pub(super) fn removal_shape(h: &Harness, entity: Entity, shape: u8) -> usize {
    let asked = usize::from(shape & 0x7f);
    if shape & 0x80 != 0
        && let Some(row) = h.side.model.row(entity)
    {
        let held: Vec<usize> = (0..SHAPES)
            .filter(|&s| shape_kinds(s).iter().all(|&k| row[k].is_some()))
            .collect();
        // The empty shape is always held.
        return held[asked % held.len()];
    }
    asked % SHAPES
}

pub(super) fn remove<B: ModelBundle>(h: &mut Harness, entity: Entity) {
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.remove::<B>(entity);
    let Some(row) = h.side.model.row(entity) else {
        let absent = h.side.absent(entity);
        assert!(
            matches!(result, Err(e) if e == absent),
            "remove from dead {entity:?}"
        );
        return;
    };
    let kinds = B::kinds();
    // Nothing is removed when any field is missing; the error names the first missing one.
    if let Some(&absent) = kinds.iter().find(|&&k| row[k].is_none()) {
        let expected = Side::missing(entity, absent);
        assert_eq!(result.err(), Some(expected), "remove from {entity:?}");
        return;
    }
    let removed = result.unwrap_or_else(|err| panic!("remove from {entity:?}: {err}"));
    let expected: Vec<Value> = (kinds.iter())
        .map(|&k| h.side.model.take(entity, k).expect("checked present"))
        .collect();
    assert_eq!(removed.values(), expected, "removed values");
}

pub(super) fn remove_one<T: ModelComponent>(h: &mut Harness, entity: Entity) {
    h.stats.structural += 1;
    h.side.model.flush();
    let result = h.side.world.remove_one::<T>(entity).map(|value| value.value());
    let expected = if h.side.model.is_live(entity) {
        (h.side.model.take(entity, T::KIND)).ok_or(Side::missing(entity, T::KIND))
    } else {
        Err(h.side.absent(entity))
    };
    assert_eq!(
        result,
        expected,
        "remove_one {} from {entity:?}",
        kind_name(T::KIND)
    );
}

/// A whole-value write through `World::get_mut`, or half the time through a `ViewMut`,
/// which must behave exactly like it.
pub(super) fn overwrite<T: ModelComponent>(h: &mut Harness, entity: Entity, seed: u16) {
    let value = Harness::values(&[T::KIND], seed, h.stats.ops).remove(0);
    let component = T::make(&value, &h.side.shared);
    let absent = h.side.absent(entity);
    let mut view;
    let slot = if seed & 1 == 0 {
        h.side.world.get_mut::<T>(entity)
    } else {
        view = h.side.world.view_mut::<T>();
        view.get_mut(entity)
    };
    match (slot, h.side.model.row_mut(entity)) {
        (Ok(mut slot), Some(row)) if row[T::KIND].is_some() => {
            *slot = component;
            row[T::KIND] = Some(value);
        }
        (Err(err), Some(row)) if row[T::KIND].is_none() => assert_eq!(err, Side::missing(entity, T::KIND)),
        (Err(err), None) => assert_eq!(err, absent),
        (result, row) => panic!(
            "get_mut {} of {entity:?}: world {result:?}, model {row:?}",
            kind_name(T::KIND)
        ),
    }
}

impl Harness {
    /// Writes through fields of the values `get_mut`, `view_mut` and `EntityMut::get_mut`
    /// hand out, changing them in place.
    pub(super) fn edit(&mut self, entity: Entity, delta: u8) {
        let Some(mut row) = self.side.model.row(entity).cloned() else {
            // Refused: dead, never issued, another world's, or a reservation (`get_mut`
            // does not flush, so a reservation is not live yet).
            let absent = self.side.absent(entity);
            assert_eq!(
                self.side.world.get_mut::<Hp>(entity).map(drop),
                Err(absent),
                "get_mut of {entity:?}, not live"
            );
            return;
        };
        let delta = u32::from(delta);
        let world = &mut self.side.world;
        if let Some(Value::Hp(hp)) = &mut row[Hp::KIND] {
            *hp = hp.wrapping_add(delta);
            let mut slot = world.get_mut::<Hp>(entity).expect("has Hp");
            slot.0 = slot.0.wrapping_add(delta);
        }
        if let Some(Value::Name(name)) = &mut row[Name::KIND] {
            name.push('!');
            world.get_mut::<Name>(entity).expect("has Name").0.push('!');
        }
        if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
            wide[1] ^= u64::from(delta);
            world.get_mut::<Wide>(entity).expect("has Wide").0[1] ^= u64::from(delta);
        }
        if let Some(Value::Small(small)) = &mut row[Small::KIND] {
            *small = small.wrapping_add(delta as u8);
            let mut view = world.view_mut::<Small>();
            let mut slot = view.get_mut(entity).expect("has Small");
            slot.0 = slot.0.wrapping_add(delta as u8);
        }
        if let Some(Value::Tracked(n)) = &mut row[Tracked::KIND] {
            *n = n.wrapping_mul(3);
            // `entity_mut` flushes reservations, like every structural method.
            self.side.model.flush();
            let mut view = world.entity_mut(entity).expect("live");
            let mut tracked = view.get_mut::<Tracked>().expect("has Tracked");
            tracked.0 = tracked.0.wrapping_mul(3);
        }
        *self.side.model.row_mut(entity).expect("live") = row;
    }

    /// `World::despawn`; with `armed`, a `Bomb` on the entity panics when dropped.
    pub(super) fn despawn(&mut self, entity: Entity, armed: bool) {
        self.stats.structural += 1;
        self.side.model.flush();
        let live = self.side.model.is_live(entity);
        let bomb = live && self.side.model.row(entity).is_some_and(|row| row[BOMB].is_some());
        let result = self.guarded(armed, armed && bomb, "despawn", |world| world.despawn(entity));
        if let Some(result) = result {
            let expected = if live {
                Ok(())
            } else {
                Err(self.side.absent(entity))
            };
            assert_eq!(result, expected, "despawn {entity:?}");
        }
        if live {
            self.side.model.kill(entity);
        }
    }

    /// `World::clear`; with `armed`, the first `Bomb` dropped panics.
    pub(super) fn clear(&mut self, armed: bool) {
        self.side.model.flush();
        self.stats.structural += self.side.model.len() as u64;
        let bomb = self.side.model.count_of(BOMB) > 0;
        self.guarded(armed, armed && bomb, "clear", World::clear);
        self.side.model.clear();
    }

    /// `World::reserve_entities`, or (`one_by_one`) `World::reserve_entity` `count` times.
    pub(super) fn reserve(&mut self, count: u32, one_by_one: bool) {
        let world = &self.side.world;
        let ids: Vec<Entity> = if one_by_one {
            (0..count).map(|_| world.reserve_entity()).collect()
        } else {
            let reserved = world.reserve_entities(count);
            assert_eq!(reserved.len(), count as usize, "reserve_entities' length");
            reserved.collect()
        };
        for entity in ids {
            assert!(
                !self.side.world.contains(entity),
                "a reservation is not live before a flush"
            );
            self.side.model.reserve(entity);
        }
    }

    /// `World::track_removals` of kind `kind`.
    pub(super) fn track_removals(&mut self, kind: usize) {
        fn track<T: ModelComponent>(world: &mut World) {
            world.track_removals::<T>();
        }
        crate::components::with_kind!(kind, track(&mut self.side.world));
        self.side.model.track_removals(kind);
    }
}
