//! The inspector: a readable dump of every component of one entity.
//!
//! [`World::inspect`] lists an entity's components by name, in the order its archetype stores
//! them (then its sparse-set components, by id), with the value of each component registered
//! for printing with [`World::register_debug`] (a type-erased `Debug` function kept by
//! component id, so that components the world only knows by id are printed too) or, with
//! the `serde` feature, registered for save and load (`World::register_serde`: the value is
//! printed through its `Serialize`, in the form `Debug` prints a derived type; `Debug` wins
//! when both are registered). A component with neither is listed by name alone. The dump
//! borrows the world: it shows the values as they are when printed.

use std::fmt;

use crate::component::{Component, ComponentId};
use crate::entity::Entity;
use crate::error::EntityError;
use crate::location::EntityLocation;
use crate::type_name::short_type_name;
use crate::world::World;

/// Prints the value behind a pointer as `Debug` does.
///
/// # Safety
/// The pointer points at a live value of the type the function was made for.
pub(crate) type DebugFn = unsafe fn(*const u8, &mut fmt::Formatter<'_>) -> fmt::Result;

/// [`DebugFn`] for `T`.
///
/// # Safety
/// `ptr` points at a live `T` that nothing writes while the call runs.
unsafe fn debug_erased<T: fmt::Debug>(ptr: *const u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // SAFETY: the caller's contract: `ptr` is a live, unwritten `T`.
    fmt::Debug::fmt(unsafe { &*ptr.cast::<T>() }, f)
}

impl World {
    /// Lets [`inspect`](Self::inspect) print `T`'s values (registering `T` first if it is
    /// new), and returns its id.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// #[derive(Debug)]
    /// struct Health(u32);
    ///
    /// let mut world = World::new();
    /// world.register_debug::<Health>();
    /// let e = world.spawn((Health(7),));
    /// assert!(world.inspect(e)?.to_string().contains("Health(7)"));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn register_debug<T: Component + fmt::Debug>(&mut self) -> ComponentId {
        let id = self.component_id_or_register::<T>();
        // SAFETY: `id` is `T`'s own id, registered from the type just above, and
        // `debug_erased::<T>` reads a `T`.
        unsafe { self.components_mut().set_debug(id, debug_erased::<T>) };
        id
    }

    /// A readable dump of every component of `entity`: its `Display` form is the entity on
    /// one line, then one line per component, `  name: value` for components registered with
    /// [`register_debug`](Self::register_debug) or (with the `serde` feature) `register_serde`,
    /// and `  name` for the others. Names are the short type names (`Health`, not
    /// `my_game::Health`) or a dynamic component's name. Sparse-set components come after
    /// the archetype's.
    ///
    /// ```
    /// use tabula::World;
    ///
    /// #[derive(Debug)]
    /// struct Position(f32, f32);
    /// struct Ship;
    ///
    /// let mut world = World::new();
    /// world.register_debug::<Position>();
    /// let e = world.spawn((Position(1.0, 2.0), Ship));
    /// let dump = world.inspect(e)?.to_string();
    /// assert!(dump.contains("Position: Position(1.0, 2.0)"));
    /// assert!(dump.lines().any(|line| line.trim() == "Ship"), "listed by name, without a value");
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Errors
    /// [`EntityError::NoSuchEntity`] (or [`EntityError::WrongWorld`]) naming `entity` when it
    /// is not alive in this world.
    pub fn inspect(&self, entity: Entity) -> Result<Inspection<'_>, EntityError> {
        let location = self.location(entity)?;
        Ok(Inspection {
            world: self,
            entity,
            location,
        })
    }
}

/// Every component of one entity, for printing: from [`World::inspect`].
///
/// `Display` prints one component a line; `Debug` (`{:?}`) prints the entity and a map from
/// component names to values (a component with neither a registered `Debug` nor serde
/// functions shows as `..`), and
/// `{:#?}` spreads it over lines.
pub struct Inspection<'w> {
    world: &'w World,
    entity: Entity,
    location: EntityLocation,
}

