//! Many-to-many relations between entities: an entity `Likes` several others, a unit
//! `Targets` several units. See [`Relations`] for the whole picture. (One-to-many links held
//! by components on both sides, such as `Parent` / `Children`, are
//! [`Relationship`](crate::Relationship)s.)
//!
//! A relation *kind* is a type implementing [`Relation`], usually a unit struct
//! (`struct Likes; impl Relation for Likes {}`). The pairs `(source, target)` of kind `R`
//! live in the world's [`Relations<R>`] resource, which keeps both directions — each
//! source's targets and each target's sources — in a sparse set over entity indices
//! (generation checked), so both lookups are a slice found in constant time. No archetype is
//! made per target: every entity in at least one pair of kind `R` holds the same zero-sized
//! marker, [`Related<R>`].
//!
//! Consistency is kept by `Related<R>`'s hooks, registered with the kind
//! ([`World::register_relation`], which the first `relate` calls): its `on_remove` removes
//! every pair of the entity losing it (a despawn by any path, or the marker taken off by
//! hand), and queues the removal of the marker of every partner left with no pair; its
//! `on_insert` queues the removal of a marker from an entity that is in no pair (a marker
//! taken from one entity and inserted on another). The queued commands are applied before
//! the `World` call returns, so between calls the marker is on exactly the entities in a pair
//! and no list holds a dead entity.
//!
//! ```
//! use tabula::{Relation, Relations, World};
//!
//! struct Likes;
//! impl Relation for Likes {}
//!
//! let mut world = World::new();
//! let [alice, bob, carol] = [(); 3].map(|()| world.spawn(()));
//! world.relate::<Likes>(alice, bob)?;
//! world.relate::<Likes>(alice, carol)?;
//! world.relate::<Likes>(carol, bob)?;
//! assert_eq!(world.targets::<Likes>(alice), &[bob, carol]);
//! assert_eq!(world.sources::<Likes>(bob), &[alice, carol]);
//!
//! world.despawn(bob)?; // gone from every list, on both sides
//! assert_eq!(world.targets::<Likes>(alice), &[carol]);
//! assert_eq!(world.resource::<Relations<Likes>>()?.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::command::{CommandError, Commands, EntityCommands, Fallible};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::type_name::short_type_name;
use crate::world::{HookContext, HookWorld, World};

/// A kind of many-to-many relation between entities (see [`Relations`]): implement it for a
/// marker type, and relate entities with [`World::relate`]. The trait has no item; it keeps
/// a relation kind from being confused with a component type (say, a one-to-many
/// [`Relationship`](crate::Relationship), whose sources are
/// [`World::related_sources`]) in [`World::targets`], [`World::sources`] and the rest.
///
/// ```
/// use tabula::{Relation, World};
///
/// /// A unit attacking another; a unit may attack several, and be attacked by several.
/// struct Attacks;
/// impl Relation for Attacks {}
///
/// let mut world = World::new();
/// let [knight, archer, orc] = [(); 3].map(|()| world.spawn(()));
/// world.relate::<Attacks>(knight, orc)?;
/// world.relate::<Attacks>(archer, orc)?;
/// assert_eq!(world.sources::<Attacks>(orc), &[knight, archer]);
/// # Ok::<(), tabula::EntityError>(())
/// ```
pub trait Relation: 'static {}

