//! The serde registry: stable names and type-erased serde functions, by component id.

use std::any::type_name;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::component::{Component, ComponentId};
use crate::dynamic::Ptr;
use crate::world::World;

/// Lends the value behind a pointer as a serialisable trait object.
///
/// # Safety
/// The pointer points at a value of the type the function was made for.
pub(crate) type SerializeFn = for<'a> unsafe fn(Ptr<'a>) -> &'a dyn erased_serde::Serialize;

/// Deserialises one value and writes it to a pointer, returning `Ok` only once it is written.
///
/// # Safety
/// The pointer is valid for writes of the type the function was made for, and aligned for
/// it; whatever it held is overwritten without being dropped.
pub(crate) type DeserializeFn =
    unsafe fn(&mut dyn erased_serde::Deserializer<'_>, *mut u8) -> Result<(), erased_serde::Error>;

/// [`SerializeFn`] for `T`.
///
/// # Safety
/// As [`SerializeFn`], for `T`.
unsafe fn serialize_erased<T: Serialize + 'static>(ptr: Ptr<'_>) -> &'_ dyn erased_serde::Serialize {
    // SAFETY: the caller's contract: the value is a `T` (a `Ptr` keeps it valid and unwritten
    // for its lifetime).
    unsafe { ptr.deref::<T>() }
}

/// [`DeserializeFn`] for `T`.
///
/// # Safety
/// As [`DeserializeFn`], for `T`.
unsafe fn deserialize_erased<T: DeserializeOwned>(
    deserializer: &mut dyn erased_serde::Deserializer<'_>,
    out: *mut u8,
) -> Result<(), erased_serde::Error> {
    let value: T = erased_serde::deserialize(deserializer)?;
    // SAFETY: the caller's contract: `out` is valid and aligned for a `T`.
    unsafe { out.cast::<T>().write(value) };
    Ok(())
}

/// One component's entry: its stable name and its serde functions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SerdeEntry {
    pub(crate) name: &'static str,
    pub(crate) serialize: SerializeFn,
    pub(crate) deserialize: DeserializeFn,
}

/// Which components are saved, under which names.
#[derive(Debug, Default)]
pub(crate) struct SerdeRegistry {
    /// By component id; `None` for a component that is not saved.
    by_id: Vec<Option<SerdeEntry>>,
    by_name: hashbrown::HashMap<&'static str, ComponentId>,
}

impl SerdeRegistry {
    /// The entry of component `id`, when it is registered for serde.
    pub(crate) fn get(&self, id: ComponentId) -> Option<&SerdeEntry> {
        self.by_id.get(id.index())?.as_ref()
    }

    /// The component saved under `name`.
    pub(crate) fn id_by_name(&self, name: &str) -> Option<ComponentId> {
        self.by_name.get(name).copied()
    }
}

impl World {
    /// Registers `T` for save and load under the stable `name` (registering `T` as a
    /// component first if it is new), and returns its id. A save refers to the component by
    /// this name alone — never by Rust path, `TypeId` or layout — so types can move between
    /// modules and be renamed without breaking old saves, as long as the name stays.
    /// Registering the same type under the same name again does nothing.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Position(f32, f32);
    ///
    /// let mut world = World::new();
    /// let id = world.register_serde::<Position>("Position");
    /// assert_eq!(world.component_by_serde_name("Position"), Some(id));
    /// assert_eq!(world.serde_name(id), Some("Position"));
    /// ```
    ///
    /// # Panics
    /// When `name` is already taken by another component, or `T` was registered under
    /// another name: a save needs one name per component and one component per name.
    #[track_caller]
    pub fn register_serde<T: Component + Serialize + DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> ComponentId {
        let id = self.component_id_or_register::<T>();
        let registry = &mut self.serde;
        if let Some(&taken) = registry.by_name.get(name)
            && taken != id
        {
            panic!(
                "register_serde::<{}>(\"{name}\"): the name \"{name}\" already belongs to component {}; \
                 give each saved component its own name",
                type_name::<T>(),
                self.components().info(taken).name()
            );
        }
        if let Some(entry) = registry.get(id) {
            assert!(
                entry.name == name,
                "register_serde::<{}>(\"{name}\"): the type is already registered as \"{}\"; a saved \
                 component has one name (keep the first, or register the new name before any save)",
                type_name::<T>(),
                entry.name
            );
            return id;
        }
        if registry.by_id.len() <= id.index() {
            registry.by_id.resize(id.index() + 1, None);
        }
        registry.by_id[id.index()] = Some(SerdeEntry {
            name,
            serialize: serialize_erased::<T>,
            deserialize: deserialize_erased::<T>,
        });
        registry.by_name.insert(name, id);
        id
    }

    /// The component registered for save and load under `name`
    /// ([`register_serde`](Self::register_serde)).
    pub fn component_by_serde_name(&self, name: &str) -> Option<ComponentId> {
        self.serde.id_by_name(name)
    }

    /// The name component `id` is saved under, when it is registered for save and load.
    pub fn serde_name(&self, id: ComponentId) -> Option<&'static str> {
        self.serde.get(id).map(|entry| entry.name)
    }
}

/// An [`Entity`](crate::Entity) is saved as its 64 bits ([`to_bits`](crate::Entity::to_bits)),
/// so a component holding one round-trips; loading into an empty world keeps every id, so
/// such fields need no remapping there.
impl Serialize for crate::Entity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.to_bits())
    }
}

impl<'de> serde::Deserialize<'de> for crate::Entity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let bits = u64::deserialize(deserializer)?;
        Self::from_bits(bits).ok_or_else(|| {
            serde::de::Error::custom(format_args!(
                "{bits:#x} is not an entity id (its generation is 0)"
            ))
        })
    }
}
