//! Bundles: the tuples of components that are spawned, inserted and removed together.
//!
//! A bundle is a tuple of up to 16 component values, `(Position, Velocity)`; `()` is the empty
//! bundle. The world computes a bundle's component set once per bundle type ([`BundleInfo`])
//! and writes the fields straight into the destination columns with typed stores — no
//! per-component dispatch on the hot path.

use std::any::{TypeId, type_name};

use crate::change::{ComponentTicks, Tick};
use crate::component::{Component, ComponentId, Components, TypeIdMap};
use crate::storage::Table;

/// A dense index naming one bundle type inside one world.
pub(crate) type BundleId = usize;

/// A tuple of components that can be spawned, inserted or removed as a unit.
///
/// Implemented for tuples of 0 to 16 components, each a distinct type, and for every
/// [`DerivedBundle`]: a struct with `#[derive(Bundle)]` (from the `tabula` crate), which is
/// spawned, inserted and removed as the tuple of its fields. For a single component, use a
/// one-element tuple `(value,)` or the `*_one` methods of [`World`](crate::World).
///
/// ```
/// use tabula::World;
///
/// #[derive(Debug, PartialEq)]
/// struct Position(f32, f32);
/// struct Velocity(f32, f32);
///
/// let mut world = World::new();
/// let e = world.spawn((Position(0.0, 0.0), Velocity(1.0, 0.0)));
/// let (position,) = world.remove::<(Position,)>(e).unwrap();
/// assert_eq!(position, Position(0.0, 0.0));
/// ```
///
/// A bundle listing one component type twice is a programmer error and panics on first use:
///
/// ```should_panic
/// let mut world = tabula::World::new();
/// world.spawn((1u32, 2u32)); // panics: u32 appears twice
/// ```
///
/// So is a tuple nested in a bundle: tuples are not flattened, and `((a, b), c)` would store
/// the pair as one component, which no query for `a`'s type would find. List the components
/// in one tuple instead (a helper returning a bundle can take the extra components as
/// arguments):
///
/// ```should_panic
/// struct Pos(f32);
/// struct Vel(f32);
/// struct Player;
/// let mut world = tabula::World::new();
/// world.spawn(((Pos(0.0), Vel(1.0)), Player)); // panics: a nested tuple
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a bundle",
    label = "not a tuple of components",
    note = "a bundle is a tuple of components, `(Position, Velocity)`, or a struct with \
            `#[derive(Bundle)]`; spawn a single component as `(value,)`"
)]
pub trait Bundle: sealed::BundleStorage + Send + Sync + 'static {}

/// A struct that is a [`Bundle`] through a tuple of components: spawned, inserted and removed
/// as [`Tuple`](Self::Tuple), converted on the way in and out. This is what
/// `#[derive(Bundle)]` implements (its fields, nested `#[bundle]` fields flattened, in
/// declaration order); it may also be implemented by hand.
///
/// The world converts a bundle while it writes or reads the bundle's table row, where an
/// unwinding panic would leave the row half-initialised: a conversion that panics
/// therefore aborts the process. Keep both functions to moving fields.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a bundle",
    label = "not a tuple of components or a `#[derive(Bundle)]` struct",
    note = "a bundle is a tuple of components, `(Position, Velocity)`, or a struct with \
            `#[derive(Bundle)]`; spawn a single component as `(value,)`, and mark a field \
            `#[bundle]` only when its type is such a struct or tuple"
)]
pub trait DerivedBundle: Send + Sync + 'static {
    /// The tuple of components the struct is stored as.
    type Tuple: Bundle;

    /// The struct's components as the tuple.
    fn into_tuple(self) -> Self::Tuple;

    /// The struct back from the tuple (after `world.remove::<Self>(entity)`).
    fn from_tuple(tuple: Self::Tuple) -> Self;
}

impl<T: DerivedBundle> Bundle for T {}

