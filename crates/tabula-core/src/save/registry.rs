//! The serde registry: stable names and type-erased serde functions, by component id.

use std::any::{Any, type_name};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::component::{Component, ComponentId};
use crate::dynamic::Ptr;
use crate::world::World;

use super::map::{EntityMapper, MapEntities};

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

/// Rewrites the entities held by the value behind a pointer.
///
/// # Safety
/// The pointer points at a valid value of the type the function was made for, which
/// nothing else accesses during the call.
pub(crate) type MapFn = unsafe fn(*mut u8, &mut dyn EntityMapper);

/// [`MapFn`] for `T`.
///
/// # Safety
/// As [`MapFn`], for `T`.
unsafe fn map_erased<T: MapEntities>(value: *mut u8, mapper: &mut dyn EntityMapper) {
    // SAFETY: the caller's contract: a valid `T`, not aliased during the call.
    unsafe { &mut *value.cast::<T>() }.map_entities(mapper);
}

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
    /// For a type registered with `register_serde_mapped`: rewrites its entities.
    pub(crate) map: Option<MapFn>,
}

/// A saved resource, as a boxed value between reading and committing a load.
pub(crate) type BoxedResource = Box<dyn Any + Send>;

/// One resource's entry: its stable name, its id, and functions made for its type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ResourceEntry {
    pub(crate) name: &'static str,
    pub(crate) id: ComponentId,
    /// The resource as a serialisable value, when the world has it.
    pub(crate) serialize: for<'w> fn(&'w World) -> Option<&'w dyn erased_serde::Serialize>,
    pub(crate) deserialize:
        fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<BoxedResource, erased_serde::Error>,
    /// Inserts a boxed value made by `deserialize` (panics on another type: a bug).
    pub(crate) insert: fn(&mut World, BoxedResource),
    pub(crate) map: Option<fn(&mut BoxedResource, &mut dyn EntityMapper)>,
}

fn serialize_resource<R: Component + Serialize>(world: &World) -> Option<&dyn erased_serde::Serialize> {
    world
        .resource::<R>()
        .ok()
        .map(|r| r as &dyn erased_serde::Serialize)
}

fn deserialize_resource<R: Component + DeserializeOwned>(
    deserializer: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<BoxedResource, erased_serde::Error> {
    Ok(Box::new(erased_serde::deserialize::<R>(deserializer)?))
}

fn insert_resource<R: Component>(world: &mut World, value: BoxedResource) {
    let value = value
        .downcast::<R>()
        .expect("a resource entry's value is of its type");
    world.insert_resource(*value);
}

fn map_resource<R: Component + MapEntities>(value: &mut BoxedResource, mapper: &mut dyn EntityMapper) {
    if let Some(value) = value.downcast_mut::<R>() {
        value.map_entities(mapper);
    }
}

/// Which components are saved, under which names.
#[derive(Debug, Default)]
pub(crate) struct SerdeRegistry {
    /// By component id; `None` for a component that is not saved.
    by_id: Vec<Option<SerdeEntry>>,
    by_name: hashbrown::HashMap<&'static str, ComponentId>,
    /// Saved resources, in registration order (the order a save writes them in).
    pub(crate) resources: Vec<ResourceEntry>,
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

    /// The resource saved under `name`.
    pub(crate) fn resource_by_name(&self, name: &str) -> Option<&ResourceEntry> {
        self.resources.iter().find(|entry| entry.name == name)
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
        self.register_serde_with::<T>(name, None)
    }

    /// As [`register_serde`](Self::register_serde), for a component holding [`Entity`]
    /// values: a [remapped load](Self::load_remapped) rewrites them through
    /// [`MapEntities`], so they name the entities' new ids. The hierarchy's
    /// [`Parent`](crate::Parent) and [`Children`](crate::Children) are registered this way
    /// (and a user relationship and its target likewise, implementing `MapEntities`).
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::{Entity, EntityMapper, MapEntities, World};
    ///
    /// #[derive(Serialize, Deserialize)]
    /// struct Follows(Entity);
    ///
    /// impl MapEntities for Follows {
    ///     fn map_entities(&mut self, mapper: &mut dyn EntityMapper) {
    ///         self.0.map_entities(mapper);
    ///     }
    /// }
    ///
    /// let mut world = World::new();
    /// world.register_serde_mapped::<Follows>("Follows");
    /// ```
    ///
    /// [`Entity`]: crate::Entity
    ///
    /// # Panics
    /// As [`register_serde`](Self::register_serde).
    #[track_caller]
    pub fn register_serde_mapped<T: Component + Serialize + DeserializeOwned + MapEntities>(
        &mut self,
        name: &'static str,
    ) -> ComponentId {
        self.register_serde_with::<T>(name, Some(map_erased::<T>))
    }

    /// Registers a resource for save and load under the stable `name`: a
    /// [snapshot](Self::snapshot) writes it (with its ticks) when the world has it, and a
    /// load inserts it. Resource names are a namespace of their own, apart from
    /// components'. Registering the same type under the same name again does nothing.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Debug, PartialEq, Serialize, Deserialize)]
    /// struct Score(u32);
    ///
    /// let mut world = World::new();
    /// world.register_serde_resource::<Score>("Score");
    /// world.insert_resource(Score(7));
    /// let json = serde_json::to_string(&world.snapshot()?)?;
    ///
    /// let mut loaded = World::new();
    /// loaded.register_serde_resource::<Score>("Score");
    /// loaded.load(&mut serde_json::Deserializer::from_str(&json))?;
    /// assert_eq!(loaded.resource::<Score>()?, &Score(7));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    /// When `name` already names another resource, or `R` was registered under another
    /// name.
    #[track_caller]
    pub fn register_serde_resource<R: Component + Serialize + DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> ComponentId {
        self.register_serde_resource_with::<R>(name, None)
    }

    /// As [`register_serde_resource`](Self::register_serde_resource), for a resource
    /// holding entities, rewritten by a [remapped load](Self::load_remapped) (see
    /// [`register_serde_mapped`](Self::register_serde_mapped)).
    ///
    /// # Panics
    /// As [`register_serde_resource`](Self::register_serde_resource).
    #[track_caller]
    pub fn register_serde_resource_mapped<R: Component + Serialize + DeserializeOwned + MapEntities>(
        &mut self,
        name: &'static str,
    ) -> ComponentId {
        self.register_serde_resource_with::<R>(name, Some(map_resource::<R>))
    }

    #[track_caller]
    fn register_serde_resource_with<R: Component + Serialize + DeserializeOwned>(
        &mut self,
        name: &'static str,
        map: Option<fn(&mut BoxedResource, &mut dyn EntityMapper)>,
    ) -> ComponentId {
        let id = self.register_resource::<R>();
        let resources = &mut self.serde.resources;
        if let Some(entry) = resources
            .iter()
            .find(|entry| entry.name == name || entry.id == id)
        {
            assert!(
                entry.name == name && entry.id == id,
                "register_serde_resource::<{}>(\"{name}\"): the resource or the name is already \
                 registered (as \"{}\"); a saved resource has one name and a name one resource",
                type_name::<R>(),
                entry.name
            );
            return id;
        }
        resources.push(ResourceEntry {
            name,
            id,
            serialize: serialize_resource::<R>,
            deserialize: deserialize_resource::<R>,
            insert: insert_resource::<R>,
            map,
        });
        id
    }

    #[track_caller]
    fn register_serde_with<T: Component + Serialize + DeserializeOwned>(
        &mut self,
        name: &'static str,
        map: Option<MapFn>,
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
            map,
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
