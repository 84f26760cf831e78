//! # tabula-macros: the derives of the tabula ECS
//!
//! Use them through the `tabula` crate, which re-exports both next to the traits they
//! implement: `use tabula::prelude::*;` (or `tabula::SystemParam`, `tabula::Bundle`).
//!
//! - `#[derive(SystemParam)]`: a struct of system parameters is one parameter.
//! - `#[derive(Bundle)]`: a struct of components is a bundle.
//!
//! The generated code names the facade's paths (`::tabula::...`), so the crate using the
//! derives depends on `tabula` under that name.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Data, DeriveInput, Fields, GenericArgument, GenericParam, Generics, Ident, Lifetime, Type,
    WherePredicate, parse_macro_input, parse_quote,
};

/// The most members a tuple `SystemParam` has; longer field lists are nested.
const TUPLE_MAX: usize = 16;

/// Makes a struct of system parameters one parameter: its access is its fields' together,
/// each field checked against the others and against the system's other parameters as if
/// it were a parameter of its own.
///
/// The struct's lifetimes are named `'w` (data borrowed from the world: `Query`, `Res`,
/// `ResMut`, `&World`, `Commands`, ...) and `'s` (the system's own state: `Query`, `Local`,
/// `Commands`, `EventReader`, ...); it may have either, both or neither. Query data types
/// spell their lifetime out as `'static`: `Query<'w, 's, &'static mut Position>` (the
/// query's items still borrow only for the run).
///
/// ```
/// use tabula::prelude::*;
///
/// struct Position(f32);
/// struct Velocity(f32);
/// struct Dt(f32);
///
/// #[derive(SystemParam)]
/// struct Movement<'w, 's> {
///     movers: Query<'w, 's, (&'static mut Position, &'static Velocity)>,
///     dt: Res<'w, Dt>,
/// }
///
/// fn movement(mut m: Movement) {
///     let dt = m.dt.0;
///     m.movers.for_each(|(mut p, v)| p.0 += v.0 * dt);
/// }
///
/// let mut world = World::new();
/// world.insert_resource(Dt(0.5));
/// let e = world.spawn((Position(0.0), Velocity(4.0)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems(movement);
/// schedule.run(&mut world);
/// assert_eq!(world.get::<Position>(e).unwrap().0, 2.0);
/// ```
///
/// Tuple structs and unit structs work too; enums and unions do not.
#[proc_macro_derive(SystemParam)]
pub fn derive_system_param(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    system_param(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Makes a struct with named fields a bundle: spawned, inserted and removed as the tuple of
/// its fields, in declaration order. Each field is a component, except those marked
/// `#[bundle]`, whose type is a bundle in turn (another `#[derive(Bundle)]` struct, or a
/// tuple of components), flattened into this one; 16 components at most in all.
///
/// ```
/// use tabula::prelude::*;
///
/// #[derive(Debug, PartialEq)]
/// struct Position(f32);
/// #[derive(Debug, PartialEq)]
/// struct Health(u32);
/// struct Enemy;
///
/// #[derive(Bundle)]
/// struct Body {
///     position: Position,
///     health: Health,
/// }
///
/// #[derive(Bundle)]
/// struct EnemyBundle {
///     #[bundle]
///     body: Body,
///     marker: Enemy,
/// }
///
/// let mut world = World::new();
/// let e = world.spawn(EnemyBundle {
///     body: Body { position: Position(1.0), health: Health(3) },
///     marker: Enemy,
/// });
/// assert!(world.get::<Enemy>(e).is_ok());
/// let body = world.remove::<Body>(e).unwrap();
/// assert_eq!(body.health, Health(3));
/// ```
///
/// The struct itself is not stored: a query for `Body` finds nothing, queries for
/// `Position` and `Health` find the entity. The trait implemented is `tabula::DerivedBundle`,
/// through which every such struct is a `tabula::Bundle`.
#[proc_macro_derive(Bundle, attributes(bundle))]
pub fn derive_bundle(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    bundle(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

// ---------------------------------------------------------------------------------------
// SystemParam

fn system_param(input: DeriveInput) -> syn::Result<TokenStream2> {
    let fields = match &input.data {
        Data::Struct(data) => &data.fields,
        Data::Enum(data) => {
            return Err(syn::Error::new_spanned(
                data.enum_token,
                "`#[derive(SystemParam)]` needs a struct whose fields are system parameters; an enum \
                 cannot be fetched for a run, since the system cannot tell which variant it wants. \
                 Make it a struct, or take the variants' parameters in a `ParamSet` and choose at \
                 run time",
            ));
        }
        Data::Union(data) => {
            return Err(syn::Error::new_spanned(
                data.union_token,
                "`#[derive(SystemParam)]` needs a struct whose fields are system parameters, not a union",
            ));
        }
    };
    let w = Lifetime::new("'__tabula_w", Span::call_site());
    let s = Lifetime::new("'__tabula_s", Span::call_site());
    // The item type: the struct with its `'w` and `'s` replaced by the GAT's.
    let mut item_args = Vec::new();
    for param in &input.generics.params {
        item_args.push(match param {
            GenericParam::Lifetime(def) => match def.lifetime.ident.to_string().as_str() {
                "w" => GenericArgument::Lifetime(w.clone()),
                "s" => GenericArgument::Lifetime(s.clone()),
                _ => {
                    return Err(syn::Error::new_spanned(
                        &def.lifetime,
                        "`#[derive(SystemParam)]` gives a struct's lifetimes their meaning by name: \
                         call it `'w` for data borrowed from the world (`Query`, `Res`, `ResMut`, \
                         `&World`, `Commands`) or `'s` for the system's own state (`Query`, `Local`, \
                         `Commands`, `EventReader`), as in `struct Movement<'w, 's> { .. }`",
                    ));
                }
            },
            GenericParam::Type(def) => {
                let ident = &def.ident;
                GenericArgument::Type(parse_quote!(#ident))
            }
            GenericParam::Const(def) => {
                let ident = &def.ident;
                GenericArgument::Const(parse_quote!(#ident))
            }
        });
    }
    let name = &input.ident;
    let types: Vec<&Type> = fields.iter().map(|field| &field.ty).collect();
    let bindings: Vec<Ident> = (0..types.len())
        .map(|i| format_ident!("__tabula_field_{i}"))
        .collect();
    let tuple = nest(&types.iter().map(|ty| quote!(#ty)).collect::<Vec<_>>());
    let pattern = nest(&bindings.iter().map(|b| quote!(#b)).collect::<Vec<_>>());
    let construct = match fields {
        Fields::Named(_) => {
            let members = fields.members();
            quote!(#name { #(#members: #bindings),* })
        }
        Fields::Unnamed(_) => quote!(#name(#(#bindings),*)),
        Fields::Unit => quote!(#name),
    };
    // Each field a parameter, with the error at the field's type when it is not. (Not as
    // where clauses of the impl: a bound there would stand in for the field's impl, and hide
    // its `State` and `Item` types from the delegation.)
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let checks = types
        .iter()
        .map(|ty| quote_spanned!(ty.span()=> __tabula_is_system_param::<#ty>();));
    let param = quote!(::tabula::schedule::SystemParam);
    let tuple_param = quote!(<#tuple as #param>);
    Ok(quote! {
        const _: () = {
            #[allow(dead_code, clippy::extra_unused_lifetimes)]
            fn __tabula_fields_are_system_params #impl_generics () #where_clause {
                fn __tabula_is_system_param<P: ::tabula::schedule::SystemParam>() {}
                #(#checks)*
            }
        };

        // SAFETY: every method delegates to the tuple of the fields' types, which declares
        // each field's access (checked against the others) and fetches exactly the fields.
        #[automatically_derived]
        #[allow(clippy::undocumented_unsafe_blocks)]
        unsafe impl #impl_generics #param for #name #ty_generics #where_clause {
            type State = #tuple_param::State;
            type Item<#w, #s> = #name<#(#item_args),*>;

            fn init_state(
                world: &mut ::tabula::World,
                meta: &mut ::tabula::schedule::SystemMeta,
            ) -> Self::State {
                #tuple_param::init_state(world, meta)
            }

            fn update_archetypes(state: &mut Self::State, world: &::tabula::World) {
                #tuple_param::update_archetypes(state, world)
            }

            fn has_deferred(state: &Self::State) -> bool {
                #tuple_param::has_deferred(state)
            }

            fn apply_deferred(
                state: &mut Self::State,
                world: &mut ::tabula::World,
                errors: &mut ::std::vec::Vec<::tabula::CommandError>,
            ) {
                #tuple_param::apply_deferred(state, world, errors)
            }

            fn discard_deferred(state: &mut Self::State, world: &mut ::tabula::World) {
                #tuple_param::discard_deferred(state, world)
            }

            unsafe fn get_param<#w, #s>(
                state: &#s mut Self::State,
                meta: &::tabula::schedule::SystemMeta,
                world: ::tabula::UnsafeWorldCell<#w>,
                ticks: ::tabula::schedule::RunTicks,
            ) -> Self::Item<#w, #s> {
                // SAFETY: the caller's contract, forwarded to the tuple of the fields.
                let #pattern = unsafe { #tuple_param::get_param(state, meta, world, ticks) };
                #construct
            }
        }
    })
}

/// `items` as a tuple, `(a, b,)`; more than [`TUPLE_MAX`] are nested in tuples of at most
/// that many, so that every tuple is one the traits are implemented for.
fn nest(items: &[TokenStream2]) -> TokenStream2 {
    if items.len() <= TUPLE_MAX {
        return quote!((#(#items,)*));
    }
    let groups: Vec<TokenStream2> = items.chunks(TUPLE_MAX).map(nest).collect();
    nest(&groups)
}

/// `ty: bound`, with the error at the field's type when it does not hold.
fn field_bound(ty: &Type, bound: TokenStream2) -> WherePredicate {
    let bound = quote_spanned!(ty.span()=> #bound);
    syn::parse2(quote_spanned!(ty.span()=> #ty: #bound)).expect("a where predicate")
}

// ---------------------------------------------------------------------------------------
// Bundle

/// A run of a bundle's fields that becomes one tuple before the runs are joined.
enum Segment<'a> {
    /// Consecutive component fields.
    Components(Vec<(&'a Ident, &'a Type)>),
    /// A `#[bundle]` field whose type derives `Bundle`.
    Nested(&'a Ident, &'a Type),
    /// A `#[bundle]` field of tuple type: a tuple of components.
    Tuple(&'a Ident, &'a Type),
}

const BUNDLE_SHAPE: &str = "`#[derive(Bundle)]` needs a struct with named fields, each a component \
     (or a nested bundle marked `#[bundle]`), as in `struct Ship { position: Position, velocity: Velocity }`";

fn bundle(input: DeriveInput) -> syn::Result<TokenStream2> {
    let fields = match &input.data {
        Data::Struct(data) => match &data.fields {
            Fields::Named(fields) => &fields.named,
            Fields::Unnamed(fields) => {
                return Err(syn::Error::new_spanned(
                    fields,
                    format!(
                        "{BUNDLE_SHAPE}. A tuple struct is usually meant to be one component \
                         (`struct Health(u32)`): components need no derive, so drop \
                         `#[derive(Bundle)]` and spawn it as `(Health(3),)`; for a bundle, name the fields"
                    ),
                ));
            }
            Fields::Unit => {
                return Err(syn::Error::new_spanned(
                    &input.ident,
                    format!(
                        "{BUNDLE_SHAPE}. A unit struct is a component (a marker): components need \
                         no derive, so drop `#[derive(Bundle)]` and spawn it as `(Marker,)`"
                    ),
                ));
            }
        },
        Data::Enum(data) => {
            return Err(syn::Error::new_spanned(
                data.enum_token,
                format!(
                    "{BUNDLE_SHAPE}; an enum has no fixed set of components. To store the enum \
                     itself, use it as a component: components need no derive"
                ),
            ));
        }
        Data::Union(data) => {
            return Err(syn::Error::new_spanned(
                data.union_token,
                format!("{BUNDLE_SHAPE}, not a union"),
            ));
        }
    };

    let mut segments: Vec<Segment> = Vec::new();
    // Each field a component (or, with `#[bundle]`, a bundle). As where clauses, so that the
    // impl itself assumes them and a bad field is reported once.
    let mut predicates: Vec<WherePredicate> = Vec::new();
    let mut components = 0;
    for field in fields {
        let member = field.ident.as_ref().expect("named fields");
        let ty = &field.ty;
        let mut nested = false;
        for attr in field.attrs.iter().filter(|attr| attr.path().is_ident("bundle")) {
            attr.meta.require_path_only().map_err(|_| {
                syn::Error::new_spanned(attr, "`#[bundle]` takes no arguments: write `#[bundle]`")
            })?;
            nested = true;
        }
        match (nested, ty) {
            (true, Type::Tuple(_)) => segments.push(Segment::Tuple(member, ty)),
            (true, _) => {
                predicates.push(field_bound(ty, quote!(::tabula::DerivedBundle)));
                segments.push(Segment::Nested(member, ty));
            }
            (false, Type::Tuple(tuple)) if !tuple.elems.is_empty() => {
                return Err(syn::Error::new_spanned(
                    ty,
                    "a tuple field would be stored as one component of that tuple type, which no \
                     query for its elements finds: mark the field `#[bundle]` to flatten its \
                     components into this bundle, or wrap the values in a struct if one component \
                     is meant",
                ));
            }
            (false, _) => {
                components += 1;
                if components > TUPLE_MAX {
                    return Err(syn::Error::new_spanned(
                        field,
                        "a bundle holds at most 16 components: split the struct into two bundles \
                         and insert the second one separately",
                    ));
                }
                predicates.push(field_bound(ty, quote!(::tabula::Component)));
                match segments.last_mut() {
                    Some(Segment::Components(run)) => run.push((member, ty)),
                    _ => segments.push(Segment::Components(vec![(member, ty)])),
                }
            }
        }
    }

    // Each segment: its tuple type, the expression that builds it from the struct's fields
    // (bound by `let Self { .. } = self`), and the statements that rebuild the fields from it.
    let binding = |member: &Ident| format_ident!("__tabula_{member}");
    let mut parts = Vec::new();
    for (i, segment) in segments.iter().enumerate() {
        let part = format_ident!("__tabula_part_{i}");
        parts.push(match segment {
            Segment::Components(run) => {
                let types = run.iter().map(|(_, ty)| ty);
                let bindings: Vec<Ident> = run.iter().map(|(member, _)| binding(member)).collect();
                (
                    quote!((#(#types,)*)),
                    quote!((#(#bindings,)*)),
                    quote!(let (#(#bindings,)*) = #part;),
                )
            }
            Segment::Nested(member, ty) => {
                let b = binding(member);
                (
                    quote!(<#ty as ::tabula::DerivedBundle>::Tuple),
                    quote!(<#ty as ::tabula::DerivedBundle>::into_tuple(#b)),
                    quote!(let #b = <#ty as ::tabula::DerivedBundle>::from_tuple(#part);),
                )
            }
            Segment::Tuple(member, ty) => {
                let b = binding(member);
                (quote!(#ty), quote!(#b), quote!(let #b = #part;))
            }
        });
    }
    let concat = quote!(::tabula::TupleConcat);
    // The joined tuple type and value, and the prefix types the split needs.
    let (mut tuple, mut value) = match parts.first() {
        Some((ty, value, _)) => (ty.clone(), value.clone()),
        None => (quote!(()), quote!(())),
    };
    let mut prefixes = vec![tuple.clone()];
    for (ty, part_value, _) in parts.iter().skip(1) {
        value = quote!(#concat::concat(#value, #part_value));
        tuple = quote!(<#tuple as #concat<#ty>>::Output);
        prefixes.push(tuple.clone());
    }
    // Split from the last part down to the first.
    let mut split = Vec::new();
    for i in (1..parts.len()).rev() {
        let prefix = &prefixes[i - 1];
        let ty = &parts[i].0;
        let part = format_ident!("__tabula_part_{i}");
        split.push(quote!(let (__tabula_rest, #part) = <#prefix as #concat<#ty>>::split(__tabula_rest);));
    }
    let rebuild = parts.iter().map(|(_, _, rebuild)| rebuild);
    let members: Vec<&Ident> = fields.iter().map(|f| f.ident.as_ref().expect("named")).collect();
    let bindings: Vec<Ident> = members.iter().map(|m| format_ident!("__tabula_{m}")).collect();
    let first_part = if parts.is_empty() {
        quote!(let () = __tabula_rest;)
    } else {
        quote!(let __tabula_part_0 = __tabula_rest;)
    };

    let name = &input.ident;
    let mut generics: Generics = input.generics.clone();
    let where_clause = generics.make_where_clause();
    where_clause.predicates.extend(predicates);
    if !input.generics.params.is_empty() {
        // With generic fields the tuple is a bundle only under the struct's own bounds.
        where_clause
            .predicates
            .push(parse_quote!(#tuple: ::tabula::Bundle));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    Ok(quote! {
        #[automatically_derived]
        #[allow(clippy::unused_unit)]
        impl #impl_generics ::tabula::DerivedBundle for #name #ty_generics #where_clause {
            type Tuple = #tuple;

            #[inline(always)]
            fn into_tuple(self) -> Self::Tuple {
                let #name { #(#members: #bindings),* } = self;
                #value
            }

            #[inline(always)]
            fn from_tuple(tuple: Self::Tuple) -> Self {
                let __tabula_rest = tuple;
                #(#split)*
                #first_part
                #(#rebuild)*
                #name { #(#members: #bindings),* }
            }
        }
    })
}