/// Runs a bundle conversion where unwinding is not allowed (a table row is being written or
/// read): a panic aborts the process instead.
#[inline(always)]
fn convert_without_unwinding<R>(convert: impl FnOnce() -> R) -> R {
    struct AbortOnUnwind;
    impl Drop for AbortOnUnwind {
        fn drop(&mut self) {
            eprintln!(
                "a `DerivedBundle` conversion panicked while its table row was being written or \
                 read; aborting, since unwinding would leave the row half-initialised"
            );
            std::process::abort();
        }
    }
    let guard = AbortOnUnwind;
    let value = convert();
    std::mem::forget(guard);
    value
}

// Every method delegates to the tuple's, whose contracts are the same; the conversions
// cannot unwind out of a half-written or half-read row (`convert_without_unwinding`).
impl<T: DerivedBundle> sealed::BundleStorage for T {
    fn component_ids(components: &mut Components, out: &mut Vec<ComponentId>) {
        T::Tuple::component_ids(components, out);
    }

    const FIELDS: usize = <T::Tuple as sealed::BundleStorage>::FIELDS;

    type Columns = <T::Tuple as sealed::BundleStorage>::Columns;

    #[inline]
    unsafe fn columns(table: &mut Table, columns: &[u32]) -> Self::Columns {
        // SAFETY: the tuple stores the same fields in the same order (the caller's contract).
        unsafe { T::Tuple::columns(table, columns) }
    }

    #[inline]
    unsafe fn write_at(self, columns: Self::Columns, row: usize, tick: Tick) {
        let tuple = convert_without_unwinding(|| self.into_tuple());
        // SAFETY: the caller's contract, for the same fields in the same order.
        unsafe { tuple.write_at(columns, row, tick) }
    }

    #[inline]
    unsafe fn write_or_replace(
        self,
        table: &mut Table,
        columns: &[u32],
        replaced: &[bool],
        row: usize,
        tick: Tick,
    ) {
        let tuple = convert_without_unwinding(|| self.into_tuple());
        // SAFETY: the caller's contract, for the same fields in the same order.
        unsafe { tuple.write_or_replace(table, columns, replaced, row, tick) }
    }

    #[inline]
    unsafe fn take_at(table: &Table, columns: &[u32], row: usize) -> Self {
        // SAFETY: the caller's contract, for the same fields in the same order.
        let tuple = unsafe { T::Tuple::take_at(table, columns, row) };
        convert_without_unwinding(|| T::from_tuple(tuple))
    }

    #[inline]
    unsafe fn refill_at(table: &mut Table, columns: &[u32], row: usize, last: usize) {
        // SAFETY: the caller's contract, for the same fields in the same order.
        unsafe { T::Tuple::refill_at(table, columns, row, last) }
    }

    #[inline]
    fn has_type(type_id: TypeId) -> bool {
        T::Tuple::has_type(type_id)
    }
}

/// A tuple with one more element at its end: how `#[derive(Bundle)]` flattens a nested
/// bundle's tuple into its own ([`TupleConcat`]). Implemented for tuples of up to 15
/// elements (a bundle holds at most 16 components).
#[diagnostic::on_unimplemented(
    message = "a bundle holds at most 16 components",
    label = "this bundle, nested bundles flattened, has more",
    note = "split the struct into two bundles and insert the second one separately"
)]
pub trait TuplePush<T> {
    /// `Self` with `T` appended.
    type Output;

    /// Appends `value`.
    fn push(self, value: T) -> Self::Output;

    /// Splits the last element off again.
    fn pop(output: Self::Output) -> (Self, T)
    where
        Self: Sized;
}

/// The tuple of `Self`'s elements followed by `Rhs`'s: how `#[derive(Bundle)]` flattens a
/// nested bundle's tuple into its own.
pub trait TupleConcat<Rhs> {
    /// `Self`'s elements, then `Rhs`'s.
    type Output;

    /// Joins the two tuples.
    fn concat(self, rhs: Rhs) -> Self::Output;

    /// Splits a joined tuple back into its two parts.
    fn split(output: Self::Output) -> (Self, Rhs)
    where
        Self: Sized;
}

