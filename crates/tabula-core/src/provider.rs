//! Component providers: a component type and where its value comes from, type-erased, so
//! that a list of them can give an entity a set of components chosen at run time.
//!
//! Shared by [entity states](crate::entity_state) and [templates](crate::template). A value
//! comes from a clone of a given value (`with`), the type's `Default` (`with_default`), a
//! clone of a shared `Arc` (`with_shared`) or a function (`with_fn`). Each provider has an
//! [`Identity`] that entity states use to decide whether two states share a component.

use std::any::{TypeId, type_name};
use std::marker::PhantomData;
use std::sync::Arc;

use crate::component::Component;
use crate::entity::Entity;
use crate::error::EntityError;
use crate::world::{StagedRow, World};

/// Which provider a component came from (see the sharing rule of [`crate::entity_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Identity {
    /// `with_default::<T>()`: the type.
    Type(TypeId),
    /// `with_shared`: the `Arc`'s allocation; `with` / `with_fn`: the provider's own.
    Address(usize),
}

/// Makes, inserts, stages and removes one component type, type-erased.
pub(crate) trait Provide: Send + Sync + 'static {
    fn has(&self, world: &World, entity: Entity) -> bool;
    fn insert(&self, world: &mut World, entity: Entity) -> Result<(), EntityError>;
    fn remove(&self, world: &mut World, entity: Entity) -> Result<(), EntityError>;
    /// Makes a value and adds it to `row`, to be written with the row's other values in one
    /// move.
    fn stage(&self, row: &mut StagedRow);
}

/// A provider made from a function returning the value to insert.
struct Make<T, F>(F, PhantomData<fn() -> T>);

impl<T: Component, F: Fn() -> T + Send + Sync + 'static> Provide for Make<T, F> {
    fn has(&self, world: &World, entity: Entity) -> bool {
        world.has::<T>(entity)
    }
    fn insert(&self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        world.insert_one(entity, (self.0)())
    }
    fn remove(&self, world: &mut World, entity: Entity) -> Result<(), EntityError> {
        world.remove_one::<T>(entity).map(drop)
    }
    fn stage(&self, row: &mut StagedRow) {
        row.push((self.0)());
    }
}

/// One component of a list: its type and where its value comes from.
#[derive(Clone)]
pub(crate) struct Provider {
    pub(crate) component: TypeId,
    pub(crate) name: &'static str,
    pub(crate) identity: Identity,
    pub(crate) make: Arc<dyn Provide>,
}

/// A list of providers, at most one per component type: setting a type again replaces its
/// provider in place (keeping the position of the first).
#[derive(Clone, Default)]
pub(crate) struct Providers {
    list: Vec<Provider>,
}

impl Providers {
    fn push<T: Component>(&mut self, identity: Option<Identity>, make: Arc<dyn Provide>) {
        let identity = identity.unwrap_or(Identity::Address(Arc::as_ptr(&make) as *const () as usize));
        self.set(Provider {
            component: TypeId::of::<T>(),
            name: type_name::<T>(),
            identity,
            make,
        });
    }

    /// Adds `provider`, replacing the one of its type if there is one.
    pub(crate) fn set(&mut self, provider: Provider) {
        match self.list.iter_mut().find(|p| p.component == provider.component) {
            Some(slot) => *slot = provider,
            None => self.list.push(provider),
        }
    }

    /// A clone of `value` each time (a provider of its own).
    pub(crate) fn with<T: Component + Clone>(&mut self, value: T) {
        self.push::<T>(None, Arc::new(Make(move || value.clone(), PhantomData)));
    }

    /// `T::default()` each time (the provider is the type).
    pub(crate) fn with_default<T: Component + Default>(&mut self) {
        self.push::<T>(
            Some(Identity::Type(TypeId::of::<T>())),
            Arc::new(Make(T::default, PhantomData)),
        );
    }

    /// A clone of `*shared` each time (the provider is the `Arc`'s allocation).
    pub(crate) fn with_shared<T: Component + Clone>(&mut self, shared: Arc<T>) {
        let identity = Identity::Address(Arc::as_ptr(&shared) as *const () as usize);
        self.push::<T>(
            Some(identity),
            Arc::new(Make(move || T::clone(&shared), PhantomData)),
        );
    }

    /// What `make` returns each time (a provider of its own).
    pub(crate) fn with_fn<T: Component>(&mut self, make: impl Fn() -> T + Send + Sync + 'static) {
        self.push::<T>(None, Arc::new(Make(make, PhantomData)));
    }

    /// The providers, in the order their types were first listed.
    pub(crate) fn as_slice(&self) -> &[Provider] {
        &self.list
    }

    /// The Rust type names, in order.
    pub(crate) fn names(&self) -> impl ExactSizeIterator<Item = &'static str> + '_ {
        self.list.iter().map(|p| p.name)
    }

    /// Whether a provider of type `component` is listed.
    pub(crate) fn contains(&self, component: TypeId) -> bool {
        self.list.iter().any(|p| p.component == component)
    }
}
