//! One world and what the harness keeps for it: the model it must match, its counting types'
//! accounting, the checker and the queries kept across steps; and its checks (the checker's,
//! its buffered events, [the slot bound](super#the-slot-bound)) and the error it must give
//! for an id it does not hold.

use std::collections::BTreeSet;
use std::sync::Arc;

use tabula::{Entity, EntityError, Events, HookContext, HookWorld, World};

use super::commands::CmdLog;
use super::queries::KeptQueries;
use super::reactions::ObserverLog;
use super::schedules::{Gates, ReadLog, Script};
use super::{LANES, Ping};
use crate::check::Checker;
use crate::components::{Hp, ModelComponent, Name, Shared, Tracked};
use crate::model::Model;

/// The tags of the harness's two worlds: fixed, so that a run's ids do not depend on how
/// many worlds the process made before it, and distinct, so that each world refuses the
/// other's ids.
const WORLD_TAGS: [u8; 2] = [0, 1];

/// An id of the world tagged `tag` never handed out: its index lies far past any slot a run
/// can reach.
pub(super) fn never_issued(tag: u8) -> Entity {
    let word = (u64::from(tag) << 24) | 5;
    Entity::from_bits((word << 32) | 0x00ff_fff0).expect("a nonzero generation")
}

/// `entity` as another world would have made it: the same index and generation, another
/// tag.
pub(super) fn alien(entity: Entity) -> Entity {
    Entity::from_bits(entity.to_bits() ^ (1 << 56)).expect("a nonzero generation")
}

/// The entities holding a [`Name`], kept by `Name`'s `on_add` and `on_remove` hooks: equal
/// to the model's holders after every op exactly when the hooks ran once for every gain and
/// loss, from every path the ops take (spawns, inserts, removes, batches, despawns, `clear`,
/// commands, schedule runs).
#[derive(Default)]
struct NameHolders(BTreeSet<Entity>);

fn name_added(world: &mut HookWorld<'_>, ctx: HookContext) {
    let fresh = world
        .resource_mut::<NameHolders>()
        .expect("inserted in Side::new")
        .0
        .insert(ctx.entity);
    assert!(fresh, "on_add ran twice for {:?}'s Name", ctx.entity);
}

fn name_removed(world: &mut HookWorld<'_>, ctx: HookContext) {
    let held = world
        .resource_mut::<NameHolders>()
        .expect("inserted in Side::new")
        .0
        .remove(&ctx.entity);
    assert!(
        held,
        "on_remove ran for {:?}'s Name, which on_add never saw",
        ctx.entity
    );
}

/// One world and the model it must match.
pub(super) struct Side {
    /// 0 for the first world, 1 for the second.
    pub(super) index: u8,
    pub(super) world: World,
    pub(super) model: Model,
    pub(super) shared: Arc<Shared>,
    checker: Checker,
    /// The queries of `Op::Query`.
    pub(super) queries: KeptQueries,
    /// Changed since its last full check: the first world is checked after every op, the
    /// second after the ops that ran on it.
    pub(super) touched: bool,
}

impl Side {
    /// An empty world tagged `WORLD_TAGS[index]`, with its resources, events and checker.
    /// With `sparse_markers`, `Tag` and `Small` are stored in sparse sets.
    pub(super) fn new(index: u8, sparse_markers: bool) -> Self {
        let tag = WORLD_TAGS[usize::from(index)];
        let shared = Arc::new(Shared::default());
        let mut world = World::with_tag(tag);
        if sparse_markers {
            world.register_component::<crate::Tag>().sparse_set();
            world.register_component::<crate::Small>().sparse_set();
        }
        world.insert_resource(Script {
            shared: shared.clone(),
            tag,
            ..Script::default()
        });
        world.insert_resource(CmdLog::default());
        world.insert_resource(ReadLog::default());
        world.insert_resource(Gates::default());
        world.add_event::<Ping>();
        world.init_resource::<NameHolders>();
        world.init_resource::<ObserverLog>();
        world
            .register_component::<Name>()
            .on_add(name_added)
            .on_remove(name_removed);
        let mut model = Model::default();
        // Removal logs that fill with every removal and despawn of these, and are aged by
        // every completed run: the soak watches that they stay bounded. `Op::TrackRemovals`
        // tracks more.
        world.track_removals::<Hp>();
        model.track_removals(Hp::KIND);
        world.track_removals::<Tracked>();
        model.track_removals(Tracked::KIND);
        let checker = Checker::new(&mut world);
        Self {
            index,
            queries: KeptQueries::new(&mut world),
            world,
            model,
            shared,
            checker,
            touched: false,
        }
    }