macro_rules! tuple_push {
    ($($name:ident $index:tt),*) => {
        impl<$($name,)* Last> TuplePush<Last> for ($($name,)*) {
            type Output = ($($name,)* Last,);

            #[inline(always)]
            fn push(self, value: Last) -> Self::Output {
                ($(self.$index,)* value,)
            }

            #[inline(always)]
            #[allow(non_snake_case)]
            fn pop(output: Self::Output) -> (Self, Last) {
                let ($($name,)* last,) = output;
                (($($name,)*), last)
            }
        }
    };
}

tuple_push!();
tuple_push!(A 0);
tuple_push!(A 0, B 1);
tuple_push!(A 0, B 1, C 2);
tuple_push!(A 0, B 1, C 2, D 3);
tuple_push!(A 0, B 1, C 2, D 3, E 4);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_push!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);

impl<L> TupleConcat<()> for L {
    type Output = L;

    #[inline(always)]
    fn concat(self, (): ()) -> L {
        self
    }

    #[inline(always)]
    fn split(output: L) -> (L, ()) {
        (output, ())
    }
}

// `L ++ (H, R..)` is `(L ++ (H,)) ++ (R..)`: one push, then the rest.
macro_rules! tuple_concat {
    ($head:ident $(, $rest:ident)*) => {
        impl<L, $head, $($rest),*> TupleConcat<($head, $($rest,)*)> for L
        where
            L: TuplePush<$head>,
            L::Output: TupleConcat<($($rest,)*)>,
        {
            type Output = <L::Output as TupleConcat<($($rest,)*)>>::Output;

            #[inline(always)]
            #[allow(non_snake_case)]
            fn concat(self, ($head, $($rest,)*): ($head, $($rest,)*)) -> Self::Output {
                self.push($head).concat(($($rest,)*))
            }

            #[inline(always)]
            #[allow(non_snake_case)]
            fn split(output: Self::Output) -> (L, ($head, $($rest,)*)) {
                let (pushed, ($($rest,)*)) = <L::Output as TupleConcat<($($rest,)*)>>::split(output);
                let (left, $head) = L::pop(pushed);
                (left, ($head, $($rest,)*))
            }
        }
    };
}

tuple_concat!(A);
tuple_concat!(A, B);
tuple_concat!(A, B, C);
tuple_concat!(A, B, C, D);
tuple_concat!(A, B, C, D, E);
tuple_concat!(A, B, C, D, E, F);
tuple_concat!(A, B, C, D, E, F, G);
tuple_concat!(A, B, C, D, E, F, G, H);
tuple_concat!(A, B, C, D, E, F, G, H, I);
tuple_concat!(A, B, C, D, E, F, G, H, I, J);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K, M);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K, M, N);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K, M, N, O);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K, M, N, O, P);
tuple_concat!(A, B, C, D, E, F, G, H, I, J, K, M, N, O, P, Q);

pub(crate) mod sealed {
    use super::*;

    /// How a bundle's fields reach typed columns. Sealed: the invariants below are upheld by
    /// the tuple implementations in this module only.
    pub trait BundleStorage: Sized {
        /// Appends the component ids of the fields, in field order, registering them.
        fn component_ids(components: &mut Components, out: &mut Vec<ComponentId>);

        /// How many fields the bundle has.
        const FIELDS: usize;

        /// Moves every field into its column at `row`, which is uninitialised.
        ///
        /// # Safety
        /// `columns[i]` is a column of `table` storing field `i`'s type, all distinct, and
        /// `row` is a freshly pushed, uninitialised row of `table`.
        #[inline]
        unsafe fn write_new(self, table: &mut Table, columns: &[u32], row: usize, tick: Tick) {
            // SAFETY: the caller's contract covers both calls; the table does not grow between.
            unsafe { self.write_at(Self::columns(table, columns), row, tick) }
        }

        /// The typed column pointers of the fields, for [`write_at`](Self::write_at).
        type Columns: Copy;

