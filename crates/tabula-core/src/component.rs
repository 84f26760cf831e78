//! Components: any `Send + Sync + 'static` value, registered on first use.
//!
//! The registry gives each Rust type a dense [`ComponentId`] and records what type-erased
//! storage needs to know about it: its [`Layout`] and how to drop it ([`ComponentInfo`]).
//! Components without a Rust type are registered from a
//! [`ComponentDescriptor`](crate::ComponentDescriptor) (see [`crate::dynamic`]); they have a
//! name and no `TypeId`.

use std::alloc::Layout;
use std::any::{TypeId, type_name};
use std::hash::{BuildHasherDefault, Hasher};

use crate::world::hooks::HookKind;

/// Marker for values that can be stored as components: every `Send + Sync + 'static` type.
/// No derive or registration is needed.
pub trait Component: Send + Sync + 'static {}

impl<T: Send + Sync + 'static> Component for T {}

/// A dense index naming one component type inside one [`World`](crate::World).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId(u32);

impl ComponentId {
    /// The id as an index into dense per-component arrays.
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The id with this dense index (ids are only meaningful within one world).
    pub const fn from_index(index: usize) -> Self {
        Self(index as u32)
    }
}

/// What the storage needs to know about a component type it cannot name.
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    id: ComponentId,
    name: &'static str,
    layout: Layout,
    drop: Option<unsafe fn(*mut u8)>,
    /// `None` for a component registered from a descriptor without a Rust type.
    type_id: Option<TypeId>,
    /// Removals of this component are logged ([`World::track_removals`](crate::World::track_removals)).
    logs_removals: bool,
    /// Which kinds of hook the component has, as [`HookKind`] bits (see `world/hooks.rs`).
    hooks: u8,
    /// Values can be replaced by insert but never changed in place
    /// ([`ComponentRegistration::immutable`](crate::ComponentRegistration::immutable)).
    immutable: bool,
    /// Stored in a sparse set instead of the archetype tables
    /// ([`ComponentRegistration::sparse_set`](crate::ComponentRegistration::sparse_set)).
    sparse: bool,
    /// Prints a value for [`World::inspect`](crate::World::inspect); set by
    /// [`World::register_debug`](crate::World::register_debug) for this component's own type.
    debug: Option<crate::inspect::DebugFn>,
}

impl ComponentInfo {
    /// The component's id in its world.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The Rust type name (or a dynamic component's registered name), used in error
    /// messages, introspection and [`Components::id_by_name`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Size and alignment of one value.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The Rust type's id; `None` for a dynamic component (registered from a
    /// [`ComponentDescriptor`](crate::ComponentDescriptor) without a Rust type).
    pub fn type_id(&self) -> Option<TypeId> {
        self.type_id
    }

    /// True once [`World::track_removals`](crate::World::track_removals) was called for this
    /// component: from then on the world logs every entity that loses it.
    pub fn logs_removals(&self) -> bool {
        self.logs_removals
    }

    /// True when the component has at least one hook of a kind in `kinds` (a mask of
    /// [`HookKind::bit`]s).
    #[inline]
    pub(crate) fn has_hooks(&self, kinds: u8) -> bool {
        self.hooks & kinds != 0
    }

    /// True when the component has a hook of `kind`.
    pub fn has_hook(&self, kind: HookKind) -> bool {
        self.has_hooks(kind.bit())
    }

    /// True when values of this component are never changed in place: they can be replaced
    /// by an insert, and every `&mut` access (`get_mut`, a `&mut T` or `Mut<T>` query term,
    /// `view_mut`) is refused. Set with
    /// [`ComponentRegistration::immutable`](crate::ComponentRegistration::immutable).
    pub fn is_immutable(&self) -> bool {
        self.immutable
    }

    /// True when the component is stored in a sparse set, outside the archetype tables (set
    /// with [`ComponentRegistration::sparse_set`](crate::ComponentRegistration::sparse_set)):
    /// adding or removing it never moves the entity's row, and no archetype lists it.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// struct Stunned;
    /// let mut world = World::new();
    /// let id = world.register_component::<Stunned>().sparse_set().id();
    /// assert!(world.components().info(id).is_sparse());
    /// ```
    pub fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// True when [`World::inspect`](crate::World::inspect) prints this component's values
    /// ([`World::register_debug`](crate::World::register_debug) was called for it).
    pub fn has_debug(&self) -> bool {
        self.debug.is_some()
    }

    /// Prints a value of this component; `None` unless registered with `register_debug`.
    pub(crate) fn debug_fn(&self) -> Option<crate::inspect::DebugFn> {
        self.debug
    }

    /// Drops a value in place; `None` when the type needs no drop.
    pub(crate) fn drop_fn(&self) -> Option<unsafe fn(*mut u8)> {
        self.drop
    }
}

/// Drops the `T` behind `ptr`.
///
/// # Safety
/// `ptr` must point to a valid, initialised `T` that is not used again.
unsafe fn drop_erased<T>(ptr: *mut u8) {
    // SAFETY: the caller guarantees `ptr` is a valid `T` given up to us.
    unsafe { ptr.cast::<T>().drop_in_place() }
}

/// `T`'s drop function for type-erased storage; `None` when `T` needs no drop.
pub(crate) fn drop_fn_of<T>() -> Option<unsafe fn(*mut u8)> {
    std::mem::needs_drop::<T>().then_some(drop_erased::<T> as unsafe fn(*mut u8))
}