/// The pairs of relation kind `R` in a world: for each entity, the targets it is related to
/// (as source) and the sources related to it (as target). A resource, made by
/// [`World::register_relation`] or the first [`World::relate`] of the kind; read it in a
/// system as `Res<Relations<R>>`. It changes only through the world's and the commands'
/// relation methods (it has no public `&mut` method), so it always agrees with the world;
/// do not take it out with `remove_resource`, which forgets every pair of the kind while
/// their entities keep the marker.
///
/// * **Kinds.** `R` is a [`Relation`], usually a unit struct; it only tells kinds apart.
///   Pairs carry no data: keep per-pair data in a component or map of your own.
/// * **Lookups.** [`targets`](Self::targets) and [`sources`](Self::sources) return a slice in
///   constant time (a sparse set: an array indexed by entity index leads to the related
///   entity's place, its generation checked; a dead entity, or one from another world, has
///   none). [`contains`](Self::contains) scans the shorter of the two lists.
/// * **Order.** Each list is in the order its pairs were made; removing a pair keeps the
///   order of the others, and a pair made again goes to the end. The lists (and
///   [`iter`](Self::iter)) depend only on the sequence of calls, never on hashing, threads
///   or memory addresses: the same calls give the same lists.
/// * **Self pairs.** An entity may be related to itself: it is then one of its own targets
///   and one of its own sources, and the pair counts once.
/// * **Cleanup.** Despawning an entity, by any path (`despawn`, `despawn_recursive`,
///   `clear`, commands), removes every pair it is in, and a partner left with no pair of the
///   kind loses its [`Related<R>`] marker, before the call returns. Despawn hooks see the
///   pairs still there in their `on_despawn` (the pairs go in `Related<R>`'s `on_remove`,
///   which runs after every `on_despawn` of the entity).
/// * **Cost.** Making a pair is a scan of the shorter list, two pushes and, for an entity's
///   first pair, one archetype move (the marker's insert); removing one is a search in both
///   lists (linear in their lengths; an entity with thousands of sources makes each of their
///   removals scan that list); a despawn removes each of the entity's pairs that way.
///   Memory: 4 bytes per entity index up to the highest index ever related, 56 per entity
///   in a pair, and 16 per pair (each is listed on both sides).
///
/// ```
/// use tabula::schedule::{Res, Schedule};
/// use tabula::{Entity, Relation, Relations, World};
///
/// struct Targets;
/// impl Relation for Targets {}
/// struct Hp(u32);
///
/// // A system reads the pairs through the resource.
/// fn fire(targets: Res<Relations<Targets>>, mut hits: tabula::schedule::ResMut<Vec<Entity>>) {
///     hits.extend(targets.iter().map(|(_, target)| target));
/// }
///
/// let mut world = World::new();
/// world.register_relation::<Targets>(); // the resource exists before the first pair
/// world.insert_resource(Vec::<Entity>::new());
/// let tank = world.spawn((Hp(100),));
/// let [a, b] = [(); 2].map(|()| world.spawn((Hp(10),)));
/// world.relate::<Targets>(a, tank)?;
/// world.relate::<Targets>(b, tank)?;
/// world.relate::<Targets>(b, a)?;
///
/// let mut schedule = Schedule::new();
/// schedule.add_systems(fire);
/// schedule.run(&mut world);
/// assert_eq!(world.resource::<Vec<Entity>>()?, &[tank, tank, a]); // by source, then in order
/// assert_eq!(world.resource::<Relations<Targets>>()?.sources(tank), &[a, b]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Relations<R> {
    /// A sparse set: `sparse[i]` is the position in `entries` of the entity of index `i`,
    /// or `NONE` when it is in no pair (4 bytes per entity index, up to the highest index
    /// ever related).
    sparse: Vec<u32>,
    /// The entities in at least one pair, with their lists, in no particular order (a
    /// removal swaps the last one into the hole).
    entries: Vec<Entry>,
    /// How many pairs there are.
    pairs: usize,
    _kind: PhantomData<fn() -> R>,
}

/// An entity in at least one pair, and its lists: side by side, so that a lookup's
/// generation check and list header are one memory access, not two.
struct Entry {
    entity: Entity,
    /// Its targets, in the order the pairs were made.
    targets: Vec<Entity>,
    /// Its sources, in the order the pairs were made.
    sources: Vec<Entity>,
}

/// The `sparse` entry of an entity index in no pair: past the end of `entries`.
const NONE: u32 = u32::MAX;

/// Removes the first `entity` from `list`, keeping the order of the rest.
fn remove_from(list: &mut Vec<Entity>, entity: Entity) {
    if let Some(index) = list.iter().position(|&e| e == entity) {
        list.remove(index);
    }
}

impl<R> Relations<R> {
    fn new() -> Self {
        Self {
            sparse: Vec::new(),
            entries: Vec::new(),
            pairs: 0,
            _kind: PhantomData,
        }
    }

