//! Components: any `Send + Sync + 'static` value, registered on first use.
//!
//! The registry gives each Rust type a dense [`ComponentId`] and records what type-erased
//! storage needs to know about it: its [`Layout`] and how to drop it ([`ComponentInfo`]).

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
    type_id: TypeId,
    /// Removals of this component are logged ([`World::track_removals`](crate::World::track_removals)).
    logs_removals: bool,
    /// Which kinds of hook the component has, as [`HookKind`] bits (see `world/hooks.rs`).
    hooks: u8,
    /// Values can be replaced by insert but never changed in place
    /// ([`ComponentRegistration::immutable`](crate::ComponentRegistration::immutable)).
    immutable: bool,
}

impl ComponentInfo {
    /// The component's id in its world.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The Rust type name, used in error messages and introspection.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Size and alignment of one value.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The Rust type's id.
    pub fn type_id(&self) -> TypeId {
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

/// The registry of component types known to one world.
#[derive(Debug, Default)]
pub struct Components {
    infos: Vec<ComponentInfo>,
    by_type: TypeIdMap<ComponentId>,
}

impl Components {
    /// The id of `T`, registering it on first use.
    pub fn register<T: Component>(&mut self) -> ComponentId {
        let type_id = TypeId::of::<T>();
        if let Some(&id) = self.by_type.get(&type_id) {
            return id;
        }
        let id = ComponentId(u32::try_from(self.infos.len()).expect("too many component types"));
        self.infos.push(ComponentInfo {
            id,
            name: type_name::<T>(),
            layout: Layout::new::<T>(),
            drop: std::mem::needs_drop::<T>().then_some(drop_erased::<T> as unsafe fn(*mut u8)),
            type_id,
            logs_removals: false,
            hooks: 0,
            immutable: false,
        });
        self.by_type.insert(type_id, id);
        id
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
