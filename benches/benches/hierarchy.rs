//! `hierarchy`: transform propagation and structural changes in a forest of 1,000 trees,
//! each a root with 5 children, 5 grandchildren under each child and 2 leaves under each
//! grandchild (1 + 5 + 25 + 50 = 81 entities a tree, 81,000 in all), every entity with a
//! `Local` and a `Global` 2D affine transform. Groups:
//!
//! - `propagate_all`: every `Global` = parent's `Global` ∘ own `Local` (a root's: its
//!   `Local`), all 81,000 recomputed every pass;
//! - `propagate_dirty_1pct`: 810 `Local`s (1%) are rewritten before each pass, untimed; the
//!   pass finds them and recomputes their subtrees;
//! - `despawn_recursive`: one tree of 81 despawned from the forest (spawned before each
//!   pass, untimed);
//! - `reparent_1000`: 1,000 leaves, drawn before each pass (untimed), each moved to another
//!   grandchild.
//!
//! The entries:
//!
//! - `tabula`: the public API as game code would use it. Propagation walks down from the
//!   roots (`Query<Entity, Without<Parent>>`) with an explicit stack of
//!   (entity, parent's global), each entity's `(&Local, &mut Global, Option<&Children>)` taken
//!   by `QueryState::get_mut`; the dirty pass starts that walk at each entity of a
//!   `Changed<Local>` query, from its parent's `Global`. `World::despawn_recursive` and
//!   `World::set_parent` for the other two.
//! - `tabula_bfs` (`propagate_all` only): each root's tree in
//!   `World::descendants_breadth_first` order (collected into a reused `Vec`), each entity
//!   reading its parent's `Global` through its `Parent`.
//! - `raw` (the baseline): the same forest as plain `Vec`s indexed by node (locals, globals,
//!   parent, each node's children in a `Vec<u32>`, a list of roots, a free list), walked by
//!   hand with the same kind of stack; dirty nodes are a flag per node, scanned. Its
//!   reparenting checks neither liveness nor cycles (`set_parent` checks both).
//!
//! Both stack walks visit siblings in attach order (they push them reversed).
//!
//! The setup checks that every entry computes the same transforms, bit for bit, that a dirty
//! pass leaves what a full pass would, and that reparenting leaves the same children lists.
//!
//! ```text
//! cargo bench -p tabula-benches --bench hierarchy -- --warm-up-time 1 --measurement-time 3
//! TABULA_BENCH_ROUNDS=300 cargo bench -p tabula-benches --bench hierarchy   # interleaved
//! ```

use std::collections::HashMap;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use tabula::{Changed, Children, Entity, Parent, QueryState, Without, World};

// The forest fits in the caches; `evict_caches` is for groups that do not.
#[allow(dead_code)]
#[macro_use]
mod harness;

use harness::*;

/// Trees in the forest.
const TREES: usize = 1_000;
/// Where each level of a tree starts, in node order within the tree (root, its 5 children,
/// their 25 children, their 50 leaves), and where the tree ends.
const LEVELS: [usize; 5] = [0, 1, 6, 31, 81];
/// Nodes per tree.
const PER_TREE: usize = LEVELS[4];
/// Nodes in the forest.
const NODES: usize = TREES * PER_TREE;
/// `Local`s rewritten before each `propagate_dirty_1pct` pass.
const DIRTY: usize = NODES / 100;
/// Leaves moved by each `reparent_1000` pass.
const MOVES: usize = 1_000;
/// Marks a raw node without a parent.
const NO_PARENT: u32 = u32::MAX;

/// A 2D affine transform: `(x, y)` maps to `(a x + c y + tx, b x + d y + ty)`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Affine {
    a: f32,
    b: f32,
    c: f32,
    d: f32,
    tx: f32,
    ty: f32,
}

impl Affine {
    const IDENTITY: Self = Self {
        a: 1.0,
        b: 0.0,
        c: 0.0,
        d: 1.0,
        tx: 0.0,
        ty: 0.0,
    };

    /// Scale by `scale`, rotate by `angle`, then move by `(x, y)`.
    fn new(x: f32, y: f32, angle: f32, scale: f32) -> Self {
        let (sin, cos) = angle.sin_cos();
        Self {
            a: scale * cos,
            b: scale * sin,
            c: -scale * sin,
            d: scale * cos,
            tx: x,
            ty: y,
        }
    }