        /// Looks up the columns `columns` names once, for many `write_at`s.
        ///
        /// # Safety
        /// `columns[i]` is a column of `table` storing field `i`'s type. The pointers are
        /// valid until the table grows.
        unsafe fn columns(table: &mut Table, columns: &[u32]) -> Self::Columns;

        /// [`write_new`](Self::write_new) through columns looked up beforehand.
        ///
        /// # Safety
        /// As for `write_new`; `columns` came from [`columns`](Self::columns) on this table,
        /// which has not grown since.
        unsafe fn write_at(self, columns: Self::Columns, row: usize, tick: Tick);

        /// Moves every field into its column at `row`: fields with `replaced[i]` replace an
        /// initialised value (which is dropped after all fields are written), the others fill
        /// uninitialised slots.
        ///
        /// # Safety
        /// As for `write_new`, except that slot `(columns[i], row)` is initialised exactly
        /// when `replaced[i]`.
        unsafe fn write_or_replace(
            self,
            table: &mut Table,
            columns: &[u32],
            replaced: &[bool],
            row: usize,
            tick: Tick,
        );

        /// Reads the fields out of `row`, leaving those slots logically uninitialised.
        ///
        /// # Safety
        /// `columns[i]` is a column of `table` storing field `i`'s type, all distinct; `row`
        /// holds initialised values in them; each is read exactly once, and the caller treats
        /// the slots as empty afterwards (never reads or drops them again).
        unsafe fn take_at(table: &Table, columns: &[u32], row: usize) -> Self;

        /// Moves the fields at row `last` into `row`, typed: the value half of a
        /// swap-remove whose `row` was read out by [`take_at`](Self::take_at).
        ///
        /// # Safety
        /// `columns[i]` is a column of `table` storing field `i`'s type, all distinct;
        /// `row <= last < capacity`; `last` holds initialised values, which the caller then
        /// treats as moved out of `last`; the slots at `row` are owned by nobody (overwritten;
        /// for `row == last` a copy onto itself).
        unsafe fn refill_at(table: &mut Table, columns: &[u32], row: usize, last: usize);

        /// Whether some field is of type `type_id`. For a `TypeId::of` constant this folds to
        /// a constant once inlined.
        fn has_type(type_id: TypeId) -> bool;
    }
}

/// One field's column as raw typed pointers, looked up once for many rows
/// ([`BundleStorage::columns`](sealed::BundleStorage::columns)).
pub struct TypedColumn<T> {
    values: *mut T,
    ticks: *mut ComponentTicks,
}

impl<T> Clone for TypedColumn<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for TypedColumn<T> {}

/// What the world knows about one bundle type.
pub(crate) struct BundleInfo {
    pub(crate) id: BundleId,
    /// Component ids in field order.
    pub(crate) fields: Box<[ComponentId]>,
    /// The same ids, sorted.
    pub(crate) sorted: Box<[ComponentId]>,
    /// Some field is a sparse component (`storage/sparse.rs`): the bundle never follows an
    /// archetype edge, and its inserts, removals and spawns take `world/sparse.rs`'s path.
    /// Fixed when the bundle is registered: a component cannot become sparse once a bundle
    /// lists it.
    pub(crate) sparse: bool,
}

/// The bundle types a world has seen.
#[derive(Default)]
pub(crate) struct Bundles {
    pub(crate) infos: Vec<BundleInfo>,
    by_type: TypeIdMap<BundleId>,
    /// The bundles of inserts and removals by component id ([`crate::dynamic`]), by their
    /// sorted component set.
    by_components: hashbrown::HashMap<Box<[ComponentId]>, BundleId>,
    /// The bundle type looked up last and its id. Games tend to repeat one bundle type many
    /// times in a row (a spawn loop, an insert/remove pass), so this one comparison saves the
    /// hash probe.
    last: LastBundle<BundleId>,
}