    /// The dense position of `entity`, if it is in a pair.
    #[inline]
    fn position(&self, entity: Entity) -> Option<usize> {
        let position = *self.sparse.get(entity.index() as usize)? as usize;
        (self.entries.get(position)?.entity == entity).then_some(position)
    }

    /// The entry of `entity`, if it is in a pair.
    #[inline]
    fn entry(&self, entity: Entity) -> Option<&Entry> {
        let position = *self.sparse.get(entity.index() as usize)? as usize;
        self.entries.get(position).filter(|entry| entry.entity == entity)
    }

    /// The targets of `source`, in the order the pairs were made; empty when it has none
    /// (or is dead, or from another world).
    ///
    /// ```
    /// use tabula::{Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, c)?;
    /// world.relate::<Likes>(a, b)?;
    /// let likes = world.resource::<Relations<Likes>>()?;
    /// assert_eq!(likes.targets(a), &[c, b]);
    /// assert!(likes.targets(b).is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn targets(&self, source: Entity) -> &[Entity] {
        self.entry(source).map_or(&[], |entry| &entry.targets)
    }

    /// The sources related to `target`, in the order the pairs were made; empty when it has
    /// none (or is dead, or from another world).
    ///
    /// ```
    /// use tabula::{Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(b, a)?;
    /// world.relate::<Likes>(c, a)?;
    /// assert_eq!(world.resource::<Relations<Likes>>()?.sources(a), &[b, c]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn sources(&self, target: Entity) -> &[Entity] {
        self.entry(target).map_or(&[], |entry| &entry.sources)
    }

    /// True when `source` is related to `target` (in that direction).
    ///
    /// ```
    /// use tabula::{Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b] = [(); 2].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// let likes = world.resource::<Relations<Likes>>()?;
    /// assert!(likes.contains(a, b));
    /// assert!(!likes.contains(b, a));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, source: Entity, target: Entity) -> bool {
        let (targets, sources) = (self.targets(source), self.sources(target));
        if targets.len() <= sources.len() {
            targets.contains(&target)
        } else {
            sources.contains(&source)
        }
    }

    /// True when `entity` is in at least one pair, as source or target: exactly the
    /// entities that hold the [`Related<R>`] marker.
    ///
    /// ```
    /// use tabula::{Related, Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// let likes = world.resource::<Relations<Likes>>()?;
    /// assert!(likes.is_related(a) && likes.is_related(b) && !likes.is_related(c));
    /// assert!(world.has::<Related<Likes>>(b) && !world.has::<Related<Likes>>(c));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn is_related(&self, entity: Entity) -> bool {
        self.position(entity).is_some()
    }

    /// How many pairs there are.
    pub fn len(&self) -> usize {
        self.pairs
    }

    /// True when there is no pair.
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Every pair, as `(source, target)`: by source entity index, then each source's
    /// targets in the order the pairs were made.
    ///
    /// ```
    /// use tabula::{Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(b, a)?;
    /// world.relate::<Likes>(a, c)?;
    /// world.relate::<Likes>(a, b)?;
    /// let pairs: Vec<_> = world.resource::<Relations<Likes>>()?.iter().collect();
    /// assert_eq!(pairs, [(a, c), (a, b), (b, a)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (Entity, Entity)> + '_ {
        self.by_index().flat_map(move |p| {
            let entry = &self.entries[p];
            entry.targets.iter().map(move |&target| (entry.entity, target))
        })
    }

    /// The dense positions of the entities in a pair, by entity index.
    fn by_index(&self) -> impl Iterator<Item = usize> + '_ {
        (self.sparse.iter())
            .map(|&position| position as usize)
            .filter(|&position| position < self.entries.len())
    }

    /// The dense position of `entity`, added if it has none. An older entity of the same
    /// index still listed (possible only if the resource was taken out of the world while
    /// that entity was despawned) leaves every pair first.
    fn claim(&mut self, entity: Entity) -> usize {
        if let Some(position) = self.position(entity) {
            return position;
        }
        let index = entity.index() as usize;
        if self.sparse.len() <= index {
            self.sparse.resize(index + 1, NONE);
        }
        if let Some(stale) = self.entries.get(self.sparse[index] as usize).map(|e| e.entity) {
            self.remove_entity(stale);
        }
        let position = self.entries.len();
        self.entries.push(Entry {
            entity,
            targets: Vec::new(),
            sources: Vec::new(),
        });
        self.sparse[index] = u32::try_from(position).expect("fewer than 2^32 related entities");
        position
    }

    /// Adds the pair; false when it was there.
    fn insert(&mut self, source: Entity, target: Entity) -> bool {
        if self.contains(source, target) {
            return false;
        }
        let position = self.claim(source);
        self.entries[position].targets.push(target);
        let position = self.claim(target);
        self.entries[position].sources.push(source);
        self.pairs += 1;
        true
    }

    /// Removes the pair; false when it was not there.
    fn remove(&mut self, source: Entity, target: Entity) -> bool {
        let (Some(s), Some(t)) = (self.position(source), self.position(target)) else {
            return false;
        };
        let Some(index) = self.entries[s].targets.iter().position(|&e| e == target) else {
            return false;
        };
        self.entries[s].targets.remove(index);
        remove_from(&mut self.entries[t].sources, source);
        self.pairs -= 1;
        self.release_if_unrelated(source);
        self.release_if_unrelated(target);
        true
    }

    /// Takes `entity` out of `entries` if it is there with no pair; true if it was.
    fn release_if_unrelated(&mut self, entity: Entity) -> bool {
        let Some(position) = self.position(entity) else {
            return false;
        };
        let entry = &self.entries[position];
        let unrelated = entry.targets.is_empty() && entry.sources.is_empty();
        if unrelated {
            self.release(position);
        }
        unrelated
    }

    /// Takes the entity at dense `position` out, moving the last one into its place.
    fn release(&mut self, position: usize) {
        let entity = self.entries.swap_remove(position).entity;
        self.sparse[entity.index() as usize] = NONE;
        if let Some(moved) = self.entries.get(position) {
            self.sparse[moved.entity.index() as usize] = position as u32;
        }
    }

    /// Removes every pair `entity` is in, and returns its partners left with no pair, each
    /// once, in the order they were left so: its targets, then its sources, in list order.
    fn remove_entity(&mut self, entity: Entity) -> Vec<Entity> {
        let Some(position) = self.position(entity) else {
            return Vec::new();
        };
        let targets = std::mem::take(&mut self.entries[position].targets);
        let sources = std::mem::take(&mut self.entries[position].sources);
        self.release(position);
        // A self pair is in both lists and counts once.
        self.pairs -= targets.len() + sources.iter().filter(|&&s| s != entity).count();
        // `entity` is out of `entries` already, so a self pair is skipped here. A
        // partner left with no pair is released at once (one that is both a target and a
        // source, at its second mention).
        let mut orphans = Vec::new();
        for &target in &targets {
            self.unlist(target, |entry| &mut entry.sources, entity, &mut orphans);
        }
        for &source in &sources {
            self.unlist(source, |entry| &mut entry.targets, entity, &mut orphans);
        }
        orphans
    }

    /// Removes `entity` from the list `list` picks of `partner`'s entry; a partner left with
    /// no pair is released and pushed to `orphans`.
    fn unlist(
        &mut self,
        partner: Entity,
        list: impl FnOnce(&mut Entry) -> &mut Vec<Entity>,
        entity: Entity,
        orphans: &mut Vec<Entity>,
    ) {
        let Some(position) = self.position(partner) else {
            return;
        };
        let entry = &mut self.entries[position];
        remove_from(list(entry), entity);
        if entry.targets.is_empty() && entry.sources.is_empty() {
            self.release(position);
            orphans.push(partner);
        }
    }
}

