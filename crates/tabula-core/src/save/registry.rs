//! The serde registry: stable names and type-erased serde functions, by component id.

use std::any::{Any, type_name};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::component::{Component, ComponentId};
use crate::dynamic::Ptr;
use crate::world::World;

use super::map::{EntityMapper, MapEntities};

/// Lends the value behind a pointer as something serialisable; the second argument is the
/// component's size (used by the bytes codec, which has no type).
///
/// # Safety
/// The pointer points at a value of the type the function was made for (of that size).
pub(crate) type SerializeFn = for<'a> unsafe fn(Ptr<'a>, usize) -> Lent<'a>;

/// Deserialises one value and writes it to a pointer, returning `Ok` only once it is written;
/// the last argument is the component's size.
///
/// # Safety
/// The pointer is valid for writes of the type the function was made for (of that size),
/// and aligned for it; whatever it held is overwritten without being dropped.
pub(crate) type DeserializeFn =
    unsafe fn(&mut dyn erased_serde::Deserializer<'_>, *mut u8, usize) -> Result<(), erased_serde::Error>;

/// A component value lent for serialising: a typed value through its `Serialize`, or the
/// bytes of a component registered with [`World::register_serde_bytes`].
#[derive(Clone, Copy)]
pub(crate) enum Lent<'a> {
    Value(&'a dyn erased_serde::Serialize),
    Bytes(&'a [u8]),
}

impl Serialize for Lent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Value(value) => erased_serde::serialize(value, serializer),
            Self::Bytes(bytes) => serializer.serialize_bytes(bytes),
        }
    }
}

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
unsafe fn serialize_erased<T: Serialize + 'static>(ptr: Ptr<'_>, _size: usize) -> Lent<'_> {
    // SAFETY: the caller's contract: the value is a `T` (a `Ptr` keeps it valid and unwritten
    // for its lifetime).
    Lent::Value(unsafe { ptr.deref::<T>() })
}

/// [`DeserializeFn`] for `T`.
///
/// # Safety
/// As [`DeserializeFn`], for `T`.
unsafe fn deserialize_erased<T: DeserializeOwned>(
    deserializer: &mut dyn erased_serde::Deserializer<'_>,
    out: *mut u8,
    _size: usize,
) -> Result<(), erased_serde::Error> {
    let value: T = erased_serde::deserialize(deserializer)?;
    // SAFETY: the caller's contract: `out` is valid and aligned for a `T`.
    unsafe { out.cast::<T>().write(value) };
    Ok(())
}

/// [`SerializeFn`] of the bytes codec.
///
/// # Safety
/// As [`SerializeFn`]; the component was registered with
/// [`World::register_serde_bytes`], whose contract makes all `size` bytes initialised.
unsafe fn serialize_bytes(ptr: Ptr<'_>, size: usize) -> Lent<'_> {
    // SAFETY: the value behind `ptr` is `size` bytes, all initialised (the registration's
    // contract), and `Ptr` keeps them valid and unwritten for its lifetime.
    Lent::Bytes(unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size) })
}

/// [`DeserializeFn`] of the bytes codec: exactly `size` bytes, as a byte string or a
/// sequence of `u8`s (JSON writes bytes as an array of numbers).
///
/// # Safety
/// As [`DeserializeFn`]; any `size` bytes are a valid value of the component
/// ([`World::register_serde_bytes`]'s contract).
unsafe fn deserialize_bytes(
    deserializer: &mut dyn erased_serde::Deserializer<'_>,
    out: *mut u8,
    size: usize,
) -> Result<(), erased_serde::Error> {
    struct Bytes(usize);
    impl<'de> serde::de::Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} bytes", self.0)
        }
        fn visit_bytes<E: serde::de::Error>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
            Ok(bytes.to_vec())
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut bytes = Vec::with_capacity(self.0);
            while let Some(byte) = seq.next_element::<u8>()? {
                if bytes.len() == self.0 {
                    return Err(serde::de::Error::invalid_length(self.0 + 1, &self));
                }
                bytes.push(byte);
            }
            Ok(bytes)
        }
    }
    let bytes = serde::Deserializer::deserialize_bytes(deserializer, Bytes(size))?;
    if bytes.len() != size {
        return Err(serde::de::Error::invalid_length(bytes.len(), &Bytes(size)));
    }
    // SAFETY: the caller's contract: `out` is valid for `size` bytes of writes; the bytes
    // are a fresh vector, not overlapping it.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, size) };
    Ok(())
}