    /// `self ∘ child`: the child's space mapped straight to where `self` maps. A node's
    /// global transform is `parent_global.then(&local)`.
    #[inline]
    fn then(&self, child: &Self) -> Self {
        Self {
            a: self.a * child.a + self.c * child.b,
            b: self.b * child.a + self.d * child.b,
            c: self.a * child.c + self.c * child.d,
            d: self.b * child.c + self.d * child.d,
            tx: self.a * child.tx + self.c * child.ty + self.tx,
            ty: self.b * child.tx + self.d * child.ty + self.ty,
        }
    }
}

/// Where an entity sits in its parent's space.
#[derive(Clone, Copy)]
struct Local(Affine);

/// Where an entity ends up in the world; written only by propagation.
#[derive(Clone, Copy)]
struct Global(Affine);

/// The parent of node `offset` of a tree, as an offset in the same tree; `None` for the root.
fn parent_offset(offset: usize) -> Option<usize> {
    let level = LEVELS.iter().rposition(|&start| start <= offset)?;
    let fanout = [5, 5, 2][level.checked_sub(1)?];
    Some(LEVELS[level - 1] + (offset - LEVELS[level]) / fanout)
}

/// A transform drawn from `rng`: offset within ±10, any angle, scale 0.9–1.1.
fn random_affine(rng: &mut Rng) -> Affine {
    let mut unit = || (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
    Affine::new(
        unit() * 20.0 - 10.0,
        unit() * 20.0 - 10.0,
        unit() * std::f32::consts::TAU,
        0.9 + unit() * 0.2,
    )
}

/// The random choices of each pass, the same sequence for both sides of a group (each side
/// owns one, seeded alike), so that the setup can compare them after the same passes.
struct Draws {
    rng: Rng,
    /// A permutation of the candidates; each draw shuffles its first `k` places.
    candidates: Vec<u32>,
}

impl Draws {
    fn new(candidates: Vec<u32>) -> Self {
        Self {
            rng: Rng(0x9e37_79b9_7f4a_7c15),
            candidates,
        }
    }

    /// `k` distinct candidates, drawn uniformly (a partial Fisher–Yates shuffle).
    fn distinct(&mut self, k: usize) -> &[u32] {
        let n = self.candidates.len();
        for i in 0..k {
            let j = i + (self.rng.next() % (n - i) as u64) as usize;
            self.candidates.swap(i, j);
        }
        &self.candidates[..k]
    }

    /// The dirty nodes of a pass and their new `Local`s.
    fn dirty(&mut self, out: &mut Vec<(u32, Affine)>) {
        out.clear();
        let nodes = self.distinct(DIRTY).to_vec();
        out.extend(nodes.into_iter().map(|node| (node, random_affine(&mut self.rng))));
    }

    /// The moves of a reparent pass: 1,000 distinct leaves, each to a grandchild (of any
    /// tree) other than its current parent, which `parent_of` tells.
    fn moves(&mut self, out: &mut Vec<(u32, u32)>, parent_of: impl Fn(u32) -> u32) {
        out.clear();
        let leaves = self.distinct(MOVES).to_vec();
        for leaf in leaves {
            let tree = (self.rng.next() % TREES as u64) as usize;
            let span = (LEVELS[3] - LEVELS[2]) as u64;
            let mut target = (tree * PER_TREE + LEVELS[2] + (self.rng.next() % span) as usize) as u32;
            if target == parent_of(leaf) {
                // The next grandchild of the same tree.
                let first = (tree * PER_TREE + LEVELS[2]) as u32;
                target = first + (target - first + 1) % span as u32;
            }
            out.push((leaf, target));
        }
    }
}

/// Every node of the forest, for the dirty draws.
fn all_nodes() -> Vec<u32> {
    (0..NODES as u32).collect()
}

/// Every leaf of the forest, for the reparent draws.
fn all_leaves() -> Vec<u32> {
    (0..TREES)
        .flat_map(|tree| (LEVELS[3]..LEVELS[4]).map(move |offset| (tree * PER_TREE + offset) as u32))
        .collect()
}

/// The forest's `Local`s, node by node.
fn forest_locals() -> Vec<Affine> {
    let mut rng = Rng(0x2545_f491);
    (0..NODES).map(|_| random_affine(&mut rng)).collect()
}

/// The forest in a world.
struct TabulaForest {
    world: World,
    /// Node index → entity, for the nodes spawned by `new`, and back.
    ids: Vec<Entity>,
    node_of: HashMap<Entity, u32>,
    /// The first tree's `Local`s, for the trees `prepare_despawn` spawns.
    tree_locals: Vec<Affine>,
    roots: QueryState<Entity, Without<Parent>>,
    nodes: QueryState<(&'static Local, &'static mut Global, Option<&'static Children>)>,
    changed: QueryState<Entity, Changed<Local>>,
    /// Entities to visit, with their parent's global transform.
    stack: Vec<(Entity, Affine)>,
    /// Scratch lists of entities (roots, a walk's order, dirty entities), reused.
    found: Vec<Entity>,
    order: Vec<Entity>,
    draws: Draws,
    dirty: Vec<(u32, Affine)>,
    moves: Vec<(u32, u32)>,
    /// The root of the tree `prepare_despawn` spawned.
    spare: Option<Entity>,
}

impl TabulaForest {
    fn new(locals: &[Affine], draws: Draws) -> Self {
        let mut world = World::new();
        let ids: Vec<Entity> = locals
            .chunks(PER_TREE)
            .flat_map(|tree| spawn_tree(&mut world, tree))
            .collect();
        let node_of = ids
            .iter()
            .enumerate()
            .map(|(node, &id)| (id, node as u32))
            .collect();
        let roots = world.query_filtered::<Entity, Without<Parent>>();
        let nodes = world.query::<(&Local, &mut Global, Option<&Children>)>();
        let changed = world.query_filtered::<Entity, Changed<Local>>();
        let mut forest = Self {
            world,
            ids,
            node_of,
            tree_locals: locals[..PER_TREE].to_vec(),
            roots,
            nodes,
            changed,
            stack: Vec::new(),
            found: Vec::new(),
            order: Vec::new(),
            draws,
            dirty: Vec::new(),
            moves: Vec::new(),
            spare: None,
        };
        // Every `Local` counts as changed until the first dirty pass.
        forest.propagate_dirty();
        forest
    }

    /// Visits the stack's entities and their descendants: each entity's global transform is
    /// its parent's `then` its own local one.
    fn walk(&mut self) {
        while let Some((entity, parent)) = self.stack.pop() {
            let (local, mut global, children) = self.nodes.get_mut(&mut self.world, entity).expect("a node");
            let own = parent.then(&local.0);
            global.0 = own;
            if let Some(children) = children {
                // Reversed, so that the children are visited in attach order, as raw's are.
                self.stack
                    .extend(children.iter().rev().map(|&child| (child, own)));
            }
        }
    }

    fn propagate_all(&mut self) {
        let roots = self.roots.iter(&self.world);
        self.stack.extend(roots.map(|root| (root, Affine::IDENTITY)));
        self.walk();
    }

    /// `propagate_all` through `World::descendants_breadth_first`.
    fn propagate_all_bfs(&mut self) {
        self.found.clear();
        self.found.extend(self.roots.iter(&self.world));
        for &root in &self.found {
            let (local, mut global, _) = self.nodes.get_mut(&mut self.world, root).expect("a root");
            global.0 = Affine::IDENTITY.then(&local.0);
            self.order.clear();
            self.order
                .extend(self.world.descendants_breadth_first(root).expect("a root"));
            for &entity in &self.order {
                let parent = self.world.get::<Parent>(entity).expect("a descendant").get();
                let parent = self.world.get::<Global>(parent).expect("a node").0;
                let (local, mut global, _) = self.nodes.get_mut(&mut self.world, entity).expect("a node");
                global.0 = parent.then(&local.0);
            }
        }
    }

    /// Rewrites the `Local`s of this pass's dirty nodes.
    fn prepare_dirty(&mut self) {
        self.draws.dirty(&mut self.dirty);
        for &(node, local) in &self.dirty {
            self.world
                .get_mut::<Local>(self.ids[node as usize])
                .expect("a node")
                .0 = local;
        }
    }

    /// Recomputes the subtree of every entity whose `Local` changed since the last pass.
    fn propagate_dirty(&mut self) {
        self.found.clear();
        self.found.extend(self.changed.iter(&self.world));
        for i in 0..self.found.len() {
            let entity = self.found[i];
            let parent = match self.world.get::<Parent>(entity) {
                Ok(parent) => self.world.get::<Global>(parent.get()).expect("a node").0,
                Err(_) => Affine::IDENTITY,
            };
            self.stack.push((entity, parent));
            self.walk();
        }
    }

    /// Spawns the tree the next despawn pass despawns (with the first tree's `Local`s).
    fn prepare_despawn(&mut self) {
        let tree = spawn_tree(&mut self.world, &self.tree_locals);
        self.spare = Some(tree[0]);
    }

    fn despawn(&mut self) {
        let root = self.spare.take().expect("prepared");
        self.world.despawn_recursive(root).expect("a live root");
    }

    /// Draws this pass's moves.
    fn prepare_moves(&mut self) {
        let Self {
            world,
            ids,
            node_of,
            draws,
            moves,
            ..
        } = self;
        draws.moves(moves, |leaf| {
            let parent = world.get::<Parent>(ids[leaf as usize]).expect("a leaf");
            node_of[&parent.get()]
        });
    }

    fn reparent(&mut self) {
        for &(leaf, parent) in &self.moves {
            let (leaf, parent) = (self.ids[leaf as usize], self.ids[parent as usize]);
            self.world.set_parent(leaf, parent).expect("live, no loop");
        }
    }
}

/// Spawns one tree (`locals`, one per node, in node order) and returns its entities in node
/// order, the root first.
fn spawn_tree(world: &mut World, locals: &[Affine]) -> Vec<Entity> {
    let mut ids: Vec<Entity> = Vec::with_capacity(PER_TREE);
    for (offset, &local) in locals.iter().enumerate() {
        let node = (Local(local), Global(Affine::IDENTITY));
        let id = match parent_offset(offset) {
            None => world.spawn(node),
            Some(parent) => world.spawn((node.0, node.1, Parent::new(ids[parent]))),
        };
        ids.push(id);
    }
    ids
}

/// The forest as plain `Vec`s, indexed by node.
struct RawForest {
    locals: Vec<Affine>,
    globals: Vec<Affine>,
    /// `NO_PARENT` for a root (and a free slot).
    parents: Vec<u32>,
    children: Vec<Vec<u32>>,
    roots: Vec<u32>,
    dirty: Vec<bool>,
    /// Free slots, reused by `spawn_tree`.
    free: Vec<u32>,
    /// Nodes to visit, with their parent's global transform.
    stack: Vec<(u32, Affine)>,
    /// Nodes to despawn.
    doomed: Vec<u32>,
    draws: Draws,
    moves: Vec<(u32, u32)>,
    tree_locals: Vec<Affine>,
    spare: Option<u32>,
}

impl RawForest {
    fn new(locals: &[Affine], draws: Draws) -> Self {
        let mut forest = Self {
            locals: Vec::with_capacity(NODES),
            globals: Vec::with_capacity(NODES),
            parents: Vec::with_capacity(NODES),
            children: Vec::with_capacity(NODES),
            roots: Vec::with_capacity(TREES),
            dirty: Vec::with_capacity(NODES),
            free: Vec::new(),
            stack: Vec::new(),
            doomed: Vec::new(),
            draws,
            moves: Vec::new(),
            tree_locals: locals[..PER_TREE].to_vec(),
            spare: None,
        };
        for tree in locals.chunks(PER_TREE) {
            forest.spawn_tree(tree);
        }
        forest
    }

    /// Adds one tree (`locals` in node order) and returns its root.
    fn spawn_tree(&mut self, locals: &[Affine]) -> u32 {
        let mut ids = [0u32; PER_TREE];
        for (offset, &local) in locals.iter().enumerate() {
            let parent = parent_offset(offset).map_or(NO_PARENT, |parent| ids[parent]);
            let id = match self.free.pop() {
                Some(id) => {
                    let i = id as usize;
                    self.locals[i] = local;
                    self.globals[i] = Affine::IDENTITY;
                    self.parents[i] = parent;
                    self.dirty[i] = false;
                    id
                }
                None => {
                    self.locals.push(local);
                    self.globals.push(Affine::IDENTITY);
                    self.parents.push(parent);
                    self.children.push(Vec::new());
                    self.dirty.push(false);
                    (self.locals.len() - 1) as u32
                }
            };
            match parent {
                NO_PARENT => self.roots.push(id),
                parent => self.children[parent as usize].push(id),
            }
            ids[offset] = id;
        }
        ids[0]
    }

    /// Visits the stack's nodes and their descendants.
    fn walk(&mut self) {
        while let Some((node, parent)) = self.stack.pop() {
            let i = node as usize;
            let own = parent.then(&self.locals[i]);
            self.globals[i] = own;
            // Reversed, so that the children are visited in attach order: ascending node
            // order here (each tree is numbered level by level), which makes this pass faster
            // than last to first (docs/benchmarks.md).
            self.stack
                .extend(self.children[i].iter().rev().map(|&child| (child, own)));
        }
    }

    fn propagate_all(&mut self) {
        self.stack
            .extend(self.roots.iter().map(|&root| (root, Affine::IDENTITY)));
        self.walk();
    }

    fn prepare_dirty(&mut self) {
        let mut dirty = Vec::new();
        self.draws.dirty(&mut dirty);
        for (node, local) in dirty {
            self.locals[node as usize] = local;
            self.dirty[node as usize] = true;
        }
    }

    fn propagate_dirty(&mut self) {
        for i in 0..self.dirty.len() {
            if !self.dirty[i] {
                continue;
            }
            self.dirty[i] = false;
            let parent = match self.parents[i] {
                NO_PARENT => Affine::IDENTITY,
                parent => self.globals[parent as usize],
            };
            self.stack.push((i as u32, parent));
            self.walk();
        }
    }

    fn prepare_despawn(&mut self) {
        let locals = std::mem::take(&mut self.tree_locals);
        self.spare = Some(self.spawn_tree(&locals));
        self.tree_locals = locals;
    }

    /// Despawns the spare tree: detaches its root, then frees every node of the subtree.
    fn despawn(&mut self) {
        let root = self.spare.take().expect("prepared");
        match self.parents[root as usize] {
            NO_PARENT => {
                let at = self.roots.iter().rposition(|&r| r == root).expect("a root");
                self.roots.swap_remove(at);
            }
            parent => self.children[parent as usize].retain(|&c| c != root),
        }
        self.doomed.push(root);
        while let Some(node) = self.doomed.pop() {
            let i = node as usize;
            self.doomed.append(&mut self.children[i]);
            self.parents[i] = NO_PARENT;
            self.free.push(node);
        }
    }

    fn prepare_moves(&mut self) {
        let parents = &self.parents;
        self.draws.moves(&mut self.moves, |leaf| parents[leaf as usize]);
    }

    /// Moves each leaf to the end of its new parent's children, as `set_parent` does.
    fn reparent(&mut self) {
        for &(child, parent) in &self.moves {
            let old = std::mem::replace(&mut self.parents[child as usize], parent);
            let siblings = &mut self.children[old as usize];
            let at = siblings.iter().position(|&c| c == child).expect("listed");
            siblings.remove(at);
            self.children[parent as usize].push(child);
        }
    }
}

/// One group's state: the forest in a world and as `Vec`s.
struct Forests {
    tabula: TabulaForest,
    raw: RawForest,
}

impl Rounds for Forests {}

/// `placements` of the two forests, each side with the same draws.
fn forests(draws: fn() -> Vec<u32>) -> Vec<Forests> {
    let locals = forest_locals();
    placements(|copy| {
        let (tabula, raw) = in_turn(
            copy,
            || TabulaForest::new(&locals, Draws::new(draws())),
            || RawForest::new(&locals, Draws::new(draws())),
        );
        Forests { tabula, raw }
    })
}

/// Asserts that every node spawned at setup has the same global transform on both sides.
fn assert_same_globals(forests: &Forests, what: &str) {
    let Forests { tabula, raw } = forests;
    for (node, &id) in tabula.ids.iter().enumerate() {
        let global = tabula.world.get::<Global>(id).expect("a node").0;
        assert_eq!(global, raw.globals[node], "{what}: node {node} differs");
    }
}

fn propagate_all(c: &mut Criterion) {
    let mut states = forests(all_nodes);
    // Not timed: both walks compute raw's transforms.
    for state in &mut states {
        state.raw.propagate_all();
        state.tabula.propagate_all();
        assert_same_globals(state, "propagate_all, tabula");
        for global in state
            .tabula
            .world
            .query::<&mut Global>()
            .iter_mut(&mut state.tabula.world)
        {
            global.into_inner().0 = Affine::IDENTITY;
        }
        state.tabula.propagate_all_bfs();
        assert_same_globals(state, "propagate_all, tabula_bfs");
    }
    bench_group!(c, "propagate_all", &mut states, configure |g: &mut BenchmarkGroup<'_, WallTime>| {
        g.sample_size(20);
    }, [
        "raw" => |s: &mut Forests| s.raw.propagate_all();
        "tabula" => |s: &mut Forests| s.tabula.propagate_all();
        "tabula_bfs" => |s: &mut Forests| s.tabula.propagate_all_bfs();
    ]);
}

fn propagate_dirty(c: &mut Criterion) {
    let mut states = forests(all_nodes);
    // Not timed: a dirty pass finds the 1% and leaves what a full pass would.
    for state in &mut states {
        state.raw.propagate_all();
        state.tabula.propagate_all();
        for _ in 0..3 {
            state.raw.prepare_dirty();
            state.raw.propagate_dirty();
            state.tabula.prepare_dirty();
            state.tabula.propagate_dirty();
            assert_eq!(
                state.tabula.found.len(),
                DIRTY,
                "Changed<Local> finds the dirty ones"
            );
            assert_same_globals(state, "propagate_dirty_1pct");
            let after_dirty = state.raw.globals.clone();
            state.raw.propagate_all();
            assert!(
                state.raw.globals == after_dirty,
                "a dirty pass leaves what a full one does"
            );
        }
    }
    bench_group!(c, "propagate_dirty_1pct", &mut states, [
        "raw" => |s: &mut Forests| s.raw.propagate_dirty(), prepare |s: &mut Forests| s.raw.prepare_dirty();
        "tabula" => |s: &mut Forests| s.tabula.propagate_dirty(), prepare |s: &mut Forests| s.tabula.prepare_dirty();
    ]);
}

fn despawn_recursive(c: &mut Criterion) {
    let mut states = forests(all_nodes);
    // Not timed: a pass takes the spare tree and nothing else.
    for state in &mut states {
        for _ in 0..3 {
            state.tabula.prepare_despawn();
            let spare = state.tabula.spare.expect("prepared");
            let tree: Vec<Entity> = std::iter::once(spare)
                .chain(state.tabula.world.descendants(spare).expect("a root"))
                .collect();
            assert_eq!(tree.len(), PER_TREE);
            state.tabula.despawn();
            assert!(tree.iter().all(|&e| !state.tabula.world.contains(e)));
            assert_eq!(state.tabula.world.len() as usize, NODES);
            state.raw.prepare_despawn();
            state.raw.despawn();
            assert_eq!(state.raw.free.len(), PER_TREE);
            assert_eq!(state.raw.roots.len(), TREES);
        }
    }
    bench_group!(c, "despawn_recursive", &mut states, [
        "raw" => |s: &mut Forests| s.raw.despawn(), prepare |s: &mut Forests| s.raw.prepare_despawn();
        "tabula" => |s: &mut Forests| s.tabula.despawn(), prepare |s: &mut Forests| s.tabula.prepare_despawn();
    ]);
}

fn reparent(c: &mut Criterion) {
    let mut states = forests(all_leaves);
    // Not timed: both sides end with the same children, in the same order.
    for state in &mut states {
        for _ in 0..3 {
            state.raw.prepare_moves();
            state.raw.reparent();
            state.tabula.prepare_moves();
            assert_eq!(state.tabula.moves, state.raw.moves);
            state.tabula.reparent();
        }
        let Forests { tabula, raw } = state;
        for (node, &id) in tabula.ids.iter().enumerate() {
            let children = tabula.world.children(id).expect("a node");
            let children: Vec<u32> = children.iter().map(|c| tabula.node_of[c]).collect();
            assert_eq!(children, raw.children[node], "children of node {node}");
        }
    }
    bench_group!(c, "reparent_1000", &mut states, [
        "raw" => |s: &mut Forests| s.raw.reparent(), prepare |s: &mut Forests| s.raw.prepare_moves();
        "tabula" => |s: &mut Forests| s.tabula.reparent(), prepare |s: &mut Forests| s.tabula.prepare_moves();
    ]);
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    propagate_all(&mut c);
    propagate_dirty(&mut c);
    despawn_recursive(&mut c);
    reparent(&mut c);
    c.final_summary();
}