impl<R> fmt::Debug for Relations<R> {
    /// `Relations<Likes> {0v1@1: [1v1@1, 2v1@1], ...}`: each source with its targets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Relations<{}> ", short_type_name(std::any::type_name::<R>()))?;
        f.debug_map()
            .entries(
                self.by_index()
                    .map(|p| &self.entries[p])
                    .filter(|entry| !entry.targets.is_empty())
                    .map(|entry| (entry.entity, &entry.targets)),
            )
            .finish()
    }
}

/// The marker component every entity in at least one pair of relation kind `R` holds, as
/// source or target (see [`Relations`]): one zero-sized component whatever the partners,
/// so relating entities makes no archetype per target. Use it in query filters —
/// `With<Related<Likes>>` visits the entities that like or are liked.
///
/// The world adds and removes it as pairs come and go; it cannot be made outside tabula.
/// Removing it from an entity by hand removes every pair of kind `R` the entity is in.
///
/// ```
/// use tabula::{Entity, Related, Relation, With, World};
///
/// struct Likes;
/// impl Relation for Likes {}
///
/// let mut world = World::new();
/// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
/// world.relate::<Likes>(a, b)?;
/// let mut related = world.query_filtered::<Entity, With<Related<Likes>>>();
/// assert_eq!(related.iter(&world).collect::<Vec<_>>(), [a, b]);
///
/// world.remove::<(Related<Likes>,)>(b)?; // unrelates `b`, and so `a` is in no pair either
/// assert!(world.targets::<Likes>(a).is_empty());
/// assert!(!world.has::<Related<Likes>>(a));
/// # let _ = c;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Related<R> {
    _kind: PhantomData<fn() -> R>,
}