/// One component's entry: its stable name and its serde functions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SerdeEntry {
    pub(crate) name: &'static str,
    /// The component's size, for the functions (the bytes codec needs it).
    pub(crate) size: usize,
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
        let call = format!("register_serde::<{}>(\"{name}\")", type_name::<T>());
        self.set_serde_entry(
            id,
            &call,
            name,
            serialize_erased::<T>,
            deserialize_erased::<T>,
            map,
        );
        id
    }

    /// Registers component `id` — typically a dynamic one
    /// ([`register_component_with_descriptor`](Self::register_component_with_descriptor)),
    /// which has no Rust type to serde through — for save and load under the stable `name`,
    /// saved as its raw bytes: a byte string in formats that have one (postcard), an array of
    /// numbers in JSON. A load checks each value has exactly the component's size. Inspect
    /// and the SQLite export (a `BLOB` column `value`) treat it the same way. Registering
    /// the same id under the same name again does nothing.
    ///
    /// ```
    /// use std::alloc::Layout;
    /// use tabula::{ComponentDescriptor, OwningPtr, World};
    ///
    /// fn registered() -> (World, tabula::ComponentId) {
    ///     let mut world = World::new();
    ///     // SAFETY: plain bytes, no drop.
    ///     let hp = world
    ///         .register_component_with_descriptor(unsafe {
    ///             ComponentDescriptor::new("Hp", Layout::new::<u32>(), None)
    ///         })
    ///         .unwrap();
    ///     // SAFETY: `Hp` values are `u32`s: no padding, and any 4 bytes are a `u32`.
    ///     unsafe { world.register_serde_bytes(hp, "Hp") };
    ///     (world, hp)
    /// }
    ///
    /// let (mut world, hp) = registered();
    /// let e = world.spawn(());
    /// // SAFETY: the value is a `u32`, of `hp`'s layout.
    /// OwningPtr::make(30u32, |value| unsafe { world.insert_by_id(e, hp, value) })?;
    /// let json = serde_json::to_string(&world.snapshot()?)?;
    ///
    /// let (mut loaded, hp) = registered();
    /// loaded.load(&mut serde_json::Deserializer::from_str(&json))?;
    /// // SAFETY: `hp` holds `u32`s.
    /// assert_eq!(unsafe { *loaded.get_by_id(e, hp)?.deref::<u32>() }, 30);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Safety
    /// Every value of component `id` is plain bytes: all of its bytes are initialised (no
    /// padding, no `MaybeUninit`), and any sequence of that many bytes is a valid value (a
    /// load writes whatever the save holds; no pointer, reference, `bool`, `char`, enum
    /// discriminant or other type with invalid bit patterns, and nothing whose meaning is
    /// tied to this process, like an address). An [`Entity`](crate::Entity) inside is saved
    /// as its bits and is not remapped by [`load_remapped`](Self::load_remapped).
    ///
    /// # Panics
    /// When `id` is not a component of this world, when the component has a drop function
    /// (a type that owns something is not plain bytes), or for a name clash as
    /// [`register_serde`](Self::register_serde).
    #[track_caller]
    pub unsafe fn register_serde_bytes(&mut self, id: ComponentId, name: &'static str) {
        assert!(
            id.index() < self.components().len(),
            "register_serde_bytes(\"{name}\"): {id:?} is not a component of this world"
        );
        let info = self.components().info(id);
        assert!(
            info.drop_fn().is_none(),
            "register_serde_bytes(\"{name}\"): component {} has a drop function, so its values \
             own something and are not plain bytes; give it a Rust type and use register_serde",
            info.name()
        );
        let call = format!("register_serde_bytes(\"{name}\") of component {}", info.name());
        self.set_serde_entry(id, &call, name, serialize_bytes, deserialize_bytes, None);
    }

    /// Records component `id`'s serde entry under `name`, refusing a name clash (`call` says
    /// which registration, in the message).
    #[track_caller]
    fn set_serde_entry(
        &mut self,
        id: ComponentId,
        call: &str,
        name: &'static str,
        serialize: SerializeFn,
        deserialize: DeserializeFn,
        map: Option<MapFn>,
    ) {
        let size = self.components().info(id).layout().size();
        let registry = &mut self.serde;
        if let Some(&taken) = registry.by_name.get(name)
            && taken != id
        {
            panic!(
                "{call}: the name \"{name}\" already belongs to component {}; give each saved \
                 component its own name",
                self.components().info(taken).name()
            );
        }
        if let Some(entry) = registry.get(id) {
            assert!(
                entry.name == name,
                "{call}: the component is already registered as \"{}\"; a saved component has one \
                 name (keep the first, or register the new name before any save)",
                entry.name
            );
            return;
        }
        if registry.by_id.len() <= id.index() {
            registry.by_id.resize(id.index() + 1, None);
        }
        registry.by_id[id.index()] = Some(SerdeEntry {
            name,
            size,
            serialize,
            deserialize,
            map,
        });
        registry.by_name.insert(name, id);
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
