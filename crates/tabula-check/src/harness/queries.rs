//! The passes of [`Op::Query`](crate::Op::Query) (see [`QUERIES`]): queries built once per
//! world and kept across every step, so that they match new archetypes incrementally and
//! reuse their run plans, each pass compared with the model, which follows the passes that
//! write.

use tabula::{Entity, Has, Or, QueryError, QueryState, With, Without, World};

use super::Harness;
use super::side::{Side, alien};
use crate::components::{Hp, ModelComponent, Name, Pos, Small, Tag, Tracked, Value, Wide};
use crate::ops::{PAR_QUERY, QUERIES};

/// The queries of one world.
pub(super) struct KeptQueries {
    /// Pass 0: `iter`, `count` and `get`.
    pos: QueryState<(Entity, &'static Pos, Option<&'static Small>)>,
    /// Passes 1 (`for_each`) and 5 (`get_mut`).
    hp: QueryState<(Entity, &'static mut Hp), Without<Tag>>,
    /// Passes 2 (`par_for_each`) and 3 (`for_each_chunk`).
    wide: QueryState<(Entity, &'static mut Wide), With<Name>>,
    /// Pass 4 (`for_each`, read-only, through `Or` and `Has`).
    tracked: QueryState<(Entity, &'static Tracked, Has<Tag>), Or<(With<Small>, Without<Pos>)>>,
}

impl KeptQueries {
    /// Builds the queries on `world`.
    pub(super) fn new(world: &mut World) -> Self {
        Self {
            pos: world.query(),
            hp: world.query_filtered(),
            wide: world.query_filtered(),
            tracked: world.query_filtered(),
        }
    }
}

impl Harness {
    /// Query pass `which` (modulo [`QUERIES`]) on the first world.
    pub(super) fn query(&mut self, which: u8) {
        let side = &mut self.side;
        match which % QUERIES {
            0 => read_pos(side),
            1 => for_each_hp(side),
            PAR_QUERY => par_for_each_wide(side),
            3 => for_each_chunk_wide(side),
            4 => for_each_tracked(side),
            _ => get_mut_hp(side),
        }
    }
}

fn read_pos(side: &mut Side) {
    let tag = side.tag();
    let Side {
        world,
        model,
        queries,
        ..
    } = side;
    let q = &mut queries.pos;
    let mut seen: Vec<(Entity, Value, Option<Value>)> = (q.iter(world))
        .map(|(e, pos, small)| (e, pos.value(), small.map(Small::value)))
        .collect();
    seen.sort_by_key(|&(e, _, _)| e);
    let mut want: Vec<(Entity, Value, Option<Value>)> = (model.rows())
        .filter_map(|(e, row)| Some((e, row[Pos::KIND].clone()?, row[Small::KIND].clone())))
        .collect();
    want.sort_by_key(|&(e, _, _)| e);
    assert_eq!(seen, want, "iter over (Entity, &Pos, Option<&Small>)");
    assert_eq!(
        q.count(world),
        want.len(),
        "count of (Entity, &Pos, Option<&Small>)"
    );

    // Lookups of every live entity, of the 8 most recent dead, the reservations and another
    // world's id.
    for (e, row) in model.rows() {
        let got = (q.get(world, e)).map(|(got, pos, small)| (got, pos.value(), small.map(Small::value)));
        match &row[Pos::KIND] {
            Some(pos) => assert_eq!(got, Ok((e, pos.clone(), row[Small::KIND].clone())), "get {e:?}"),
            None => assert!(
                matches!(got, Err(QueryError::NoMatch { entity, .. }) if entity == e),
                "get {e:?}: {got:?}"
            ),
        }
    }
    for e in (model.recent_dead().rev().take(8)).chain(model.pending().iter().copied()) {
        assert_eq!(
            q.get(world, e).err(),
            Some(QueryError::NoSuchEntity(e)),
            "get of dead {e:?}"
        );
    }
    if let Some(&live) = model.ids().first() {
        let other = alien(live);
        assert_eq!(
            q.get(world, other).err(),
            Some(QueryError::WrongWorld {
                entity: other,
                world: tag
            }),
            "get of {other:?}, another world's"
        );
    }
}

/// Three passes: at a new archetype the first walks the archetypes, the second makes a run
/// plan and the third reads it; the next structural change (if any) leaves it stale.
fn for_each_hp(side: &mut Side) {
    let Side {
        world,
        model,
        queries,
        ..
    } = side;
    for pass in 0..3 {
        let mut seen = Vec::new();
        queries.hp.for_each(world, |(e, mut hp)| {
            hp.0 = hp.0.wrapping_add(1);
            seen.push((e, hp.0));
        });
        seen.sort_unstable();
        let mut want = Vec::new();
        for (e, row) in model.rows_mut().filter(|(_, row)| row[Tag::KIND].is_none()) {
            if let Some(Value::Hp(hp)) = &mut row[Hp::KIND] {
                *hp = hp.wrapping_add(1);
                want.push((e, *hp));
            }
        }
        want.sort_unstable();
        assert_eq!(
            seen, want,
            "for_each pass {pass} over (Entity, &mut Hp), Without<Tag>"
        );
    }
}

/// Every `Wide` with a `Name` gets its first word bumped, on rayon's threads.
fn par_for_each_wide(side: &mut Side) {
    (side.queries.wide).par_for_each(&mut side.world, |(_, mut wide)| {
        wide.0[0] = wide.0[0].wrapping_add(1);
    });
    bump_wide(side);
}

/// The model's side of a pass over `wide`: every `Wide` with a `Name` gets its first word
/// bumped; returns them.
fn bump_wide(side: &mut Side) -> Vec<(Entity, [u64; 3])> {
    let mut bumped = Vec::new();
    for (e, row) in (side.model.rows_mut()).filter(|(_, row)| row[Name::KIND].is_some()) {
        if let Some(Value::Wide(wide)) = &mut row[Wide::KIND] {
            wide[0] = wide[0].wrapping_add(1);
            bumped.push((e, *wide));
        }
    }
    bumped.sort_unstable();
    bumped
}

/// Three passes, as in [`for_each_hp`], over whole columns.
fn for_each_chunk_wide(side: &mut Side) {
    for pass in 0..3 {
        let mut seen = Vec::new();
        (side.queries.wide).for_each_chunk(&mut side.world, |(entities, wides)| {
            assert_eq!(entities.len(), wides.len(), "a chunk's columns");
            for (&e, wide) in entities.iter().zip(wides) {
                wide.0[0] = wide.0[0].wrapping_add(1);
                seen.push((e, wide.0));
            }
        });
        seen.sort_unstable();
        let want = bump_wide(side);
        assert_eq!(
            seen, want,
            "for_each_chunk pass {pass} over (Entity, &mut Wide), With<Name>"
        );
    }
}

/// Three passes, as in [`for_each_hp`], reading through `Or` and `Has`.
fn for_each_tracked(side: &mut Side) {
    let Side {
        world,
        model,
        queries,
        ..
    } = side;
    let mut want: Vec<(Entity, u32, bool)> = (model.rows())
        .filter(|(_, row)| row[Small::KIND].is_some() || row[Pos::KIND].is_none())
        .filter_map(|(e, row)| match row[Tracked::KIND] {
            Some(Value::Tracked(n)) => Some((e, n, row[Tag::KIND].is_some())),
            _ => None,
        })
        .collect();
    want.sort_unstable();
    for pass in 0..3 {
        let mut seen = Vec::new();
        queries
            .tracked
            .for_each(world, |(e, tracked, tagged)| seen.push((e, tracked.0, tagged)));
        seen.sort_unstable();
        assert_eq!(
            seen, want,
            "for_each pass {pass} over (Entity, &Tracked, Has<Tag>), Or<(With<Small>, Without<Pos>)>"
        );
    }
}

/// `get_mut` of every live entity (the matching ones' `Hp` goes up by 7) and of the 8 most
/// recent dead.
fn get_mut_hp(side: &mut Side) {
    let Side {
        world,
        model,
        queries,
        ..
    } = side;
    for (e, row) in model.rows_mut() {
        let got = queries.hp.get_mut(world, e).map(|(got, mut hp)| {
            hp.0 = hp.0.wrapping_add(7);
            (got, hp.0)
        });
        let tagged = row[Tag::KIND].is_some();
        match &mut row[Hp::KIND] {
            Some(Value::Hp(hp)) if !tagged => {
                *hp = hp.wrapping_add(7);
                assert_eq!(got, Ok((e, *hp)), "get_mut {e:?}");
            }
            _ => assert!(
                matches!(got, Err(QueryError::NoMatch { entity, .. }) if entity == e),
                "get_mut {e:?}: {got:?}"
            ),
        }
    }
    for e in model.recent_dead().rev().take(8) {
        assert_eq!(
            queries.hp.get_mut(world, e).err(),
            Some(QueryError::NoSuchEntity(e)),
            "get_mut of dead {e:?}"
        );
    }
}