impl<R> Related<R> {
    fn new() -> Self {
        Self { _kind: PhantomData }
    }
}

impl<R> fmt::Debug for Related<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Related<{}>", short_type_name(std::any::type_name::<R>()))
    }
}

/// The private resource saying that kind `R`'s hooks are registered in the world (a type
/// users cannot name, so it cannot be removed by mistake).
struct RelationHooks<R>(PhantomData<fn() -> R>);

/// `Related<R>`'s `on_remove` (a despawn, or the marker taken off): the entity's pairs go,
/// and the markers of the partners left with none go by a command.
fn related_removed<R: Relation>(world: &mut HookWorld<'_>, ctx: HookContext) {
    // One lookup, as `resource_mut` (which marks the resource changed): an entity losing its
    // marker is in pairs, except where the world drops the marker of an entity it just
    // took out of its last pair.
    let Ok(relations) = world.resource_mut::<Relations<R>>() else {
        return;
    };
    let orphans = relations.remove_entity(ctx.entity);
    if !orphans.is_empty() {
        world
            .commands()
            .add(move |world: &mut World| drop_markers::<R>(world, &orphans));
    }
}

/// `Related<R>`'s `on_insert`: a marker on an entity in no pair (one moved over from
/// another entity) goes again, by a command.
fn related_inserted<R: Relation>(world: &mut HookWorld<'_>, ctx: HookContext) {
    let entity = ctx.entity;
    if world
        .resource::<Relations<R>>()
        .is_ok_and(|relations| relations.is_related(entity))
    {
        return;
    }
    world
        .commands()
        .add(move |world: &mut World| drop_markers::<R>(world, &[entity]));
}

/// Removes the `Related<R>` marker of each of `entities` that is alive, holds one, and is
/// in no pair (checked when applied: a command before may have related it again).
fn drop_markers<R: Relation>(world: &mut World, entities: &[Entity]) {
    for &entity in entities {
        let related = world
            .resource::<Relations<R>>()
            .is_ok_and(|relations| relations.is_related(entity));
        if !related && world.has::<Related<R>>(entity) {
            // Alive and holding the marker: the removal cannot fail.
            let _ = world.remove::<(Related<R>,)>(entity);
        }
    }
}

impl World {
    /// Makes relation kind `R` known to the world: inserts its (empty) [`Relations<R>`]
    /// resource, so that systems can read it before the first pair, and registers the hooks
    /// of its [`Related<R>`] marker. [`relate`](Self::relate) does this on first use; calling
    /// it again does nothing.
    ///
    /// ```
    /// use tabula::{Relation, Relations, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// world.register_relation::<Likes>();
    /// assert!(world.resource::<Relations<Likes>>()?.is_empty());
    /// # Ok::<(), tabula::ResourceError>(())
    /// ```
    pub fn register_relation<R: Relation>(&mut self) {
        if !self.contains_resource::<Relations<R>>() {
            self.insert_resource(Relations::<R>::new());
        }
        if self.contains_resource::<RelationHooks<R>>() {
            return;
        }
        self.insert_resource(RelationHooks::<R>(PhantomData));
        self.register_component::<Related<R>>()
            .on_insert(related_inserted::<R>)
            .on_remove(related_removed::<R>);
    }

