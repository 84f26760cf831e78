//! The component types the model tracks, one of each shape storage must handle: plain data,
//! a zero-sized type, a heap-owning type, an over-aligned type, a one-byte type, a type that
//! counts its drops, and one whose `Drop` can panic.

use std::any::type_name;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tabula::{Bundle, Component};

use crate::source::Rng;

/// Two integers.
#[derive(Debug, PartialEq)]
pub struct Pos(pub i32, pub i32);

/// One integer, written by the systems and queries that count.
#[derive(Debug, PartialEq)]
pub struct Hp(pub u32);

/// Zero-sized.
#[derive(Debug, PartialEq)]
pub struct Tag;

/// Owns heap memory.
#[derive(Debug, PartialEq)]
pub struct Name(pub String);

/// Over-aligned (32 bytes).
#[derive(Debug, PartialEq)]
#[repr(align(32))]
pub struct Wide(pub [u64; 3]);

/// One byte.
#[derive(Debug, PartialEq)]
pub struct Small(pub u8);

/// Counts its creations and drops in [`Shared`], so a leak or a double drop shows.
pub struct Tracked(pub u32, Arc<Shared>);

/// Counts like [`Tracked`], and panics when dropped while [`Shared`]'s fuse is armed (once:
/// the panic disarms it, so no second panic can abort an unwind).
pub struct Bomb(pub u32, Arc<Shared>);

/// The payload of every panic the harness provokes on purpose (a [`Bomb`] going off, a
/// system told to panic), so that a panic hook can tell them from real failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedPanic(pub &'static str);

/// Counters and the fuse shared by the [`Tracked`] and [`Bomb`] values of one harness.
#[derive(Debug, Default)]
pub struct Shared {
    tracked_made: AtomicUsize,
    tracked_dropped: AtomicUsize,
    bombs_made: AtomicUsize,
    bombs_dropped: AtomicUsize,
    fuse: AtomicBool,
}

impl Shared {
    /// Makes the next [`Bomb`] dropped panic.
    pub fn arm(&self) {
        self.fuse.store(true, Ordering::SeqCst);
    }

    /// Disarms the fuse; true when it was still armed (no bomb went off).
    pub fn disarm(&self) -> bool {
        self.fuse.swap(false, Ordering::SeqCst)
    }

    /// `Tracked` values made and not yet dropped.
    pub fn tracked_alive(&self) -> isize {
        self.tracked_made.load(Ordering::SeqCst) as isize
            - self.tracked_dropped.load(Ordering::SeqCst) as isize
    }

    /// `Bomb` values made and not yet dropped.
    pub fn bombs_alive(&self) -> isize {
        self.bombs_made.load(Ordering::SeqCst) as isize - self.bombs_dropped.load(Ordering::SeqCst) as isize
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.1.tracked_dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.1.bombs_dropped.fetch_add(1, Ordering::SeqCst);
        if self.1.disarm() {
            std::panic::panic_any(ExpectedPanic("a Bomb went off"));
        }
    }
}

impl fmt::Debug for Tracked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Tracked").field(&self.0).finish()
    }
}

impl fmt::Debug for Bomb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Bomb").field(&self.0).finish()
    }
}

/// How many component kinds the model tracks.
pub const KINDS: usize = 8;

/// The kind number of [`Bomb`].
pub const BOMB: usize = 7;

/// What the model stores for a component: a plain copy of its observable value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A [`Pos`].
    Pos(i32, i32),
    /// An [`Hp`].
    Hp(u32),
    /// A [`Tag`].
    Tag,
    /// A [`Name`].
    Name(String),
    /// A [`Wide`].
    Wide([u64; 3]),
    /// A [`Small`].
    Small(u8),
    /// A [`Tracked`].
    Tracked(u32),
    /// A [`Bomb`].
    Bomb(u32),
}