impl Inspection<'_> {
    /// The entity inspected.
    pub fn entity(&self) -> Entity {
        self.entity
    }

    /// The names of the entity's components, in the order the dump lists them.
    ///
    /// ```
    /// let mut world = tabula::World::new();
    /// let e = world.spawn((1u8, 2.0f32));
    /// let names: Vec<_> = world.inspect(e)?.component_names().collect();
    /// assert_eq!(names.len(), 2);
    /// assert!(names.contains(&"u8") && names.contains(&"f32"));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn component_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.ids().map(|id| self.world.components().info(id).name())
    }

    fn ids(&self) -> impl Iterator<Item = ComponentId> + '_ {
        let sparse = if self.world.sparse.any() {
            self.world.sparse.held_by(self.entity)
        } else {
            Default::default()
        };
        (self.world.archetype_at(self.location).component_ids().iter())
            .copied()
            .chain(sparse)
    }

    /// The short name of component `id` (without the module path of a Rust type).
    fn name(&self, id: ComponentId) -> String {
        short_type_name(self.world.components().info(id).name())
    }

    /// The value of component `id`, printable when it has a `Debug` function or (with the
    /// `serde` feature) serde functions.
    fn value(&self, id: ComponentId) -> Option<Value<'_>> {
        let printer = match self.world.components().info(id).debug_fn() {
            Some(debug) => Printer::Debug(debug),
            #[cfg(feature = "serde")]
            None => Printer::Serde(*self.world.serde.get(id)?),
            #[cfg(not(feature = "serde"))]
            None => return None,
        };
        let ptr = self.world.get_by_id_at(self.entity, self.location, id).ok()?;
        Some(Value { ptr, printer })
    }
}

/// How a component's values are printed.
enum Printer {
    Debug(DebugFn),
    #[cfg(feature = "serde")]
    Serde(crate::save::SerdeEntry),
}

/// One component value and the function that prints it.
struct Value<'w> {
    ptr: crate::dynamic::Ptr<'w>,
    printer: Printer,
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.printer {
            // SAFETY: `debug` was registered for this component's type (`register_debug` sets
            // it for `T`'s own id only), and `ptr` is the entity's live value of it, read
            // through the `&World` the inspection holds (the `Ptr`'s lifetime), so nothing
            // writes or frees it meanwhile.
            Printer::Debug(debug) => unsafe { debug(self.ptr.as_ptr(), f) },
            #[cfg(feature = "serde")]
            Printer::Serde(entry) => {
                // SAFETY: `entry` is this component's (looked up by its id), so its function
                // was made for the value `ptr` points at, of `entry.size` bytes; the `Ptr`
                // keeps it live and unwritten for the call.
                let lent = unsafe { (entry.serialize)(self.ptr, entry.size) };
                fmt::Debug::fmt(&serde_debug::Printed(&lent), f)
            }
        }
    }
}

/// Prints a serde value as `Debug` prints a derived type: `Name { field: value }`,
/// `Name(a, b)`, `[a, b]`, `{k: v}`, `Some(x)`, `"text"`, `Variant(x)`; `{:#?}` spreads it
/// over lines as `Debug` does (through the formatter's builders).
#[cfg(feature = "serde")]
mod serde_debug {
    use std::fmt;

    use serde::ser::{self, Serialize};