    /// Relates `source` to `target` with kind `R`: `target` joins the end of `source`'s
    /// targets and `source` the end of `target`'s sources, and each gets the [`Related<R>`]
    /// marker if it had none. Returns false, changing nothing, when the pair was there. An
    /// entity may be related to itself (see [`Relations`]).
    ///
    /// Fails with the [`EntityError`] naming `source` or `target` when either is dead or
    /// from another world; the world is then unchanged.
    ///
    /// ```
    /// use tabula::{EntityError, Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b] = [(); 2].map(|()| world.spawn(()));
    /// assert_eq!(world.relate::<Likes>(a, b), Ok(true));
    /// assert_eq!(world.relate::<Likes>(a, b), Ok(false)); // already there
    /// assert_eq!(world.relate::<Likes>(a, a), Ok(true)); // self pairs are allowed
    /// world.despawn(b)?;
    /// assert_eq!(world.relate::<Likes>(a, b), Err(EntityError::NoSuchEntity(b)));
    /// # Ok::<(), EntityError>(())
    /// ```
    pub fn relate<R: Relation>(&mut self, source: Entity, target: Entity) -> Result<bool, EntityError> {
        self.flush();
        self.location(source)?;
        self.location(target)?;
        self.register_relation::<R>();
        if self.is_related::<R>(source, target) {
            return Ok(false);
        }
        self.relations_mut::<R>().insert(source, target);
        self.mark_related::<R>(source);
        if target != source {
            self.mark_related::<R>(target);
        }
        Ok(true)
    }