impl Value {
    /// A random value of component kind `kind`.
    pub fn generate(kind: usize, rng: &mut Rng) -> Value {
        match kind {
            0 => Value::Pos(rng.next_u64() as i32, rng.below(1000) as i32 - 500),
            1 => Value::Hp(rng.below(10_000) as u32),
            2 => Value::Tag,
            3 => {
                let len = rng.below(20);
                Value::Name((0..len).map(|_| (b'a' + rng.below(26) as u8) as char).collect())
            }
            4 => Value::Wide([rng.next_u64(), rng.next_u64(), rng.next_u64()]),
            5 => Value::Small(rng.next_u64() as u8),
            6 => Value::Tracked(rng.next_u64() as u32),
            _ => Value::Bomb(rng.next_u64() as u32),
        }
    }
}

/// The Rust type name of component kind `kind`, as `EntityError::MissingComponent` names it.
pub fn kind_name(kind: usize) -> &'static str {
    match kind {
        0 => type_name::<Pos>(),
        1 => type_name::<Hp>(),
        2 => type_name::<Tag>(),
        3 => type_name::<Name>(),
        4 => type_name::<Wide>(),
        5 => type_name::<Small>(),
        6 => type_name::<Tracked>(),
        _ => type_name::<Bomb>(),
    }
}

/// A component type the model knows: its kind number, and the conversions to and from
/// [`Value`].
pub trait ModelComponent: Component + Sized + fmt::Debug {
    /// Its index in a model row.
    const KIND: usize;
    /// The component holding `value` (of this kind).
    fn make(value: &Value, shared: &Arc<Shared>) -> Self;
    /// Its value.
    fn value(&self) -> Value;
    /// `self.value() == *value`, without allocating.
    fn matches(&self, value: &Value) -> bool {
        self.value() == *value
    }
}

fn wrong(kind: &str, value: &Value) -> ! {
    panic!("a {kind} made from {value:?}")
}

impl ModelComponent for Pos {
    const KIND: usize = 0;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match *value {
            Value::Pos(x, y) => Pos(x, y),
            ref other => wrong("Pos", other),
        }
    }
    fn value(&self) -> Value {
        Value::Pos(self.0, self.1)
    }
}

impl ModelComponent for Hp {
    const KIND: usize = 1;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match *value {
            Value::Hp(hp) => Hp(hp),
            ref other => wrong("Hp", other),
        }
    }
    fn value(&self) -> Value {
        Value::Hp(self.0)
    }
}

impl ModelComponent for Tag {
    const KIND: usize = 2;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match value {
            Value::Tag => Tag,
            other => wrong("Tag", other),
        }
    }
    fn value(&self) -> Value {
        Value::Tag
    }
}

impl ModelComponent for Name {
    const KIND: usize = 3;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match value {
            Value::Name(name) => Name(name.clone()),
            other => wrong("Name", other),
        }
    }
    fn value(&self) -> Value {
        Value::Name(self.0.clone())
    }
    fn matches(&self, value: &Value) -> bool {
        matches!(value, Value::Name(name) if *name == self.0)
    }
}

impl ModelComponent for Wide {
    const KIND: usize = 4;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match *value {
            Value::Wide(words) => Wide(words),
            ref other => wrong("Wide", other),
        }
    }
    fn value(&self) -> Value {
        Value::Wide(self.0)
    }
}

impl ModelComponent for Small {
    const KIND: usize = 5;
    fn make(value: &Value, _: &Arc<Shared>) -> Self {
        match *value {
            Value::Small(n) => Small(n),
            ref other => wrong("Small", other),
        }
    }
    fn value(&self) -> Value {
        Value::Small(self.0)
    }
}

impl ModelComponent for Tracked {
    const KIND: usize = 6;
    fn make(value: &Value, shared: &Arc<Shared>) -> Self {
        match *value {
            Value::Tracked(n) => {
                shared.tracked_made.fetch_add(1, Ordering::SeqCst);
                Tracked(n, shared.clone())
            }
            ref other => wrong("Tracked", other),
        }
    }
    fn value(&self) -> Value {
        Value::Tracked(self.0)
    }
}

