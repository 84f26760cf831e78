//! Templates (assemblages, prefabs): a named set of component values, with children, that
//! spawns any number of entities.
//!
//! A [`Template`] lists components the way an [entity state](crate::entity_state) does —
//! a value cloned for each entity ([`with`](Template::with)), the type's `Default`
//! ([`with_default`](Template::with_default)), a clone of a shared `Arc`
//! ([`with_shared`](Template::with_shared)), or what a closure returns
//! ([`with_fn`](Template::with_fn)) — plus child templates, each spawned as a child of the
//! entity through [`Parent`] / [`Children`](crate::Children). A template can
//! [extend](Template::extends) another and override some of its components.
//!
//! Spawn one from [`World::spawn_template`] (or [`spawn_template_batch`](World::spawn_template_batch)),
//! from [`Commands::spawn_template`] (the id is reserved at once, as for any command spawn)
//! or from [`ScopedCommands::spawn_template`] inside a `par_for_each`. Register templates by
//! name in the world's [`Templates`] resource ([`World::register_template`]) to spawn them by
//! name ([`World::spawn_template_named`] and the commands' `spawn_template_named`); an
//! unknown name is a [`TemplateError`] that lists the names there are.
//!
//! # What a spawn does
//!
//! 1. Every component value is made first (clones, defaults, closures), while the world is
//!    untouched: a `Clone` or closure that panics leaves nothing behind.
//! 2. The entity is created and moved **once** into the archetype of the whole set, each
//!    value written straight into its column — not one move per component.
//! 3. The components' `on_add` and `on_insert` hooks run, observers of `OnAdd` / `OnInsert`
//!    fire and required components are added, exactly as for [`World::spawn`] of a bundle
//!    holding the same components; the commands they record are applied.
//! 4. Each child template is spawned the same way, in order, with a [`Parent`] naming the
//!    entity among its components (so it too moves once), then its own children.
//!
//! # Extending and overriding
//!
//! [`Template::extending(name, &base)`](Template::extending) (or
//! [`.extends(&base)`](Template::extends)) takes every component and child of `base`. A
//! component the template lists itself always wins over an inherited one of the same type,
//! whether it is listed before or after the `extends`; between two bases, the one extended
//! later wins. Children add up: the bases' first, then the template's own.
//!
//! # Data files
//!
//! With the `serde` feature, templates are also read from a data file in any serde format,
//! so that a designer edits a file and not Rust (`World::load_templates`,
//! `World::read_templates`). The file maps template names to definitions:
//!
//! ```json
//! {
//!   "ship":     { "components": { "Hull": 100, "Speed": 2.0 },
//!                 "children": [ { "name": "turret", "components": { "Turret": null } } ] },
//!   "flagship": { "extends": "ship", "components": { "Hull": 500 } }
//! }
//! ```
//!
//! A definition has optional `extends` (one name or a list: templates of the same file, in
//! any order, or templates already registered in the world), `components` (a component's
//! registered name → its value) and `children` (a list of definitions, each with a `name`).
//! A component is named as registered with `World::register_template_component`, which is
//! `World::register_serde` plus a function that reads a value and adds it to a template.
//!
//! A template spawns many entities, so each value is needed many times: the file is read
//! once, each value deserialised once into a prototype, and every spawn clones the
//! prototype — as [`Template::with`] does for a value given in code. So a component listed
//! in a data file must be `Clone` (`register_template_component` requires it; the file is
//! never read again per spawn). Errors name the template (a child as `parent/child`) and
//! the component: an unknown component name, a bad value, an unknown base, a cycle of
//! `extends`; nothing is registered then.
//!
//! ```
//! use tabula::prelude::*;
//!
//! #[derive(Clone, Debug, PartialEq)]
//! struct Hull(u32);
//! #[derive(Clone, Debug, PartialEq)]
//! struct Speed(f32);
//! #[derive(Clone, Default)]
//! struct Turret;
//!
//! let ship = Template::new("ship")
//!     .with(Hull(100))
//!     .with(Speed(2.0))
//!     .with_child(Template::new("turret").with_default::<Turret>());
//! let flagship = Template::extending("flagship", &ship).with(Hull(500)); // overrides Hull(100)
//!
//! let mut world = World::new();
//! let a = world.spawn_template(&ship);
//! let b = world.spawn_template(&flagship);
//! assert_eq!(world.get::<Hull>(a)?, &Hull(100));
//! assert_eq!(world.get::<Hull>(b)?, &Hull(500));
//! assert_eq!(world.get::<Speed>(b)?, &Speed(2.0)); // inherited
//! let turret = world.children(b)?[0];
//! assert!(world.has::<Turret>(turret));
//!
//! world.register_template(flagship);
//! let c = world.spawn_template_named("flagship")?;
//! assert_eq!(world.get::<Hull>(c)?, &Hull(500));
//! assert!(world.spawn_template_named("frigate").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::Arc;

