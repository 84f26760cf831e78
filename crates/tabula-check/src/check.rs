//! The invariant checker: everything observable through the public API, compared with the
//! model.

use std::any::type_name;
use std::collections::HashMap;

use tabula::{
    Children, Entity, EntityError, Has, ObserverState, Or, Parent, QueryState, Related, With, Without, World,
};

use crate::components::{
    Bomb, Hp, KINDS, ModelComponent, Name, Pos, Shared, Small, Tag, Tracked, Value, Wide, kind_name,
    with_kind,
};
use crate::links::Rel;
use crate::model::{Model, Row, row_mask};

/// How many extra components (beside the model's kinds) an entity may hold: see
/// [`Model::extras`] and [`extra_name`].
pub const EXTRAS: usize = 4;

/// The type name of extra component `bit` (a bit number of [`Model::extras`]):
/// `ObserverState`, `Related<Rel>`, `Parent`, `Children`.
pub fn extra_name(bit: usize) -> &'static str {
    match bit {
        0 => type_name::<ObserverState>(),
        1 => type_name::<Related<Rel>>(),
        2 => type_name::<Parent>(),
        _ => type_name::<Children>(),
    }
}

/// An upper bound on the archetypes a world of the model's kinds can hold: one per subset of
/// kinds and extra components. Archetypes are never removed, so the count can only grow,
/// but never past this.
pub const MAX_ARCHETYPES: usize = 1 << (KINDS + EXTRAS);

