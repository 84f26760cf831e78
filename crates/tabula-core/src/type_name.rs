//! Type names for messages: [`std::any::type_name`] without the module paths.
//!
//! `type_name` spells every path out in full (`(&mut my_game::components::Position,
//! &my_game::Velocity)`), which buries the types a message is about. [`short_type_name`]
//! keeps the shape of the name — generics, tuples, references, arrays, `dyn` — and cuts each
//! path to its last segment.

/// Shortens every path in a type name to its last segment, keeping everything around the
/// paths as it is: `(&mut my_game::Position, core::option::Option<&my_game::Health>)` becomes
/// `(&mut Position, Option<&Health>)`.
///
/// Closures keep the function they are defined in (`my_game::main::{{closure}}` becomes
/// `main::{{closure}}`), so they stay recognisable; elided lifetimes (`'_`) are dropped.
/// The result is for people to read: it is not unique (`a::Position` and `b::Position`
/// both become `Position`) and is not meant to be parsed.
///
/// ```
/// use tabula::short_type_name;
///
/// struct Position;
/// assert_eq!(short_type_name(std::any::type_name::<Option<&Position>>()), "Option<&Position>");
/// assert_eq!(short_type_name("[alloc::string::String; 3]"), "[String; 3]");
/// ```
pub fn short_type_name(full: &str) -> String {
    let mut short = String::with_capacity(full.len());
    let mut rest = full;
    while let Some(c) = rest.chars().next() {
        if is_path_char(c) {
            let end = rest.find(|c| !is_path_char(c)).unwrap_or(rest.len());
            push_last_segment(&mut short, &rest[..end]);
            rest = &rest[end..];
        } else if let Some(after) = rest.strip_prefix("'_") {
            rest = skip_elided_lifetime(&mut short, after);
        } else {
            short.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    short
}

/// True for the characters of a path: identifiers, numbers, `::` and the braces of
/// `{{closure}}`.
fn is_path_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | ':' | '{' | '}')
}

/// Appends the last segment of `path` (with the function a closure is in), keeping a leading
/// `::` (`<T as Trait>::Assoc`) and a trailing one (`function::<T>`).
fn push_last_segment(short: &mut String, path: &str) {
    let inner = path.trim_start_matches("::");
    if inner.len() < path.len() {
        short.push_str("::");
    }
    let turbofish = inner.ends_with("::");
    let inner = inner.strip_suffix("::").unwrap_or(inner);
    let segments: Vec<&str> = inner.split("::").collect();
    // `{{closure}}` and its kin name no item of their own: keep the segment they are in.
    let named = segments
        .iter()
        .rposition(|segment| !segment.starts_with("{{"))
        .unwrap_or(0);
    short.push_str(&segments[named..].join("::"));
    if turbofish {
        short.push_str("::");
    }
}

/// Drops an elided lifetime (`'_`, just removed from the front of `after`) with its separator:
/// `Query<'_, '_, &A>` becomes `Query<&A>`, `Ref<'_>` becomes `Ref`. Returns what follows.
fn skip_elided_lifetime<'a>(short: &mut String, after: &'a str) -> &'a str {
    if let Some(after) = after.strip_prefix(", ").or_else(|| after.strip_prefix(' ')) {
        return after;
    }
    if short.ends_with('<')
        && let Some(after) = after.strip_prefix('>')
    {
        short.pop();
        return after;
    }
    short.push_str("'_");
    after
}

#[cfg(test)]
mod tests {
    use super::short_type_name;

    #[test]
    fn paths_are_cut_to_their_last_segment() {
        assert_eq!(short_type_name("i32"), "i32");
        assert_eq!(short_type_name("my_game::Position"), "Position");
        assert_eq!(short_type_name("&my_game::components::Position"), "&Position");
        assert_eq!(short_type_name("&mut my_game::Position"), "&mut Position");
        assert_eq!(short_type_name("*const a::B"), "*const B");
        assert_eq!(short_type_name("&str"), "&str");
        assert_eq!(short_type_name("&'static str"), "&'static str");
    }

    #[test]
    fn generics_tuples_and_arrays_keep_their_shape() {
        assert_eq!(
            short_type_name("(&mut my_game::components::Position, &my_game::Velocity)"),
            "(&mut Position, &Velocity)"
        );
        assert_eq!(
            short_type_name("core::option::Option<&my_game::Health>"),
            "Option<&Health>"
        );
        assert_eq!(
            short_type_name(
                "tabula_schedule::param::Query<&a::Position, tabula_core::query::filter::With<a::Player>>"
            ),
            "Query<&Position, With<Player>>"
        );
        assert_eq!(
            short_type_name(
                "alloc::vec::Vec<std::collections::hash::map::HashMap<alloc::string::String, (u8, [a::B; 3])>>"
            ),
            "Vec<HashMap<String, (u8, [B; 3])>>"
        );
        assert_eq!(short_type_name("[a::B]"), "[B]");
        assert_eq!(short_type_name("()"), "()");
        assert_eq!(short_type_name("((), (a::B,))"), "((), (B,))");
    }

    #[test]
    fn dyn_fn_pointers_and_qualified_paths() {
        assert_eq!(
            short_type_name(
                "alloc::boxed::Box<dyn core::ops::function::Fn(a::B) -> a::C + core::marker::Send>"
            ),
            "Box<dyn Fn(B) -> C + Send>"
        );
        assert_eq!(
            short_type_name("dyn a::Trait<Item = a::B>"),
            "dyn Trait<Item = B>"
        );
        assert_eq!(short_type_name("fn(&a::B) -> u32"), "fn(&B) -> u32");
        assert_eq!(
            short_type_name("<a::B as a::Trait>::Assoc"),
            "<B as Trait>::Assoc"
        );
        assert_eq!(short_type_name("a::function::<a::B>"), "function::<B>");
    }

    #[test]
    fn closures_keep_the_function_they_are_in() {
        assert_eq!(short_type_name("my_game::main::{{closure}}"), "main::{{closure}}");
        assert_eq!(
            short_type_name("my_game::main::{{closure}}::{{closure}}"),
            "main::{{closure}}::{{closure}}"
        );
        assert_eq!(
            short_type_name("a::Wrapper<my_game::setup::{{closure}}>"),
            "Wrapper<setup::{{closure}}>"
        );
        assert_eq!(short_type_name("{{closure}}"), "{{closure}}");
        let closure = || ();
        assert_eq!(
            short_type_name(type_name_of(&closure)),
            "closures_keep_the_function_they_are_in::{{closure}}"
        );
    }

    fn type_name_of<T>(_: &T) -> &'static str {
        std::any::type_name::<T>()
    }

    #[test]
    fn elided_lifetimes_are_dropped() {
        assert_eq!(
            short_type_name("tabula_schedule::param::Query<'_, '_, &a::Position>"),
            "Query<&Position>"
        );
        assert_eq!(short_type_name("tabula_core::change::Ref<'_>"), "Ref");
        assert_eq!(short_type_name("a::Ref<'_, '_>"), "Ref");
        assert_eq!(short_type_name("&'_ a::B"), "&B");
        assert_eq!(short_type_name("a::Holder<'a, a::B>"), "Holder<'a, B>");
    }

    #[test]
    fn odd_input_passes_through() {
        assert_eq!(short_type_name(""), "");
        assert_eq!(short_type_name("::"), "::");
        assert_eq!(short_type_name("a::"), "a::");
        assert_eq!(short_type_name("'_"), "'_");
        assert_eq!(short_type_name("Ünïcode::Typé"), "Typé");
    }
}