use crate::command::{CommandError, Commands, EntityCommands, Fallible, ScopedCommands};
use crate::component::Component;
use crate::entity::Entity;
use crate::error::EntityError;
use crate::hierarchy::Parent;
use crate::provider::Providers;
use crate::world::{StagedRow, World};

#[cfg(feature = "serde")]
mod file;

/// A named set of components, with child templates, that spawns any number of entities.
/// See the [module docs](self) for what a spawn does and how extending works.
///
/// Cheap to clone: the definition is shared.
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Clone)]
/// struct Rock(u32);
/// #[derive(Default)]
/// struct Spin(f32);
///
/// let rock = Template::new("rock").with(Rock(3)).with_default::<Spin>();
/// let mut world = World::new();
/// let ids = world.spawn_template_batch(&rock, 10);
/// assert_eq!(ids.len(), 10);
/// assert!(ids.iter().all(|&e| world.get::<Rock>(e).is_ok_and(|r| r.0 == 3)));
/// ```
#[derive(Clone)]
pub struct Template {
    definition: Arc<Definition>,
}

#[derive(Clone)]
struct Definition {
    name: Arc<str>,
    /// What the bases give, the later base over the earlier.
    inherited: Providers,
    /// What the template lists itself.
    own: Providers,
    /// `inherited` overlaid with `own`: what a spawn makes.
    components: Providers,
    /// The bases' children, in order.
    inherited_children: Vec<Template>,
    /// The template's own children.
    own_children: Vec<Template>,
    /// `inherited_children`, then `own_children`: what a spawn makes.
    children: Vec<Template>,
    /// The names of the templates extended, in order.
    bases: Vec<Arc<str>>,
}