impl ModelComponent for Bomb {
    const KIND: usize = BOMB;
    fn make(value: &Value, shared: &Arc<Shared>) -> Self {
        match *value {
            Value::Bomb(n) => {
                shared.bombs_made.fetch_add(1, Ordering::SeqCst);
                Bomb(n, shared.clone())
            }
            ref other => wrong("Bomb", other),
        }
    }
    fn value(&self) -> Value {
        Value::Bomb(self.0)
    }
}

/// A bundle the model understands: its fields' kinds, in field order, and conversions.
pub trait ModelBundle: Bundle {
    /// The kind of each field, in field order.
    fn kinds() -> Vec<usize>;
    /// The bundle holding `values` (one per field, in field order).
    fn make(values: &[Value], shared: &Arc<Shared>) -> Self;
    /// The values of its fields, in field order.
    fn values(&self) -> Vec<Value>;
}

macro_rules! model_bundle {
    ($($name:ident $index:tt),*) => {
        impl<$($name: ModelComponent),*> ModelBundle for ($($name,)*) {
            fn kinds() -> Vec<usize> {
                vec![$($name::KIND),*]
            }
            #[allow(unused_variables, clippy::unused_unit)]
            fn make(values: &[Value], shared: &Arc<Shared>) -> Self {
                ($($name::make(&values[$index], shared),)*)
            }
            fn values(&self) -> Vec<Value> {
                vec![$(self.$index.value()),*]
            }
        }
    };
}

model_bundle!();
model_bundle!(A 0);
model_bundle!(A 0, B 1);
model_bundle!(A 0, B 1, C 2);
model_bundle!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// How many bundle shapes there are (see [`shape_kinds`]).
pub const SHAPES: usize = 16;

/// Calls `$f::<Shape>($args)` for bundle shape number `$shape` (`0..SHAPES`). Field orders
/// differ from the sorted component order on purpose.
macro_rules! with_shape {
    ($shape:expr, $f:ident($($arg:expr),*)) => {{
        use $crate::components::{Bomb, Hp, Name, Pos, Small, Tag, Tracked, Wide};
        match $shape {
            0 => $f::<()>($($arg),*),
            1 => $f::<(Pos,)>($($arg),*),
            2 => $f::<(Hp,)>($($arg),*),
            3 => $f::<(Tag,)>($($arg),*),
            4 => $f::<(Name,)>($($arg),*),
            5 => $f::<(Wide,)>($($arg),*),
            6 => $f::<(Small,)>($($arg),*),
            7 => $f::<(Tracked,)>($($arg),*),
            8 => $f::<(Bomb,)>($($arg),*),
            9 => $f::<(Pos, Hp)>($($arg),*),
            10 => $f::<(Name, Tag)>($($arg),*),
            11 => $f::<(Wide, Small, Tracked)>($($arg),*),
            12 => $f::<(Hp, Name, Wide)>($($arg),*),
            13 => $f::<(Tracked, Tag, Pos)>($($arg),*),
            14 => $f::<(Bomb, Hp, Small)>($($arg),*),
            _ => $f::<(Tracked, Small, Wide, Name, Tag, Hp, Pos, Bomb)>($($arg),*),
        }
    }};
}
pub(crate) use with_shape;

/// Calls `$f::<Kind>($args)` for component kind number `$kind` (`0..KINDS`).
macro_rules! with_kind {
    ($kind:expr, $f:ident($($arg:expr),*)) => {{
        use $crate::components::{Bomb, Hp, Name, Pos, Small, Tag, Tracked, Wide};
        match $kind {
            0 => $f::<Pos>($($arg),*),
            1 => $f::<Hp>($($arg),*),
            2 => $f::<Tag>($($arg),*),
            3 => $f::<Name>($($arg),*),
            4 => $f::<Wide>($($arg),*),
            5 => $f::<Small>($($arg),*),
            6 => $f::<Tracked>($($arg),*),
            _ => $f::<Bomb>($($arg),*),
        }
    }};
}
pub(crate) use with_kind;

fn kinds_of<B: ModelBundle>() -> Vec<usize> {
    B::kinds()
}

/// The kinds of bundle shape `shape`, in field order.
pub fn shape_kinds(shape: usize) -> Vec<usize> {
    with_shape!(shape, kinds_of())
}