    /// Removes the pair `(source, target)` of kind `R`; an entity left in no pair of the kind
    /// loses its [`Related<R>`] marker. Returns false, changing nothing, when the pair was
    /// not there.
    ///
    /// Fails with the [`EntityError`] naming `source` or `target` when either is dead or
    /// from another world.
    ///
    /// ```
    /// use tabula::{Related, Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// world.relate::<Likes>(a, c)?;
    /// assert_eq!(world.unrelate::<Likes>(a, b), Ok(true));
    /// assert_eq!(world.unrelate::<Likes>(a, b), Ok(false));
    /// assert_eq!(world.targets::<Likes>(a), &[c]);
    /// assert!(!world.has::<Related<Likes>>(b) && world.has::<Related<Likes>>(a));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn unrelate<R: Relation>(&mut self, source: Entity, target: Entity) -> Result<bool, EntityError> {
        self.flush();
        self.location(source)?;
        self.location(target)?;
        if !self.is_related::<R>(source, target) {
            return Ok(false);
        }
        self.relations_mut::<R>().remove(source, target);
        drop_markers::<R>(self, &[source, target]);
        Ok(true)
    }

    /// Removes every pair of kind `R` that `entity` is in, as source or target, and returns
    /// how many there were; the entity and every partner left in no pair lose their
    /// [`Related<R>`] marker. Fails with [`EntityError`] when `entity` is dead or from
    /// another world.
    ///
    /// ```
    /// use tabula::{Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// world.relate::<Likes>(c, a)?;
    /// world.relate::<Likes>(c, b)?;
    /// assert_eq!(world.unrelate_all::<Likes>(a), Ok(2));
    /// assert_eq!(world.sources::<Likes>(b), &[c]);
    /// assert!(world.sources::<Likes>(a).is_empty());
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn unrelate_all<R: Relation>(&mut self, entity: Entity) -> Result<usize, EntityError> {
        self.flush();
        self.location(entity)?;
        let Ok(relations) = self.resource::<Relations<R>>() else {
            return Ok(0);
        };
        if !relations.is_related(entity) {
            return Ok(0);
        }
        let before = relations.len();
        let relations = self.relations_mut::<R>();
        let mut unmarked = relations.remove_entity(entity);
        let removed = before - relations.len();
        unmarked.insert(0, entity);
        drop_markers::<R>(self, &unmarked);
        Ok(removed)
    }

    /// The targets of `source` for kind `R`, in the order the pairs were made; empty when
    /// there are none, or `source` is dead or from another world. Constant time (one
    /// resource lookup, one sparse-set lookup); in a loop, look up [`Relations<R>`] once and call its
    /// [`targets`](Relations::targets).
    ///
    /// ```
    /// use tabula::{Relation, World};
    ///
    /// struct Targets;
    /// impl Relation for Targets {}
    ///
    /// let mut world = World::new();
    /// let [turret, a, b] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Targets>(turret, b)?;
    /// world.relate::<Targets>(turret, a)?;
    /// assert_eq!(world.targets::<Targets>(turret), &[b, a]);
    /// assert!(world.targets::<Targets>(a).is_empty());
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn targets<R: Relation>(&self, source: Entity) -> &[Entity] {
        self.resource::<Relations<R>>()
            .map_or(&[], |relations| relations.targets(source))
    }

    /// The sources related to `target` with kind `R`, in the order the pairs were made;
    /// empty when there are none, or `target` is dead or from another world. Constant time,
    /// as [`targets`](Self::targets).
    ///
    /// ```
    /// use tabula::{Relation, World};
    ///
    /// struct Targets;
    /// impl Relation for Targets {}
    ///
    /// let mut world = World::new();
    /// let [boss, a, b] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Targets>(a, boss)?;
    /// world.relate::<Targets>(b, boss)?;
    /// assert_eq!(world.sources::<Targets>(boss), &[a, b]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn sources<R: Relation>(&self, target: Entity) -> &[Entity] {
        self.resource::<Relations<R>>()
            .map_or(&[], |relations| relations.sources(target))
    }

    /// True when `source` is related to `target` with kind `R` (in that direction); false
    /// for dead entities.
    ///
    /// ```
    /// use tabula::{Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b] = [(); 2].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// assert!(world.is_related::<Likes>(a, b));
    /// assert!(!world.is_related::<Likes>(b, a));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn is_related<R: Relation>(&self, source: Entity, target: Entity) -> bool {
        self.resource::<Relations<R>>()
            .is_ok_and(|relations| relations.contains(source, target))
    }

    /// Kind `R`'s pairs, to change; the kind is registered.
    fn relations_mut<R: Relation>(&mut self) -> &mut Relations<R> {
        self.resource_mut::<Relations<R>>()
            .expect("register_relation inserts the Relations resource")
    }

    /// Gives `entity` (alive) the `Related<R>` marker if it has none.
    fn mark_related<R: Relation>(&mut self, entity: Entity) {
        if !self.has::<Related<R>>(entity) {
            // `entity` was alive when the pair was made. If a hook of the other side's
            // marker despawned it meanwhile, its pairs are gone with it and the insert fails:
            // nothing is left to mark.
            let _ = self.insert(entity, (Related::<R>::new(),));
        }
    }
}

/// The command `$name`: `$apply(world)`, its error reported for `$entity`.
fn relation_command(
    name: &'static str,
    entity: Entity,
    apply: impl FnOnce(&mut World) -> Result<(), EntityError> + Send + 'static,
) -> impl crate::command::Command {
    Fallible(move |world: &mut World| {
        apply(world).map_err(|error| CommandError::Entity {
            command: name,
            entity,
            error,
        })
    })
}