impl Template {
    /// An empty template called `name`.
    ///
    /// ```
    /// let t = tabula::Template::new("empty");
    /// assert_eq!(t.name(), "empty");
    /// assert_eq!(t.components().len(), 0);
    /// ```
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            definition: Arc::new(Definition {
                name: name.into(),
                inherited: Providers::default(),
                own: Providers::default(),
                components: Providers::default(),
                inherited_children: Vec::new(),
                own_children: Vec::new(),
                children: Vec::new(),
                bases: Vec::new(),
            }),
        }
    }

    /// A template called `name` with every component and child of `base`: the same as
    /// `Template::new(name).extends(base)`.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Hp(u32);
    /// #[derive(Clone)]
    /// struct Boss;
    /// let grunt = Template::new("grunt").with(Hp(10));
    /// let boss = Template::extending("boss", &grunt).with(Hp(500)).with(Boss);
    /// let mut world = World::new();
    /// let e = world.spawn_template(&boss);
    /// assert_eq!(world.get::<Hp>(e)?, &Hp(500));
    /// assert!(world.has::<Boss>(e));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn extending(name: impl Into<Arc<str>>, base: &Template) -> Self {
        Self::new(name).extends(base)
    }

    /// Takes every component and child of `base` (its own inherited ones included). The
    /// components this template lists itself win over inherited ones of the same type,
    /// whenever they were listed; a base extended later wins over one extended before.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Color(&'static str);
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Size(u8);
    /// let red = Template::new("red").with(Color("red")).with(Size(1));
    /// // Listed before the `extends`, and still not overridden by the base.
    /// let big_blue = Template::new("big blue").with(Color("blue")).extends(&red).with(Size(9));
    /// let mut world = World::new();
    /// let e = world.spawn_template(&big_blue);
    /// assert_eq!(world.get::<Color>(e)?, &Color("blue"));
    /// assert_eq!(world.get::<Size>(e)?, &Size(9));
    /// assert_eq!(big_blue.bases().collect::<Vec<_>>(), ["red"]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn extends(mut self, base: &Template) -> Self {
        let definition = Arc::make_mut(&mut self.definition);
        for provider in base.definition.components.as_slice() {
            definition.inherited.set(provider.clone());
        }
        (definition.inherited_children).extend(base.definition.children.iter().cloned());
        definition.bases.push(Arc::clone(&base.definition.name));
        self.rebuild()
    }

    /// Each entity gets a clone of `value`.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Speed(f32);
    /// let t = Template::new("fast").with(Speed(9.0));
    /// # let _ = t;
    /// ```
    pub fn with<T: Component + Clone>(self, value: T) -> Self {
        self.own(|own| own.with(value))
    }

    /// Each entity gets `T::default()`.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// #[derive(Default)]
    /// struct Score(u32);
    /// let t = Template::new("player").with_default::<Score>();
    /// # let _ = t;
    /// ```
    pub fn with_default<T: Component + Default>(self) -> Self {
        self.own(|own| own.with_default::<T>())
    }

    /// Each entity gets a clone of `*shared`: one definition (a sprite, a stats table)
    /// shared by templates that list the same `Arc`.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// use std::sync::Arc;
    /// #[derive(Clone)]
    /// struct Sprite(&'static str);
    /// let rock = Arc::new(Sprite("rock.png"));
    /// let small = Template::new("small rock").with_shared(rock.clone());
    /// let large = Template::new("large rock").with_shared(rock);
    /// # let _ = (small, large);
    /// ```
    pub fn with_shared<T: Component + Clone>(self, shared: Arc<T>) -> Self {
        self.own(|own| own.with_shared(shared))
    }

    /// Each entity gets what `make` returns, called once per entity: for values that are
    /// not `Clone`, or that differ per entity.
    ///
    /// ```
    /// # use tabula::prelude::*;
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// struct Serial(u32);
    /// let next = AtomicU32::new(1);
    /// let t = Template::new("part").with_fn(move || Serial(next.fetch_add(1, Ordering::Relaxed)));
    /// let mut world = World::new();
    /// let (a, b) = (world.spawn_template(&t), world.spawn_template(&t));
    /// assert_eq!((world.get::<Serial>(a)?.0, world.get::<Serial>(b)?.0), (1, 2));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn with_fn<T: Component>(self, make: impl Fn() -> T + Send + Sync + 'static) -> Self {
        self.own(|own| own.with_fn(make))
    }

    /// Each entity gets a child spawned from `child` (with a [`Parent`] naming the entity),
    /// after the template's earlier children.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Wheel(u8);
    /// let car = (0..4).fold(Template::new("car"), |car, i| car.with_child(Template::new("wheel").with(Wheel(i))));
    /// let mut world = World::new();
    /// let e = world.spawn_template(&car);
    /// let wheels: Vec<u8> = world.children(e)?.iter().map(|&w| world.get::<Wheel>(w).unwrap().0).collect();
    /// assert_eq!(wheels, [0, 1, 2, 3]);
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    pub fn with_child(mut self, child: Template) -> Self {
        Arc::make_mut(&mut self.definition).own_children.push(child);
        self.rebuild()
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The Rust type names of the components each entity gets (inherited ones included,
    /// overridden ones once).
    pub fn components(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.definition.components.names()
    }

    /// Whether each entity gets a `T`.
    pub fn has<T: Component>(&self) -> bool {
        self.definition.components.contains(std::any::TypeId::of::<T>())
    }

    /// The child templates, the bases' first.
    pub fn children(&self) -> &[Template] {
        &self.definition.children
    }

    /// The names of the templates this one extends, in the order they were extended.
    pub fn bases(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.definition.bases.iter().map(|name| &**name)
    }

    /// Changes the template's own list and recomputes what a spawn makes.
    fn own(mut self, change: impl FnOnce(&mut Providers)) -> Self {
        change(&mut Arc::make_mut(&mut self.definition).own);
        self.rebuild()
    }

    /// Recomputes `components`: the inherited providers overlaid with the own ones.
    fn rebuild(mut self) -> Self {
        let definition = Arc::make_mut(&mut self.definition);
        let mut components = definition.inherited.clone();
        for provider in definition.own.as_slice() {
            components.set(provider.clone());
        }
        definition.components = components;
        definition.children = (definition.inherited_children.iter())
            .chain(&definition.own_children)
            .cloned()
            .collect();
        self
    }

    /// Makes every component value of an entity of this template (user code: nothing in
    /// the world changes if it panics), with a `Parent` naming `parent` if there is one.
    fn stage(&self, parent: Option<Entity>) -> StagedRow {
        let mut row = StagedRow::default();
        for provider in self.definition.components.as_slice() {
            provider.make.stage(&mut row);
        }
        if let Some(parent) = parent {
            row.push(Parent::new(parent));
        }
        row
    }
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Template")
            .field("name", &self.name())
            .field("bases", &self.definition.bases)
            .field("components", &self.components().collect::<Vec<_>>())
            .field("children", &self.definition.children)
            .finish()
    }
}

