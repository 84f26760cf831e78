//! The inspector: a readable dump of every component of one entity.
//!
//! [`World::inspect`] lists an entity's components by name, in the order its archetype stores
//! them, with the value of each component registered for printing with
//! [`World::register_debug`] (a type-erased `Debug` function kept by component id, so that
//! components the world only knows by id are printed too). A component without one is listed
//! by name alone. The dump borrows the world: it shows the values as they are when printed.

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
    /// [`register_debug`](Self::register_debug) and `  name` for the others. Names are the
    /// short type names (`Health`, not `my_game::Health`) or a dynamic component's name.
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
/// component names to values (a component without a registered `Debug` shows as `..`), and
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
        self.world
            .archetype_at(self.location)
            .component_ids()
            .iter()
            .copied()
    }

    /// The short name of component `id` (without the module path of a Rust type).
    fn name(&self, id: ComponentId) -> String {
        short_type_name(self.world.components().info(id).name())
    }

    /// The value of component `id`, printable when it has a `Debug` function.
    fn value(&self, id: ComponentId) -> Option<Value<'_>> {
        let debug = self.world.components().info(id).debug_fn()?;
        let ptr = self.world.get_by_id_at(self.entity, self.location, id).ok()?;
        Some(Value {
            ptr: ptr.as_ptr(),
            debug,
            _world: std::marker::PhantomData,
        })
    }
}

/// One component value and the function that prints it.
struct Value<'w> {
    ptr: *const u8,
    debug: DebugFn,
    _world: std::marker::PhantomData<&'w World>,
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: `debug` was registered for this component's type (`register_debug` sets it
        // for `T`'s own id only), and `ptr` is the entity's live value of it, read through
        // the `&World` the inspection holds, so nothing writes or frees it meanwhile.
        unsafe { (self.debug)(self.ptr, f) }
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