    /// The full check of this world (see [`Checker::check`]), its buffered events, and the
    /// slot bound.
    pub(super) fn check(&mut self) {
        self.checker.check(&self.world, &self.model, &self.shared);
        self.check_hooks();
        self.check_links(true);
        self.check_events();
        self.check_slots();
        self.touched = false;
    }

    /// A cheap check (see [`Checker::check_sample`]), the buffered events and the slot bound.
    pub(super) fn check_sample(&mut self, sample: usize, salt: usize) {
        (self.checker).check_sample(&self.world, &self.model, &self.shared, sample, salt);
        self.check_links(false);
        self.check_events();
        self.check_slots();
    }

    /// The hook-kept holders of [`Name`] are the model's.
    fn check_hooks(&self) {
        let kept = &self.world.resource::<NameHolders>().expect("inserted in new").0;
        let model: BTreeSet<Entity> = (self.model.rows())
            .filter(|(_, row)| row[Name::KIND].is_some())
            .map(|(e, _)| e)
            .collect();
        assert_eq!(
            kept, &model,
            "world {}: the holders Name's hooks kept",
            self.index
        );
    }

    fn check_events(&self) {
        let buffered = self.world.resource::<Events<Ping>>().expect("added in new").len();
        assert_eq!(
            buffered,
            self.model.events.len(),
            "world {}: buffered events",
            self.index
        );
    }

    /// [The slot bound](super#the-slot-bound): this world has at most [`LANES`] reservation
    /// lanes and at most `peak + 2 * LANES * burst` entity slots, however often schedules
    /// moved between the worlds; and every live entity's index is below its slot count.
    fn check_slots(&self) {
        let lanes = self.world.entity_lane_count();
        assert!(
            lanes <= LANES,
            "world {}: {lanes} entity reservation lanes, more than the {LANES} it ever needs at once \
             (the shared lane and one per schedule's command system): the lanes of schedules that \
             left this world are not being reused",
            self.index
        );
        let slots = self.world.entity_slots();
        let (peak, burst) = (self.model.peak(), self.model.burst());
        let bound = peak + 2 * LANES * burst;
        assert!(
            slots <= bound,
            "world {}: {slots} entity slots, past the bound {bound} = peak {peak} live-or-reserved \
             + 2 * {LANES} lanes * burst {burst} reservations between two flushes",
            self.index
        );
        if let Some(highest) = self.model.highest_index() {
            assert!(
                (highest as usize) < slots,
                "world {}: entity index {highest} was live, but the world has only {slots} slots",
                self.index
            );
        }
    }

    /// The tag of this side's world.
    pub(super) fn tag(&self) -> u8 {
        WORLD_TAGS[usize::from(self.index)]
    }

    /// The error a call on this world must return for `entity`, which is not live here:
    /// another world's id is refused as such, before any lookup.
    pub(super) fn absent(&self, entity: Entity) -> EntityError {
        if entity.world_tag() == self.tag() {
            EntityError::NoSuchEntity(entity)
        } else {
            EntityError::WrongWorld {
                entity,
                world: self.tag(),
            }
        }
    }

    /// The error for a live `entity` that lacks component kind `kind`.
    pub(super) fn missing(entity: Entity, kind: usize) -> EntityError {
        EntityError::MissingComponent {
            entity,
            component: crate::components::kind_name(kind),
        }
    }
}