/// The world's templates by name: a resource, filled by [`World::register_template`] and
/// read by the `spawn_template_named` methods.
///
/// ```
/// use tabula::prelude::*;
/// let mut world = World::new();
/// world.register_template(Template::new("a"));
/// world.register_template(Template::new("b"));
/// let templates = world.resource::<Templates>()?;
/// assert_eq!(templates.names().collect::<Vec<_>>(), ["a", "b"]);
/// assert!(templates.get("a").is_some() && templates.get("c").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Templates {
    /// In registration order (a name registered again keeps its place).
    list: Vec<Template>,
    /// The components a template read from a data file may list, by registered name
    /// ([`World::register_template_component`]).
    #[cfg(feature = "serde")]
    readers: hashbrown::HashMap<&'static str, file::ReadFn>,
}

impl Templates {
    /// Adds `template` under its name; returns the template it replaced, if one had that name.
    pub fn insert(&mut self, template: Template) -> Option<Template> {
        match self.list.iter_mut().find(|t| t.name() == template.name()) {
            Some(slot) => Some(std::mem::replace(slot, template)),
            None => {
                self.list.push(template);
                None
            }
        }
    }

    /// The template called `name`.
    pub fn get(&self, name: &str) -> Option<&Template> {
        self.list.iter().find(|t| t.name() == name)
    }

    /// The template called `name`, or an error listing the names there are.
    ///
    /// # Errors
    /// [`TemplateError::Unknown`] when there is none of that name.
    pub fn find(&self, name: &str) -> Result<&Template, TemplateError> {
        self.get(name).ok_or_else(|| TemplateError::Unknown {
            name: name.to_owned(),
            known: self.list.iter().map(|t| Arc::clone(&t.definition.name)).collect(),
        })
    }