/// Queries kept for the whole life of a world (so they match new archetypes incrementally and
/// reuse their run plans), each compared with the model by [`Checker::check`].
pub struct Checker {
    pos: QueryState<(Entity, &'static Pos)>,
    hp: QueryState<(Entity, &'static Hp)>,
    tag: QueryState<(Entity, &'static Tag)>,
    name: QueryState<(Entity, &'static Name)>,
    wide: QueryState<(Entity, &'static Wide)>,
    small: QueryState<(Entity, &'static Small)>,
    tracked: QueryState<(Entity, &'static Tracked)>,
    bomb: QueryState<(Entity, &'static Bomb)>,
    /// A filtered query with optional terms, against the model's own filter.
    mixed: QueryState<(Entity, Option<&'static Small>, Has<Tag>), Or<(With<Name>, Without<Hp>)>>,
    /// Full checks made so far (under Miri, which kind's query and removal log the next one
    /// compares).
    checks: usize,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker").finish_non_exhaustive()
    }
}

fn check_kind_query<T: ModelComponent>(
    state: &mut QueryState<(Entity, &'static T)>,
    world: &World,
    model: &Model,
) {
    let mut seen = 0;
    for (entity, value) in state.iter(world) {
        seen += 1;
        let expected = model.row(entity).and_then(|row| row[T::KIND].as_ref());
        match expected {
            Some(expected) => assert!(
                value.matches(expected),
                "query of {}: {entity:?} holds {value:?}, model {expected:?}",
                kind_name(T::KIND)
            ),
            None => panic!(
                "query of {} yields {entity:?}, which the model says lacks it (live: {})",
                kind_name(T::KIND),
                model.is_live(entity)
            ),
        }
    }
    // Every row yielded matched the model, and (rows are distinct entities, checked by the
    // archetype walk) the counts agree, so the query yields exactly the model's rows.
    assert_eq!(
        seen,
        model.count_of(T::KIND),
        "rows of query over {}",
        kind_name(T::KIND)
    );
    assert_eq!(
        state.count(world),
        seen,
        "count() of query over {}",
        kind_name(T::KIND)
    );
}

fn check_component<T: ModelComponent>(world: &World, entity: Entity, row: &Row) {
    let expected = &row[T::KIND];
    match (expected, world.get::<T>(entity)) {
        (Some(value), Ok(actual)) => {
            assert!(
                actual.matches(value),
                "{entity:?}: model {value:?}, world {actual:?}"
            );
            let address = std::ptr::from_ref(actual).addr();
            assert_eq!(
                address % align_of::<T>(),
                0,
                "{} is misaligned",
                kind_name(T::KIND)
            );
        }
        (None, Err(err)) => assert_eq!(
            err,
            EntityError::MissingComponent {
                entity,
                component: kind_name(T::KIND)
            }
        ),
        (expected, actual) => panic!(
            "{entity:?} {}: model {expected:?}, world {actual:?}",
            kind_name(T::KIND)
        ),
    }
    assert_eq!(
        world.has::<T>(entity),
        expected.is_some(),
        "{entity:?} has {}",
        kind_name(T::KIND)
    );
}

/// Checks one live entity: alive, exactly its row's components and values (and `extras`,
/// the [`Model::extras`] it holds besides), and its id with another world's tag refused.
pub fn check_entity(world: &World, entity: Entity, row: &Row, extras: u16) {
    check_components(world, entity, row, extras);
    check_alien(world, entity);
}

/// Checks one live entity: alive, and exactly its row's components and values, and
/// `extras` besides.
fn check_components(world: &World, entity: Entity, row: &Row, extras: u16) {
    assert!(world.contains(entity), "{entity:?} should be alive");
    for kind in 0..KINDS {
        with_kind!(kind, check_component(world, entity, row));
    }
    let view = world.entity(entity).expect("a live entity has a view");
    assert_eq!(view.id(), entity);
    assert_eq!(
        names_mask(view.component_names()),
        row_mask(row) | extras << KINDS,
        "{entity:?}'s components: {:?}",
        view.component_names().collect::<Vec<_>>()
    );
}

/// Live `entity`'s index and generation as another world would have made them: refused as
/// such.
fn check_alien(world: &World, entity: Entity) {
    let alien = Entity::from_bits(entity.to_bits() ^ (1 << 56)).expect("a nonzero generation");
    let wrong = EntityError::WrongWorld {
        entity: alien,
        world: world.tag(),
    };
    assert!(
        !world.contains(alien),
        "{alien:?} of another world is not alive here"
    );
    assert_eq!(world.get::<Pos>(alien), Err(wrong));
    assert!(matches!(world.entity(alien), Err(error) if error == wrong));
}

/// `World::view` finds exactly what `World::get` finds (the same value, at the same address,
/// or the same error), for live, `dead` and reserved entities.
fn check_view<T: ModelComponent>(world: &World, model: &Model, dead: &[Entity]) {
    let view = world.view::<T>();
    let ids = model.ids().iter().copied();
    for entity in ids
        .chain(dead.iter().copied())
        .chain(model.pending().iter().copied())
    {
        match (view.get(entity), world.get::<T>(entity)) {
            (Ok(seen), Ok(got)) => assert!(
                std::ptr::eq(seen, got),
                "{entity:?}: view and get of {} differ",
                kind_name(T::KIND)
            ),
            (seen, got) => assert_eq!(
                seen.err(),
                got.err(),
                "{entity:?}: view and get of {}",
                kind_name(T::KIND)
            ),
        }
    }
}

/// The world's removal log of `T` holds exactly the entities the model's does (in some
/// order: a batch or `clear` logs in storage order), and exists exactly when the model says
/// `T` is tracked.
fn check_removal_log<T: ModelComponent>(world: &World, model: &Model) {
    match (model.removal_log(T::KIND), world.removal_log::<T>()) {
        (None, None) => {}
        (Some(want), Some(_)) => {
            let mut seen: Vec<Entity> = world.removed::<T>().collect();
            seen.sort_unstable();
            let mut want: Vec<Entity> = want.iter().copied().collect();
            want.sort_unstable();
            assert_eq!(seen, want, "removal log of {}", kind_name(T::KIND));
        }
        (want, got) => panic!(
            "removal log of {}: tracked in the model: {}, in the world: {}",
            kind_name(T::KIND),
            want.is_some(),
            got.is_some()
        ),
    }
}

/// Checks that every `Tracked` and `Bomb` made is either stored in the world (as the model
/// says) or dropped, once.
fn check_drop_counts(model: &Model, shared: &Shared) {
    assert_eq!(
        shared.tracked_alive(),
        model.count_of(Tracked::KIND) as isize,
        "Tracked values: made - dropped"
    );
    assert_eq!(
        shared.bombs_alive(),
        model.count_of(Bomb::KIND) as isize,
        "Bomb values: made - dropped"
    );
}

/// Checks that `entity` is not alive.
pub fn check_dead(world: &World, entity: Entity) {
    assert!(!world.contains(entity), "{entity:?} should not be alive");
    assert_eq!(world.get::<Pos>(entity), Err(EntityError::NoSuchEntity(entity)));
    assert_eq!(world.get::<Tag>(entity), Err(EntityError::NoSuchEntity(entity)));
    assert!(!world.has::<Tag>(entity));
    assert!(matches!(world.entity(entity), Err(EntityError::NoSuchEntity(e)) if e == entity));
}

/// The set of kinds named, as a bit mask (with the extra components at bit `KINDS` and
/// up); each name must be a known kind or extra, listed once.
fn names_mask(names: impl Iterator<Item = &'static str>) -> u16 {
    names.fold(0, |mask, name| {
        let kind = ((0..KINDS).find(|&k| kind_name(k) == name))
            .or_else(|| (0..EXTRAS).find(|&x| extra_name(x) == name).map(|x| KINDS + x))
            .unwrap_or_else(|| panic!("unknown component `{name}`"));
        assert_eq!(mask & 1 << kind, 0, "`{name}` listed twice");
        mask | 1 << kind
    })
}

/// Structural figures read through the public API, for growth checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Live entities.
    pub entities: usize,
    /// Archetypes (never removed).
    pub archetypes: usize,
    /// Registered component and resource types.
    pub components: usize,
    /// Entity slots made (`World::entity_slots`).
    pub slots: usize,
    /// Entity reservation lanes, the shared one included (`World::entity_lane_count`).
    pub lanes: usize,
}

/// The structural figures of `world`.
pub fn shape(world: &World) -> Shape {
    Shape {
        entities: world.len() as usize,
        archetypes: world.archetypes().len(),
        components: world.components().len(),
        slots: world.entity_slots(),
        lanes: world.entity_lane_count(),
    }
}

impl Checker {
    /// Builds the checker's queries on `world` (which needs `&mut` once, to register types).
    pub fn new(world: &mut World) -> Self {
        Self {
            pos: world.query(),
            hp: world.query(),
            tag: world.query(),
            name: world.query(),
            wide: world.query(),
            small: world.query(),
            tracked: world.query(),
            bomb: world.query(),
            mixed: world.query_filtered(),
            checks: 0,
        }
    }

    /// Compares the query over component kind `kind` with the model.
    fn check_kind_query(&mut self, kind: usize, world: &World, model: &Model) {
        match kind {
            0 => check_kind_query(&mut self.pos, world, model),
            1 => check_kind_query(&mut self.hp, world, model),
            2 => check_kind_query(&mut self.tag, world, model),
            3 => check_kind_query(&mut self.name, world, model),
            4 => check_kind_query(&mut self.wide, world, model),
            5 => check_kind_query(&mut self.small, world, model),
            6 => check_kind_query(&mut self.tracked, world, model),
            _ => check_kind_query(&mut self.bomb, world, model),
        }
    }

    /// Compares everything observable with the model: entity counts, every live entity's
    /// components and values (through `get`, `has` and `entity`), the recent dead ids and the
    /// reservations, `World::view` against `World::get`, every archetype's entity list against
    /// the model's component sets, every kind's query, a filtered query, the removal logs,
    /// the drop accounting of `Tracked` and `Bomb`, and the archetype bound.
    pub fn check(&mut self, world: &World, model: &Model, shared: &Shared) {
        assert_eq!(world.len() as usize, model.len(), "entity count");
        assert_eq!(world.is_empty(), model.is_empty(), "is_empty");
        assert_eq!(
            world.entities().len() as usize,
            model.len(),
            "allocator's live count"
        );
        // Under Miri, where every check is slow, each check compares one live entity's alien
        // twin, the 4 most recent dead ids, and one kind's query and removal log (a different
        // kind each time) rather than all of them.
        let miri = cfg!(miri);
        for (at, (entity, row)) in model.rows().enumerate() {
            check_components(world, entity, row, model.extras(entity));
            if !miri || at == 0 {
                check_alien(world, entity);
            }
        }
        let dead: Vec<Entity> = (model.recent_dead().rev())
            .take(if miri { 4 } else { usize::MAX })
            .collect();
        for &entity in dead.iter().chain(model.pending()) {
            check_dead(world, entity);
        }
        check_view::<Pos>(world, model, &dead);
        check_view::<Tracked>(world, model, &dead);
        // Every stored entity is a live one, stored once, in the archetype of exactly its
        // component set.
        // Kinds stored in sparse sets are in no archetype's component set.
        let sparse = (0..KINDS)
            .filter(|&kind| {
                (world.components().id_by_name(kind_name(kind)))
                    .is_some_and(|id| world.components().info(id).is_sparse())
            })
            .fold(0_u16, |mask, kind| mask | 1 << kind);
        let mut stored = 0;
        let mut where_stored: HashMap<Entity, usize> = HashMap::with_capacity(model.len());
        for (at, archetype) in world.archetypes().enumerate() {
            assert_eq!(archetype.len(), archetype.entities().len());
            if archetype.is_empty() {
                continue;
            }
            let mask = names_mask(archetype.component_names());
            for &entity in archetype.entities() {
                let row = model
                    .row(entity)
                    .unwrap_or_else(|| panic!("stored {entity:?} is not live"));
                assert_eq!(
                    mask,
                    (row_mask(row) | model.extras(entity) << KINDS) & !sparse,
                    "{entity:?} is in the wrong archetype"
                );
                if let Some(before) = where_stored.insert(entity, at) {
                    panic!("{entity:?} is stored in archetypes {before} and {at}");
                }
            }
            stored += archetype.len();
        }
        assert_eq!(stored, model.len(), "entities stored in archetypes");
        assert!(
            world.archetypes().len() <= MAX_ARCHETYPES + 1,
            "{} archetypes for {KINDS} kinds",
            world.archetypes().len()
        );

        for kind in 0..KINDS {
            if !miri || kind == self.checks % KINDS {
                self.check_kind_query(kind, world, model);
            }
        }

        let mut seen: Vec<(Entity, Option<Value>, bool)> = self
            .mixed
            .iter(world)
            .map(|(e, small, tag)| (e, small.map(Small::value), tag))
            .collect();
        seen.sort_by_key(|&(e, _, _)| e);
        let mut want: Vec<(Entity, Option<Value>, bool)> = model
            .rows()
            .filter(|(_, row)| row[Name::KIND].is_some() || row[Hp::KIND].is_none())
            .map(|(e, row)| (e, row[Small::KIND].clone(), row[Tag::KIND].is_some()))
            .collect();
        want.sort_by_key(|&(e, _, _)| e);
        assert_eq!(
            seen, want,
            "query (Entity, Option<&Small>, Has<Tag>), Or<(With<Name>, Without<Hp>)>"
        );

        for kind in 0..KINDS {
            if !miri || kind == self.checks % KINDS {
                with_kind!(kind, check_removal_log(world, model));
            }
        }
        self.checks += 1;
        check_drop_counts(model, shared);
    }

    /// A cheap check for long runs: the counts, `sample` live entities in full, the removal
    /// logs and the drop accounting.
    pub fn check_sample(
        &mut self,
        world: &World,
        model: &Model,
        shared: &Shared,
        sample: usize,
        salt: usize,
    ) {
        assert_eq!(world.len() as usize, model.len(), "entity count");
        let ids = model.ids();
        if !ids.is_empty() {
            for i in 0..sample.min(ids.len()) {
                let entity = ids[(salt.wrapping_mul(31).wrapping_add(i.wrapping_mul(7919))) % ids.len()];
                let row = model.row(entity).expect("listed ids are live");
                check_entity(world, entity, row, model.extras(entity));
            }
        }
        for entity in model.recent_dead().take(sample) {
            check_dead(world, entity);
        }
        assert!(world.archetypes().len() <= MAX_ARCHETYPES + 1);
        for kind in 0..KINDS {
            with_kind!(kind, check_removal_log(world, model));
        }
        check_drop_counts(model, shared);
    }
}