    /// A serde value, printed in `Debug`'s form.
    pub(super) struct Printed<'a, T: ?Sized>(pub(super) &'a T);

    impl<T: Serialize + ?Sized> fmt::Debug for Printed<'_, T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.serialize(Printer { f }).map_err(|_| fmt::Error)
        }
    }

    /// A failed write (the formatter's) or a value's own serialisation error.
    #[derive(Debug)]
    pub(super) struct Error;

    impl fmt::Display for Error {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the value could not be printed")
        }
    }

    impl std::error::Error for Error {}

    impl ser::Error for Error {
        fn custom<T: fmt::Display>(_: T) -> Self {
            Self
        }
    }

    impl From<fmt::Error> for Error {
        fn from(_: fmt::Error) -> Self {
            Self
        }
    }

    struct Printer<'a, 'b> {
        f: &'a mut fmt::Formatter<'b>,
    }

    impl Printer<'_, '_> {
        fn debug(self, value: &dyn fmt::Debug) -> Result<(), Error> {
            Ok(value.fmt(self.f)?)
        }
    }

    /// A compound value being printed, through the formatter's `Debug` builders.
    enum Compound<'a, 'b> {
        Struct(fmt::DebugStruct<'a, 'b>),
        Tuple(fmt::DebugTuple<'a, 'b>),
        List(fmt::DebugList<'a, 'b>),
        Map(fmt::DebugMap<'a, 'b>),
    }

    impl Compound<'_, '_> {
        fn element<T: Serialize + ?Sized>(&mut self, value: &T) {
            match self {
                Self::Tuple(t) => {
                    t.field(&Printed(value));
                }
                Self::List(l) => {
                    l.entry(&Printed(value));
                }
                Self::Struct(_) | Self::Map(_) => unreachable!("an element of a sequence or tuple"),
            }
        }

        fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) {
            if let Self::Struct(s) = self {
                s.field(key, &Printed(value));
            }
        }

        fn finish(self) -> Result<(), Error> {
            Ok(match self {
                Self::Struct(mut s) => s.finish(),
                Self::Tuple(mut t) => t.finish(),
                Self::List(mut l) => l.finish(),
                Self::Map(mut m) => m.finish(),
            }?)
        }
    }

    impl<'a, 'b> ser::Serializer for Printer<'a, 'b> {
        type Ok = ();
        type Error = Error;
        type SerializeSeq = Compound<'a, 'b>;
        type SerializeTuple = Compound<'a, 'b>;
        type SerializeTupleStruct = Compound<'a, 'b>;
        type SerializeTupleVariant = Compound<'a, 'b>;
        type SerializeMap = Compound<'a, 'b>;
        type SerializeStruct = Compound<'a, 'b>;
        type SerializeStructVariant = Compound<'a, 'b>;

        fn serialize_bool(self, v: bool) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_i8(self, v: i8) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_i16(self, v: i16) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_i32(self, v: i32) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_i64(self, v: i64) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_i128(self, v: i128) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_u8(self, v: u8) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_u16(self, v: u16) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_u32(self, v: u32) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_u64(self, v: u64) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_u128(self, v: u128) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_f32(self, v: f32) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_f64(self, v: f64) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_char(self, v: char) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_str(self, v: &str) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
            self.debug(&v)
        }
        fn serialize_none(self) -> Result<(), Error> {
            Ok(self.f.write_str("None")?)
        }
        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
            Ok(self.f.debug_tuple("Some").field(&Printed(value)).finish()?)
        }
        fn serialize_unit(self) -> Result<(), Error> {
            Ok(self.f.write_str("()")?)
        }
        fn serialize_unit_struct(self, name: &'static str) -> Result<(), Error> {
            Ok(self.f.write_str(name)?)
        }
        fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
            Ok(self.f.write_str(variant)?)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            name: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            Ok(self.f.debug_tuple(name).field(&Printed(value)).finish()?)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            variant: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            Ok(self.f.debug_tuple(variant).field(&Printed(value)).finish()?)
        }
        fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::List(self.f.debug_list()))
        }
        fn serialize_tuple(self, _: usize) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Tuple(self.f.debug_tuple("")))
        }
        fn serialize_tuple_struct(self, name: &'static str, _: usize) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Tuple(self.f.debug_tuple(name)))
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            variant: &'static str,
            _: usize,
        ) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Tuple(self.f.debug_tuple(variant)))
        }
        fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Map(self.f.debug_map()))
        }
        fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Struct(self.f.debug_struct(name)))
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            variant: &'static str,
            _: usize,
        ) -> Result<Compound<'a, 'b>, Error> {
            Ok(Compound::Struct(self.f.debug_struct(variant)))
        }
    }

    impl ser::SerializeSeq for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.element(value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeTuple for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.element(value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeTupleStruct for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.element(value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeTupleVariant for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            self.element(value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeMap for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
            if let Self::Map(m) = self {
                m.key(&Printed(key));
            }
            Ok(())
        }
        fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
            if let Self::Map(m) = self {
                m.value(&Printed(value));
            }
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeStruct for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            self.field(key, value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }

    impl ser::SerializeStructVariant for Compound<'_, '_> {
        type Ok = ();
        type Error = Error;
        fn serialize_field<T: Serialize + ?Sized>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), Error> {
            self.field(key, value);
            Ok(())
        }
        fn end(self) -> Result<(), Error> {
            self.finish()
        }
    }
}

/// Stands for a value that has no `Debug` function.
struct Unprintable;

impl fmt::Debug for Unprintable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("..")
    }
}

impl fmt::Display for Inspection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "entity {}", self.entity)?;
        for id in self.ids() {
            match self.value(id) {
                Some(value) => writeln!(f, "  {}: {value:?}", self.name(id))?,
                None => writeln!(f, "  {}", self.name(id))?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Inspection<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Components<'a, 'w>(&'a Inspection<'w>);
        impl fmt::Debug for Components<'_, '_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let mut map = f.debug_map();
                for id in self.0.ids() {
                    match self.0.value(id) {
                        Some(value) => map.entry(&self.0.name(id), &value),
                        None => map.entry(&self.0.name(id), &Unprintable),
                    };
                }
                map.finish()
            }
        }
        f.debug_struct("Inspection")
            .field("entity", &self.entity)
            .field("components", &Components(self))
            .finish()
    }
}