    /// The names, in registration order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.list.iter().map(Template::name)
    }

    /// How many templates there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Why a template could not be spawned by name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// No template of that name is registered ([`World::register_template`]).
    Unknown {
        /// The name asked for.
        name: String,
        /// The names registered, in registration order.
        known: Vec<Arc<str>>,
    },
    /// A template read from a data file lists a component no component is registered for
    /// templates under (`World::register_template_component`).
    UnknownComponent {
        /// The template (a child as `parent/child`).
        template: String,
        /// The name in the file.
        component: String,
        /// The names registered for templates, sorted.
        known: Vec<String>,
    },
    /// A component value in a data file does not deserialise into the component's type.
    BadValue {
        /// The template (a child as `parent/child`).
        template: String,
        /// The component's registered name.
        component: String,
        /// The deserialiser's message.
        message: String,
    },
    /// A template read from a data file extends a template that is neither in the file nor
    /// registered in the world.
    UnknownBase {
        /// The template (a child as `parent/child`).
        template: String,
        /// The base asked for.
        base: String,
    },
    /// Templates of a data file extend each other in a cycle.
    Cycle {
        /// The templates of the cycle, the first repeated at the end.
        templates: Vec<String>,
    },
    /// The input is not a template file: malformed or truncated, an unknown field, a
    /// template defined twice. The deserialiser's message.
    Malformed {
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown { name, known } if known.is_empty() => write!(
                f,
                "no template named {name:?}: none is registered; register one with \
                 `world.register_template(Template::new({name:?}) ...)`"
            ),
            Self::Unknown { name, known } => {
                write!(f, "no template named {name:?}; the templates registered are [")?;
                for (i, known) in known.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{known:?}")?;
                }
                write!(f, "]")
            }
            Self::UnknownComponent {
                template,
                component,
                known,
            } => write!(
                f,
                "template {template:?}: no component is registered for templates as {component:?} \
                 (registered: {known:?}); register it with \
                 `world.register_template_component::<T>({component:?})`"
            ),
            Self::BadValue {
                template,
                component,
                message,
            } => {
                write!(
                    f,
                    "template {template:?}, component {component:?}: bad value: {message}"
                )
            }
            Self::UnknownBase { template, base } => write!(
                f,
                "template {template:?} extends {base:?}, which is neither in the file nor registered"
            ),
            Self::Cycle { templates } => {
                write!(
                    f,
                    "templates extend each other in a cycle: {}",
                    templates.join(" -> ")
                )
            }
            Self::Malformed { message } => write!(f, "not a template file: {message}"),
        }
    }
}

impl std::error::Error for TemplateError {}