/// The registry of component types known to one world.
#[derive(Debug, Default)]
pub struct Components {
    infos: Vec<ComponentInfo>,
    by_type: TypeIdMap<ComponentId>,
    /// Every component by name; a Rust type whose name a dynamic component took first is
    /// found by type only.
    by_name: hashbrown::HashMap<&'static str, ComponentId>,
}

impl Components {
    /// The id of `T`, registering it on first use.
    pub fn register<T: Component>(&mut self) -> ComponentId {
        let type_id = TypeId::of::<T>();
        if let Some(&id) = self.by_type.get(&type_id) {
            return id;
        }
        self.push(
            type_name::<T>(),
            Layout::new::<T>(),
            drop_fn_of::<T>(),
            Some(type_id),
        )
    }

    /// Adds a component. `layout`'s size must be a multiple of its alignment (a column's
    /// row stride is the size), and `drop`, if any, must drop a value of that layout.
    pub(crate) fn push(
        &mut self,
        name: &'static str,
        layout: Layout,
        drop: Option<unsafe fn(*mut u8)>,
        type_id: Option<TypeId>,
    ) -> ComponentId {
        debug_assert_eq!(
            layout,
            layout.pad_to_align(),
            "a column's stride is the value size"
        );
        let id = ComponentId(u32::try_from(self.infos.len()).expect("too many component types"));
        self.infos.push(ComponentInfo {
            id,
            name,
            layout,
            drop,
            type_id,
            logs_removals: false,
            hooks: 0,
            immutable: false,
            sparse: false,
            debug: None,
        });
        if let Some(type_id) = type_id {
            self.by_type.insert(type_id, id);
        }
        self.by_name.entry(name).or_insert(id);
        id
    }

    /// The component registered under `name`: a dynamic component's name, or a Rust type's
    /// full [`type_name`](std::any::type_name) (`"my_game::Position"`). When a dynamic
    /// component took a Rust type's name before the type was first used, the name finds the
    /// dynamic component (the type is still found by [`id`](Self::id)).
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let id = world.register_component::<u32>().id();
    /// assert_eq!(world.components().id_by_name("u32"), Some(id));
    /// assert_eq!(world.components().id_by_name("Health"), None);
    /// ```
    pub fn id_by_name(&self, name: &str) -> Option<ComponentId> {
        self.by_name.get(name).copied()
    }

    /// The component of Rust type `type_id`, if registered.
    pub(crate) fn id_of_type(&self, type_id: TypeId) -> Option<ComponentId> {
        self.by_type.get(&type_id).copied()
    }

    /// The description of `id`, or `None` when no component has that id here.
    pub fn get_info(&self, id: ComponentId) -> Option<&ComponentInfo> {
        self.infos.get(id.index())
    }

    /// The id of `T` if it has been registered.
    #[inline]
    pub fn id<T: Component>(&self) -> Option<ComponentId> {
        self.by_type.get(&TypeId::of::<T>()).copied()
    }

    /// The description of a registered component.
    pub fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    /// Marks `id`'s removals as logged (see [`ComponentInfo::logs_removals`]).
    pub(crate) fn set_logs_removals(&mut self, id: ComponentId) {
        self.infos[id.index()].logs_removals = true;
    }

    /// Marks component `id` as having a hook of `kind` (see `world/hooks.rs`).
    pub(crate) fn set_has_hook(&mut self, id: ComponentId, kind: HookKind) {
        self.infos[id.index()].hooks |= kind.bit();
    }

    /// Marks component `id` immutable (see [`ComponentInfo::is_immutable`]).
    pub(crate) fn set_immutable(&mut self, id: ComponentId) {
        self.infos[id.index()].immutable = true;
    }

    /// Marks component `id` sparse (see [`ComponentInfo::is_sparse`]).
    pub(crate) fn set_sparse(&mut self, id: ComponentId) {
        self.infos[id.index()].sparse = true;
    }

    /// Sets the function that prints `id`'s values for the inspector.
    ///
    /// # Safety
    /// `debug` reads a value of `id`'s type (the type `id` was registered for).
    pub(crate) unsafe fn set_debug(&mut self, id: ComponentId, debug: crate::inspect::DebugFn) {
        self.infos[id.index()].debug = Some(debug);
    }

    /// How many component types are registered.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// True when no component type is registered.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// Every registered component, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &ComponentInfo> {
        self.infos.iter()
    }
}

/// A hash map keyed by [`TypeId`], which is already a good hash: no rehashing needed.
pub(crate) type TypeIdMap<V> = hashbrown::HashMap<TypeId, V, BuildHasherDefault<TypeIdHasher>>;

/// Passes a `TypeId`'s own bits through (it is a hash already); mixes anything else.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not the path `TypeId` takes today (it hashes with one `write_u64`), but correct for
        // any input, wider integers included: FNV-style mixing.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_stable() {
        let mut components = Components::default();
        let a = components.register::<u8>();
        let b = components.register::<String>();
        assert_eq!(components.register::<u8>(), a);
        assert_eq!((a.index(), b.index()), (0, 1));
        assert_eq!(components.id::<String>(), Some(b));
        assert_eq!(components.id::<u16>(), None);
        assert_eq!(components.info(b).name(), "alloc::string::String");
        assert!(components.info(a).drop_fn().is_none());
        assert!(components.info(b).drop_fn().is_some());
    }
}
