//! [`ComponentDescriptor`]: a component described by a name, a layout and a drop function.

use std::alloc::Layout;
use std::any::{TypeId, type_name};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::{LazyLock, Mutex};

use crate::component::{Component, drop_fn_of};

/// What a world needs to store a component it has no Rust type for: a name, the
/// [`Layout`] of one value, and how to drop one. Register it with
/// [`World::register_component_with_descriptor`](crate::World::register_component_with_descriptor);
/// its values are then inserted, read, written and removed by [`ComponentId`](crate::ComponentId)
/// (see [`crate::dynamic`]).
///
/// ```
/// use std::alloc::Layout;
/// use tabula::{ComponentDescriptor, World};
///
/// let mut world = World::new();
/// // SAFETY: no drop function, and plain bytes are `Send` and `Sync`.
/// let health = unsafe { ComponentDescriptor::new("Health", Layout::new::<u32>(), None) };
/// let id = world.register_component_with_descriptor(health)?;
/// assert_eq!(world.components().id_by_name("Health"), Some(id));
/// assert_eq!(world.components().info(id).type_id(), None);
/// # Ok::<(), tabula::DescriptorError>(())
/// ```
#[derive(Clone)]
pub struct ComponentDescriptor {
    pub(crate) name: &'static str,
    pub(crate) layout: Layout,
    pub(crate) drop: Option<unsafe fn(*mut u8)>,
    pub(crate) type_id: Option<TypeId>,
}

impl ComponentDescriptor {
    /// A component with no Rust type: values of `layout`, dropped by `drop` (`None` when they
    /// need no drop). The layout's size is rounded up to a multiple of its alignment, as a
    /// Rust type's is. Zero-sized and over-aligned layouts are fine.
    ///
    /// An owned name is kept for the rest of the process (names are interned: registering
    /// the same name again, in any world, keeps no second copy), so that error messages and
    /// archetype names can hold it as `&'static str` like a Rust type name.
    ///
    /// # Safety
    /// Every value inserted under the component's id must be safe to send to and share
    /// between threads (what `Send + Sync` promises for a Rust type): the world's storage is
    /// read from many threads by parallel queries and systems. `drop`, when given, must be
    /// sound to call once on a pointer to any value inserted under the id, which is not used
    /// again afterwards.
    pub unsafe fn new(
        name: impl Into<Cow<'static, str>>,
        layout: Layout,
        drop: Option<unsafe fn(*mut u8)>,
    ) -> Self {
        let name = match name.into() {
            Cow::Borrowed(name) => name,
            Cow::Owned(name) => intern(name),
        };
        Self {
            name,
            layout: layout.pad_to_align(),
            drop,
            type_id: None,
        }
    }

    /// The descriptor of Rust type `T`: its type name, layout and drop. Registered, it is
    /// `T`'s component, so typed access (`world.get::<T>`) and access by id meet.
    ///
    /// ```
    /// use tabula::{ComponentDescriptor, World};
    ///
    /// let mut world = World::new();
    /// let id = world.register_component_with_descriptor(ComponentDescriptor::of::<String>())?;
    /// assert_eq!(world.components().id::<String>(), Some(id));
    /// # Ok::<(), tabula::DescriptorError>(())
    /// ```
    pub fn of<T: Component>() -> Self {
        Self {
            name: type_name::<T>(),
            layout: Layout::new::<T>(),
            drop: drop_fn_of::<T>(),
            type_id: Some(TypeId::of::<T>()),
        }
    }

    /// The component's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The layout of one value (its size a multiple of its alignment).
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Whether values need a drop.
    pub fn needs_drop(&self) -> bool {
        self.drop.is_some()
    }
}

impl fmt::Debug for ComponentDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentDescriptor")
            .field("name", &self.name)
            .field("layout", &self.layout)
            .field("needs_drop", &self.needs_drop())
            .field("typed", &self.type_id.is_some())
            .finish()
    }
}

/// Why [`World::register_component_with_descriptor`](crate::World::register_component_with_descriptor)
/// refused a descriptor. The world is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DescriptorError {
    /// A component of that name (or that Rust type) is registered already.
    DuplicateName {
        /// The name.
        name: &'static str,
    },
}

impl fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateName { name } => write!(
                f,
                "a component named `{name}` is registered in this world already; give the new \
                 component another name, or look the existing one up with \
                 `world.components().id_by_name(\"{name}\")`"
            ),
        }
    }
}

impl std::error::Error for DescriptorError {}

/// `name` as a `&'static str`, one copy per distinct name for the whole process.
fn intern(name: String) -> &'static str {
    static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);
    // A panic while holding the lock cannot leave the set half-changed: insert is the only
    // write, and a poisoned set is still a valid set.
    let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(&name) = names.get(name.as_str()) {
        return name;
    }
    let name: &'static str = Box::leak(name.into_boxed_str());
    names.insert(name);
    name
}