impl World {
    /// Spawns an entity from `template` — its children too — and returns it. See the
    /// [module docs](crate::template) for what a spawn does: one move into the archetype of
    /// the whole set, then hooks and observers as for [`spawn`](Self::spawn).
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone, Debug, PartialEq)]
    /// struct Hp(u32);
    /// let t = Template::new("crate").with(Hp(5));
    /// let mut world = World::new();
    /// let e = world.spawn_template(&t);
    /// assert_eq!(world.get::<Hp>(e)?, &Hp(5));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Panics
    /// When every entity slot is in use, as [`spawn`](Self::spawn); when a component's
    /// `Clone`, `Default` or closure panics (the world is then unchanged for that entity).
    #[track_caller]
    pub fn spawn_template(&mut self, template: &Template) -> Entity {
        match self.spawn_template_under(template, None) {
            Ok(entity) => entity,
            Err(error) => panic!("cannot spawn template {:?}: {error}", template.name()),
        }
    }

    /// Spawns `count` entities from `template`, one after the other (the archetype is found
    /// once per entity, each moves once), and returns them in order.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Bullet;
    /// let mut world = World::new();
    /// let volley = world.spawn_template_batch(&Template::new("bullet").with(Bullet), 8);
    /// assert_eq!(volley.len(), 8);
    /// assert_eq!(world.len(), 8);
    /// ```
    ///
    /// # Panics
    /// As [`spawn_template`](Self::spawn_template).
    #[track_caller]
    pub fn spawn_template_batch(&mut self, template: &Template, count: usize) -> Vec<Entity> {
        (0..count).map(|_| self.spawn_template(template)).collect()
    }

    /// Spawns an entity from the template registered as `name` (see
    /// [`register_template`](Self::register_template)).
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Rock;
    /// let mut world = World::new();
    /// world.register_template(Template::new("rock").with(Rock));
    /// let e = world.spawn_template_named("rock")?;
    /// assert!(world.has::<Rock>(e));
    /// let error = world.spawn_template_named("stone").unwrap_err();
    /// assert_eq!(error.to_string(), r#"no template named "stone"; the templates registered are ["rock"]"#);
    /// # Ok::<(), tabula::TemplateError>(())
    /// ```
    ///
    /// # Errors
    /// [`TemplateError::Unknown`] when no template has that name; nothing is spawned.
    ///
    /// # Panics
    /// As [`spawn_template`](Self::spawn_template).
    #[track_caller]
    pub fn spawn_template_named(&mut self, name: &str) -> Result<Entity, TemplateError> {
        let template = self.registered_template(name)?;
        Ok(self.spawn_template(&template))
    }

    /// Adds `template` to the world's [`Templates`] under its name (inserting the resource
    /// if there is none), replacing and returning a template registered under that name.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// let mut world = World::new();
    /// assert!(world.register_template(Template::new("ship")).is_none());
    /// assert!(world.register_template(Template::new("ship")).is_some());
    /// assert_eq!(world.resource::<Templates>().map(Templates::len), Ok(1));
    /// ```
    pub fn register_template(&mut self, template: Template) -> Option<Template> {
        self.init_resource::<Templates>();
        self.resource_mut::<Templates>()
            .expect("just inserted")
            .insert(template)
    }

    /// Gives the reserved (or otherwise live and empty) `entity` the components of
    /// `template`, and spawns its children: the deferred half of
    /// [`Commands::spawn_template`], as [`spawn_at`](Self::spawn_at) is for a bundle.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// #[derive(Clone)]
    /// struct Ready;
    /// let mut world = World::new();
    /// let e = world.reserve_entity();
    /// world.spawn_template_at(e, &Template::new("t").with(Ready))?;
    /// assert!(world.has::<Ready>(e));
    /// # Ok::<(), tabula::EntityError>(())
    /// ```
    ///
    /// # Errors
    /// As [`spawn_at`](Self::spawn_at): [`EntityError::NoSuchEntity`] for a dead id,
    /// [`EntityError::AlreadySpawned`] when it has components; also when a child cannot
    /// be spawned because every entity slot is in use.
    pub fn spawn_template_at(&mut self, entity: Entity, template: &Template) -> Result<(), EntityError> {
        let row = template.stage(None);
        // `spawn_at` of nothing checks the id (dead, a placeholder past the index space,
        // already given components) without moving it.
        self.spawn_at(entity, ())?;
        self.fill_from_template(entity, row, template)
    }

    /// A clone of the template registered as `name`.
    fn registered_template(&self, name: &str) -> Result<Template, TemplateError> {
        match self.resource::<Templates>() {
            Ok(templates) => templates.find(name).cloned(),
            Err(_) => Templates::default().find(name).cloned(),
        }
    }

    /// Spawns an entity of `template`, with a `Parent` naming `parent` if there is one.
    fn spawn_template_under(
        &mut self,
        template: &Template,
        parent: Option<Entity>,
    ) -> Result<Entity, EntityError> {
        let row = template.stage(parent);
        let entity = self.try_spawn(())?;
        self.fill_from_template(entity, row, template)?;
        Ok(entity)
    }

    /// Gives the empty `entity` the values `row` staged from `template`, then spawns the
    /// template's children under it.
    fn fill_from_template(
        &mut self,
        entity: Entity,
        row: StagedRow,
        template: &Template,
    ) -> Result<(), EntityError> {
        self.spawn_staged(entity, row)?;
        for child in template.children() {
            self.spawn_template_under(child, Some(entity))?;
        }
        Ok(())
    }
}

/// A command's error for a template `name` not found.
fn unknown(error: TemplateError) -> CommandError {
    CommandError::Custom {
        command: "spawn_template",
        message: error.to_string(),
    }
}

/// The applied half of a `Commands` template spawn: `template` into the reserved `entity`.
fn fill_reserved(world: &mut World, entity: Entity, template: &Template) -> Result<(), CommandError> {
    (world.spawn_template_at(entity, template)).map_err(|error| CommandError::Entity {
        command: "spawn_template",
        entity,
        error,
    })
}

/// The applied half of a `ScopedCommands` template spawn: a new entity of `template`.
fn spawn_fresh(world: &mut World, template: &Template) -> Result<(), CommandError> {
    (world.spawn_template_under(template, None))
        .map(drop)
        .map_err(|error| CommandError::Spawn {
            command: "spawn_template",
            error,
        })
}