/// A bundle type's identity as one pointer: the address of a constant holding its `TypeId`.
///
/// Comparing two keys is one 64-bit comparison where comparing `TypeId`s is two (plus two
/// 64-bit constants to materialise): callgrind, about 5 instructions fewer per insert or
/// remove. Two keys of different types never compare equal: each points at its type's
/// `TypeId`, distinct types have distinct `TypeId`s, and one address cannot hold two values.
/// The compiler may emit more than one copy of a type's constant (one per codegen unit), so
/// two keys of one type can differ; a [`LastBundle`] then misses and looks the bundle up the
/// slow way, which is correct, only slower.
#[derive(Clone, Copy)]
pub(crate) struct BundleKey(&'static TypeId);

impl BundleKey {
    /// The key of type `B`.
    #[inline(always)]
    pub(crate) fn of<B: 'static>() -> Self {
        Self(const { &TypeId::of::<B>() })
    }

    /// True when both keys point at the same constant (so name the same type).
    #[inline(always)]
    fn same(self, other: Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

/// A one-entry cache keyed by bundle type: the type looked up last (as its [`BundleKey`])
/// and what was found for it (a bundle id, or an archetype's edge). Keys of different types
/// never match, so a hit is exact.
#[derive(Clone, Copy)]
pub(crate) struct LastBundle<V> {
    key: BundleKey,
    value: V,
}

/// Fills an empty [`LastBundle`]. Not a [`Bundle`] (no tuple of components), so no bundle's
/// key equals its key: cheaper than an `Option`, whose discriminant would cost a test per
/// lookup.
enum NoBundle {}

impl<V: Default> Default for LastBundle<V> {
    fn default() -> Self {
        Self {
            key: BundleKey::of::<NoBundle>(),
            value: V::default(),
        }
    }
}

impl<V: Copy> LastBundle<V> {
    /// What was cached for the bundle type of `key`, if the entry is its.
    #[inline]
    pub(crate) fn get(&self, key: BundleKey) -> Option<V> {
        self.key.same(key).then_some(self.value)
    }

    /// Caches `value` for the bundle type of `key`. Pass the key the lookups use (see
    /// [`BundleKey`]), so that they hit.
    pub(crate) fn set(&mut self, key: BundleKey, value: V) {
        *self = Self { key, value };
    }
}

impl Bundles {
    /// The id of bundle type `B` if it is the bundle type looked up last: one comparison.
    #[inline(always)]
    pub(crate) fn last_id<B: Bundle>(&self) -> Option<BundleId> {
        self.last.get(BundleKey::of::<B>())
    }

    /// The id of bundle type `B`, computing its info on first use.
    ///
    /// # Panics
    /// When `B` lists a component type twice (a programmer error in the calling code).
    #[inline]
    pub(crate) fn id_of<B: Bundle>(&mut self, components: &mut Components) -> BundleId {
        let key = BundleKey::of::<B>();
        if let Some(id) = self.last.get(key) {
            return id;
        }
        let id = match self.by_type.get(&TypeId::of::<B>()) {
            Some(&id) => id,
            None => self.register::<B>(components),
        };
        self.last.set(key, id);
        id
    }

    /// The id of the bundle of exactly `components` (sorted, distinct, registered), for
    /// inserts and removals by component id; its fields are in id order.
    /// Only table components are passed here: the sparse ones take `world/sparse.rs`'s path
    /// before a bundle is looked up.
    pub(crate) fn id_of_components(&mut self, components: &[ComponentId]) -> BundleId {
        debug_assert!(components.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
        if let Some(&id) = self.by_components.get(components) {
            return id;
        }
        let id = self.infos.len();
        self.infos.push(BundleInfo {
            id,
            fields: components.into(),
            sorted: components.into(),
            sparse: false,
        });
        self.by_components.insert(components.into(), id);
        id
    }

    #[cold]
    fn register<B: Bundle>(&mut self, components: &mut Components) -> BundleId {
        let mut fields = Vec::new();
        B::component_ids(components, &mut fields);
        let mut sorted = fields.clone();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|w| w[0] == w[1]) {
            panic!(
                "bundle `{}` lists component `{}` twice; a bundle holds each component type at \
                 most once, so remove the duplicate field",
                type_name::<B>(),
                components.info(pair[0]).name()
            );
        }
        // `((Pos, Vel), Player)` would store one component of type `(Pos, Vel)`, which no query
        // for `Pos` finds. Tuples are not flattened (any type is a component, tuples included),
        // so this is refused on first use. Only tuple type names start with `(`; the unit type
        // `()` is a plain zero-sized component, and nothing is lost by storing it.
        let mut names = fields.iter().map(|&id| components.info(id).name());
        if let Some(field) = names.find(|name| name.starts_with('(') && *name != "()") {
            panic!(
                "bundle `{}` has a field of tuple type `{field}`; a nested tuple is not flattened into its \
                 components but would be stored as one component of that tuple type. List its \
                 components in the outer tuple instead, or wrap the value in a struct if one component \
                 is meant",
                type_name::<B>()
            )
        }
        let sparse = fields.iter().any(|&id| components.info(id).is_sparse());
        let id = self.infos.len();
        self.infos.push(BundleInfo {
            id,
            fields: fields.into(),
            sorted: sorted.into(),
            sparse,
        });
        self.by_type.insert(TypeId::of::<B>(), id);
        id
    }
}

macro_rules! tuple_bundle {
    ($($name:ident $index:tt),*) => {
        impl<$($name: Component),*> Bundle for ($($name,)*) {}

        #[allow(unused_variables, clippy::unused_unit)]
        impl<$($name: Component),*> sealed::BundleStorage for ($($name,)*) {
            fn component_ids(components: &mut Components, out: &mut Vec<ComponentId>) {
                $( out.push(components.register::<$name>()); )*
            }

            const FIELDS: usize = <[usize]>::len(&[$($index),*]);

            #[inline]
            fn has_type(type_id: TypeId) -> bool {
                false $(|| TypeId::of::<$name>() == type_id)*
            }

            type Columns = ($(TypedColumn<$name>,)*);

            #[inline]
            unsafe fn columns(table: &mut Table, columns: &[u32]) -> Self::Columns {
                debug_assert_eq!(columns.len(), <[usize]>::len(&[$($index),*]));
                ($(
                    // SAFETY: `columns` has one entry per field, naming a column of `table`
                    // that stores field `i`'s type (the caller's contract).
                    unsafe {
                        let column = table.column_unchecked_mut(*columns.get_unchecked($index) as usize);
                        TypedColumn {
                            values: column.data_ptr().cast::<$name>(),
                            ticks: column.ticks_base(),
                        }
                    },
                )*)
            }

            #[inline]
            unsafe fn write_at(self, columns: Self::Columns, row: usize, tick: Tick) {
                $(
                    // SAFETY: the pointers are the current arrays of field `i`'s column, and
                    // `row` is a free slot within its capacity (the caller's contract).
                    unsafe {
                        columns.$index.values.add(row).write(self.$index);
                        columns.$index.ticks.add(row).write(ComponentTicks::new(tick));
                    }
                )*
            }

            #[inline]
            unsafe fn write_or_replace(
                self,
                table: &mut Table,
                columns: &[u32],
                replaced: &[bool],
                row: usize,
                tick: Tick,
            ) {
                // Old values are collected and dropped only after every column is written, so
                // a panicking `Drop` cannot leave a row half-filled.
                debug_assert_eq!(columns.len(), <[usize]>::len(&[$($index),*]));
                debug_assert_eq!(replaced.len(), columns.len());
                let _old = ($({
                    // SAFETY: `columns` and `replaced` have one entry per field, and each
                    // column index names a column of `table` (the caller's contract).
                    let (column, replaced) = unsafe {
                        let column = *columns.get_unchecked($index) as usize;
                        (table.column_unchecked_mut(column), *replaced.get_unchecked($index))
                    };
                    if replaced {
                        // SAFETY: the slot holds a `$name` (the caller's contract).
                        Some(unsafe { column.replace_value::<$name>(row, self.$index, tick) })
                    } else {
                        // SAFETY: the slot is free and stores `$name` (the caller's contract).
                        unsafe { column.write_value::<$name>(row, self.$index, tick) };
                        None
                    }
                },)*);
            }

            #[inline]
            unsafe fn take_at(table: &Table, columns: &[u32], row: usize) -> Self {
                debug_assert_eq!(columns.len(), <[usize]>::len(&[$($index),*]));
                ($(
                    // SAFETY: `columns` has one entry per field, naming a column of `table`
                    // that stores field `i`'s type with an initialised value at `row`, read
                    // exactly once (the caller's contract).
                    unsafe {
                        let column = *columns.get_unchecked($index) as usize;
                        // Typed, the row offset needs no load of the value size.
                        table.column_unchecked(column).data_ptr().cast::<$name>().add(row).read()
                    },
                )*)
            }

            #[inline]
            unsafe fn refill_at(table: &mut Table, columns: &[u32], row: usize, last: usize) {
                debug_assert_eq!(columns.len(), <[usize]>::len(&[$($index),*]));
                $(
                    // SAFETY: `columns` names field `i`'s column; `row` and `last` are in
                    // bounds and `ptr::copy` allows them to be equal (the caller's contract).
                    unsafe {
                        let column = *columns.get_unchecked($index) as usize;
                        let values = table.column_unchecked_mut(column).data_ptr().cast::<$name>();
                        std::ptr::copy(values.add(last), values.add(row), 1);
                    }
                )*
            }
        }
    };
}

tuple_bundle!();
tuple_bundle!(A 0);
tuple_bundle!(A 0, B 1);
tuple_bundle!(A 0, B 1, C 2);
tuple_bundle!(A 0, B 1, C 2, D 3);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
tuple_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_bundle_hits_only_its_own_type() {
        let mut last = LastBundle::<u32>::default();
        assert_eq!(last.get(BundleKey::of::<(u32,)>()), None);
        last.set(BundleKey::of::<(u32,)>(), 7);
        assert_eq!(last.get(BundleKey::of::<(u32,)>()), Some(7));
        assert_eq!(last.get(BundleKey::of::<(i32,)>()), None);
        assert_eq!(last.get(BundleKey::of::<(u32, f32)>()), None);
    }

    /// Keys are addresses of promoted `TypeId` constants. Constants with different
    /// contents can never share an address (LLVM merges `unnamed_addr` constants only when
    /// their bytes are equal, and distinct types have distinct `TypeId`s), so bundle types of
    /// identical layout, zero-sized ones and the empty filler must all get distinct keys, in
    /// every build profile (run with `cargo test --release`, also with fat LTO).
    #[test]
    fn bundle_keys_of_identical_layouts_differ() {
        struct A(#[allow(dead_code)] u32);
        struct B(#[allow(dead_code)] u32);
        struct Z1;
        struct Z2;
        fn addr<T: 'static>() -> *const TypeId {
            BundleKey::of::<T>().0
        }
        let keys = [
            addr::<(A,)>(),
            addr::<(B,)>(),
            addr::<(u32,)>(),
            addr::<(Z1,)>(),
            addr::<(Z2,)>(),
            addr::<()>(),
            addr::<NoBundle>(),
            addr::<(A, B)>(),
            addr::<(B, A)>(),
        ];
        for (i, a) in keys.iter().enumerate() {
            for (j, b) in keys.iter().enumerate() {
                assert_eq!(i == j, std::ptr::eq(*a, *b), "keys {i} and {j}");
            }
        }
        let mut last = LastBundle::<u32>::default();
        last.set(BundleKey::of::<(A,)>(), 1);
        assert_eq!(last.get(BundleKey::of::<(B,)>()), None);
        assert_eq!(last.get(BundleKey::of::<(A,)>()), Some(1));
        assert_eq!(LastBundle::<u32>::default().get(BundleKey::of::<()>()), None);
    }
}