impl Commands<'_, '_> {
    /// Records [`World::relate`]: relates `source` to `target` with kind `R` when applied.
    /// A dead entity makes it fail, reported as a [`CommandError`] for `source`. From a
    /// component hook, `world.commands().relate::<R>(..)` relates entities (the hook itself
    /// cannot: a pair may add a marker component).
    ///
    /// ```
    /// use tabula::{CommandQueue, Commands, Relation, World};
    ///
    /// struct Targets;
    /// impl Relation for Targets {}
    ///
    /// let mut world = World::new();
    /// let boss = world.spawn(());
    /// let mut queue = CommandQueue::new();
    /// let mut commands = Commands::new(&mut queue, &world);
    /// let unit = commands.spawn(()).id();
    /// commands.relate::<Targets>(unit, boss);
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert_eq!(world.targets::<Targets>(unit), &[boss]);
    /// ```
    pub fn relate<R: Relation>(&mut self, source: Entity, target: Entity) {
        self.add(relation_command("relate", source, move |world| {
            world.relate::<R>(source, target).map(drop)
        }));
    }

    /// Records [`World::unrelate`]: removes the pair `(source, target)` of kind `R` when
    /// applied; a dead entity makes it fail, reported for `source`.
    ///
    /// ```
    /// use tabula::{CommandQueue, Commands, Relation, World};
    ///
    /// struct Targets;
    /// impl Relation for Targets {}
    ///
    /// let mut world = World::new();
    /// let [unit, boss] = [(); 2].map(|()| world.spawn(()));
    /// world.relate::<Targets>(unit, boss)?;
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).unrelate::<Targets>(unit, boss);
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert!(world.targets::<Targets>(unit).is_empty());
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn unrelate<R: Relation>(&mut self, source: Entity, target: Entity) {
        self.add(relation_command("unrelate", source, move |world| {
            world.unrelate::<R>(source, target).map(drop)
        }));
    }

    /// Records [`World::unrelate_all`]: removes every pair of kind `R` that `entity` is in
    /// when applied; a dead entity makes it fail.
    ///
    /// ```
    /// use tabula::{CommandQueue, Commands, Relation, World};
    ///
    /// struct Targets;
    /// impl Relation for Targets {}
    ///
    /// let mut world = World::new();
    /// let [a, b, c] = [(); 3].map(|()| world.spawn(()));
    /// world.relate::<Targets>(a, b)?;
    /// world.relate::<Targets>(c, a)?;
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).unrelate_all::<Targets>(a);
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert!(world.sources::<Targets>(a).is_empty() && world.targets::<Targets>(a).is_empty());
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn unrelate_all<R: Relation>(&mut self, entity: Entity) {
        self.add(relation_command("unrelate_all", entity, move |world| {
            world.unrelate_all::<R>(entity).map(drop)
        }));
    }
}

impl EntityCommands<'_> {
    /// Records [`World::relate`] with this entity as the source: relates it to `target`
    /// with kind `R` when applied.
    ///
    /// ```
    /// use tabula::{CommandQueue, Commands, Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b] = [(); 2].map(|()| world.spawn(()));
    /// let mut queue = CommandQueue::new();
    /// let mut commands = Commands::new(&mut queue, &world);
    /// let fan = commands.spawn(()).relate::<Likes>(a).relate::<Likes>(b).id();
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert_eq!(world.targets::<Likes>(fan), &[a, b]);
    /// ```
    pub fn relate<R: Relation>(&mut self, target: Entity) -> &mut Self {
        let source = self.id();
        self.add(relation_command("relate", source, move |world| {
            world.relate::<R>(source, target).map(drop)
        }))
    }

    /// Records [`World::unrelate`] with this entity as the source: removes its pair with
    /// `target` of kind `R` when applied.
    ///
    /// ```
    /// use tabula::{CommandQueue, Commands, Relation, World};
    ///
    /// struct Likes;
    /// impl Relation for Likes {}
    ///
    /// let mut world = World::new();
    /// let [a, b] = [(); 2].map(|()| world.spawn(()));
    /// world.relate::<Likes>(a, b)?;
    /// let mut queue = CommandQueue::new();
    /// Commands::new(&mut queue, &world).entity(a).unrelate::<Likes>(b);
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert!(!world.is_related::<Likes>(a, b));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn unrelate<R: Relation>(&mut self, target: Entity) -> &mut Self {
        let source = self.id();
        self.add(relation_command("unrelate", source, move |world| {
            world.unrelate::<R>(source, target).map(drop)
        }))
    }
}

#[cfg(test)]
mod tests;