impl Commands<'_, '_> {
    /// Spawns an entity from `template` (and its children) when the queue is applied. The
    /// entity's id is reserved now and returned at once, as for [`spawn`](Self::spawn), so
    /// it is the same whatever the thread count; the children's ids are taken when the
    /// command is applied.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::CommandQueue;
    /// #[derive(Clone)]
    /// struct Mine;
    /// let mut world = World::new();
    /// let mut queue = CommandQueue::new();
    /// let mine = Commands::new(&mut queue, &world).spawn_template(&Template::new("mine").with(Mine)).id();
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert!(world.has::<Mine>(mine));
    /// ```
    ///
    /// A refused spawn (the id despawned before the apply) is reported as a
    /// [`CommandError::Entity`] of command `"spawn_template"`.
    pub fn spawn_template(&mut self, template: &Template) -> EntityCommands<'_> {
        let template = template.clone();
        let mut commands = self.spawn_empty();
        let entity = commands.id();
        commands.add(Fallible(move |world: &mut World| {
            fill_reserved(world, entity, &template)
        }));
        commands
    }

    /// Spawns an entity from the template registered as `name` when the queue is applied;
    /// the id is reserved now. A name not registered by then is a [`CommandError::Custom`]
    /// of command `"spawn_template"` naming it (and the reserved entity is despawned).
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::CommandQueue;
    /// #[derive(Clone)]
    /// struct Mine;
    /// let mut world = World::new();
    /// world.register_template(Template::new("mine").with(Mine));
    /// let mut queue = CommandQueue::new();
    /// let mut commands = Commands::new(&mut queue, &world);
    /// let mine = commands.spawn_template_named("mine").id();
    /// commands.spawn_template_named("nuke");
    /// let errors = queue.apply(&mut world);
    /// assert!(world.has::<Mine>(mine));
    /// assert_eq!(errors.len(), 1);
    /// assert!(errors[0].to_string().contains("\"nuke\""), "{}", errors[0]);
    /// ```
    pub fn spawn_template_named(&mut self, name: impl Into<String>) -> EntityCommands<'_> {
        let name = name.into();
        let mut commands = self.spawn_empty();
        let entity = commands.id();
        commands.add(Fallible(move |world: &mut World| {
            let template = match world.registered_template(&name) {
                Ok(template) => template,
                Err(error) => {
                    // The reservation became an empty entity; it must not outlive the error.
                    let _ = world.despawn(entity);
                    return Err(unknown(error));
                }
            };
            fill_reserved(world, entity, &template)
        }));
        commands
    }
}

impl ScopedCommands<'_> {
    /// Spawns an entity from `template` (and its children) when the queue is applied; the
    /// ids are taken then, in the order a serial run would have recorded the spawns, so
    /// they are the same whatever the thread count.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::ParallelCommandQueue;
    /// #[derive(Clone)]
    /// struct Spark;
    /// let spark = Template::new("spark").with(Spark);
    /// let mut world = World::new();
    /// let mut queue = ParallelCommandQueue::new();
    /// queue.command_scope(|commands| commands.spawn_template(&spark));
    /// assert!(queue.apply(&mut world).is_empty());
    /// assert_eq!(world.len(), 1);
    /// ```
    ///
    /// # Errors (when applied)
    /// A spawn refused because every entity slot is in use is a [`CommandError::Spawn`].
    pub fn spawn_template(&mut self, template: &Template) {
        let template = template.clone();
        self.add(Fallible(move |world: &mut World| spawn_fresh(world, &template)));
    }

    /// Spawns an entity from the template registered as `name` when the queue is applied.
    /// A name not registered by then is a [`CommandError::Custom`] naming it.
    ///
    /// ```
    /// use tabula::prelude::*;
    /// use tabula::ParallelCommandQueue;
    /// let mut world = World::new();
    /// world.register_template(Template::new("spark"));
    /// let mut queue = ParallelCommandQueue::new();
    /// queue.command_scope(|commands| {
    ///     commands.spawn_template_named("spark");
    ///     commands.spawn_template_named("flare");
    /// });
    /// let errors = queue.apply(&mut world);
    /// assert_eq!((world.len(), errors.len()), (1, 1));
    /// ```
    pub fn spawn_template_named(&mut self, name: impl Into<String>) {
        let name = name.into();
        self.add(Fallible(move |world: &mut World| {
            let template = world.registered_template(&name).map_err(unknown)?;
            spawn_fresh(world, &template)
        }));
    }
}
