//! Templates read from a data file (the `serde` feature): a designer edits a file, not Rust.
//!
//! The file is a map from template name to definition, in any serde format:
//!
//! ```json
//! {
//!   "ship":      { "components": { "Hull": 100, "Speed": 2.0 },
//!                  "children": [ { "name": "turret", "components": { "Turret": null } } ] },
//!   "flagship":  { "extends": "ship", "components": { "Hull": 500 } }
//! }
//! ```
//!
//! A definition has optional `extends` (a base's name, or a list of them: templates of the
//! same file, in any order, or templates already registered in the world), `components` (a
//! map from a component's registered name to its value) and `children` (a list of
//! definitions, each with a `name`). Components are named as registered with
//! [`World::register_template_component`], which records, beside the serde functions of
//! [`World::register_serde`], a function that reads one value and adds it to a template.
//!
//! # One value, many entities
//!
//! A template spawns any number of entities, so each value read from the file is made many
//! times. The file is read once: each value is deserialised once into a prototype of the
//! component's type, and each spawn clones it, as [`Template::with`] does for a value given
//! in code. So a component listed in a data template must be `Clone`, which
//! `register_template_component` requires (at registration, where the type is known — not
//! at each spawn, and not by re-reading the file).

use std::cell::RefCell;
use std::fmt;

use serde::Serialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor,
};

use super::{Template, TemplateError, Templates};
use crate::component::{Component, ComponentId};
use crate::world::World;

/// A component's own part of a template read from a file: adds its prototype to a template.
pub(crate) type Own = Box<dyn FnOnce(Template) -> Template>;

/// Reads one value of a component registered for templates, as an [`Own`].
pub(crate) type ReadFn = fn(&mut dyn erased_serde::Deserializer<'_>) -> Result<Own, erased_serde::Error>;

/// [`ReadFn`] for `T`.
fn read_component<T: Component + Clone + DeserializeOwned>(
    deserializer: &mut dyn erased_serde::Deserializer<'_>,
) -> Result<Own, erased_serde::Error> {
    let value: T = erased_serde::deserialize(deserializer)?;
    Ok(Box::new(move |template: Template| template.with(value)))
}

impl World {
    /// Registers `T` for save and load under `name` (as [`register_serde`](Self::register_serde)
    /// does) and as a component that templates read from a data file may list under that
    /// name ([`load_templates`](Self::load_templates)). `T` must be `Clone`: the value read
    /// from the file is the prototype each spawned entity gets a clone of.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Clone, Serialize, Deserialize)]
    /// struct Hull(u32);
    ///
    /// let mut world = World::new();
    /// let id = world.register_template_component::<Hull>("Hull");
    /// assert_eq!(world.component_by_serde_name("Hull"), Some(id));
    /// ```
    ///
    /// # Panics
    /// As [`register_serde`](Self::register_serde): when `name` belongs to another
    /// component, or `T` was registered under another name.
    #[track_caller]
    pub fn register_template_component<T: Component + Clone + Serialize + DeserializeOwned>(
        &mut self,
        name: &'static str,
    ) -> ComponentId {
        let id = self.register_serde::<T>(name);
        self.init_resource::<Templates>();
        (self.resource_mut::<Templates>().expect("just inserted").readers).insert(name, read_component::<T>);
        id
    }

    /// Reads templates from a data file (see the [module docs](crate::template) for the
    /// format) and returns them in file order, without registering them. A template's bases
    /// are looked up in the file first, then among the templates registered in the world.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    /// struct Hull(u32);
    ///
    /// let mut world = World::new();
    /// world.register_template_component::<Hull>("Hull");
    /// let file = r#"{ "rock": { "components": { "Hull": 3 } } }"#;
    /// let templates = world.read_templates(&mut serde_json::Deserializer::from_str(file))?;
    /// let rock = world.spawn_template(&templates[0]);
    /// assert_eq!(world.get::<Hull>(rock)?, &Hull(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`TemplateError`] naming the template (a child as `parent/child`) and, where there
    /// is one, the component: [`UnknownComponent`](TemplateError::UnknownComponent),
    /// [`BadValue`](TemplateError::BadValue), [`UnknownBase`](TemplateError::UnknownBase),
    /// [`Cycle`](TemplateError::Cycle), or [`Malformed`](TemplateError::Malformed) for input
    /// that is not a template file.
    pub fn read_templates<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
    ) -> Result<Vec<Template>, TemplateError> {
        let empty = Templates::default();
        let registered = self.resource::<Templates>().unwrap_or(&empty);
        let context = Context {
            readers: registered,
            error: RefCell::new(None),
        };
        let parsed = match (FileSeed { context: &context }).deserialize(deserializer) {
            Ok(parsed) => parsed,
            Err(error) => {
                return Err(context
                    .error
                    .into_inner()
                    .unwrap_or_else(|| TemplateError::Malformed {
                        message: error.to_string(),
                    }));
            }
        };
        Resolver {
            names: parsed.iter().map(|(name, _)| name.clone()).collect(),
            pending: parsed
                .into_iter()
                .map(|(_, definition)| Some(definition))
                .collect(),
            built: Vec::new(),
            stack: Vec::new(),
            registered,
        }
        .build_all()
    }

    /// Reads templates from a data file, as [`read_templates`](Self::read_templates), and
    /// registers them all ([`register_template`](Self::register_template)), in file order;
    /// returns how many. On an error none is registered.
    ///
    /// ```
    /// use serde::{Deserialize, Serialize};
    /// use tabula::World;
    ///
    /// #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    /// struct Hull(u32);
    /// #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    /// struct Speed(f32);
    ///
    /// let mut world = World::new();
    /// world.register_template_component::<Hull>("Hull");
    /// world.register_template_component::<Speed>("Speed");
    /// let file = r#"{
    ///     "flagship": { "extends": "ship", "components": { "Hull": 500 } },
    ///     "ship":     { "components": { "Hull": 100, "Speed": 2.0 } }
    /// }"#;
    /// assert_eq!(world.load_templates(&mut serde_json::Deserializer::from_str(file))?, 2);
    /// let e = world.spawn_template_named("flagship")?;
    /// assert_eq!(world.get::<Hull>(e)?, &Hull(500));
    /// assert_eq!(world.get::<Speed>(e)?, &Speed(2.0)); // from the base
    ///
    /// let bad = r#"{ "mine": { "components": { "Hull": "lots" } } }"#;
    /// let error = world.load_templates(&mut serde_json::Deserializer::from_str(bad)).unwrap_err();
    /// assert!(error.to_string().starts_with(r#"template "mine", component "Hull": bad value: invalid type"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`read_templates`](Self::read_templates); nothing is registered then.
    pub fn load_templates<'de, D: Deserializer<'de>>(
        &mut self,
        deserializer: D,
    ) -> Result<usize, TemplateError> {
        let templates = self.read_templates(deserializer)?;
        let count = templates.len();
        for template in templates {
            self.register_template(template);
        }
        Ok(count)
    }
}

/// What the seeds share: the registered readers and templates, and the first error with
/// its context (the format's own error type cannot carry it).
struct Context<'a> {
    readers: &'a Templates,
    error: RefCell<Option<TemplateError>>,
}

impl Context<'_> {
    /// Records `error` (the first one wins) and returns it as the format's error.
    fn fail<E: de::Error>(&self, error: TemplateError) -> E {
        let message = error.to_string();
        self.error.borrow_mut().get_or_insert(error);
        E::custom(message)
    }
}

/// One template as read, before its bases are resolved.
struct Definition {
    /// The template's name (a child's own name).
    name: String,
    /// How errors name it: the name, or `parent/child` for a child.
    path: String,
    extends: Vec<String>,
    components: Vec<Own>,
    children: Vec<Definition>,
}

/// The whole file: template name → definition, in file order.
struct FileSeed<'c, 'a> {
    context: &'c Context<'a>,
}

impl<'de> DeserializeSeed<'de> for FileSeed<'_, '_> {
    type Value = Vec<(String, Definition)>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_, '_> {
    type Value = Vec<(String, Definition)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map from template name to template")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut templates: Vec<(String, Definition)> = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if templates.iter().any(|(n, _)| *n == name) {
                return Err(A::Error::custom(format_args!(
                    "template \"{name}\" is defined twice"
                )));
            }
            let definition = map.next_value_seed(DefinitionSeed {
                context: self.context,
                name: Some(name.clone()),
                path: name.clone(),
                parent: None,
            })?;
            templates.push((name, definition));
        }
        Ok(templates)
    }
}

/// One definition; `name` is known for a file's template (its key) and read for a child.
struct DefinitionSeed<'c, 'a> {
    context: &'c Context<'a>,
    name: Option<String>,
    /// How errors name it: `parent/children[i]` for a child until its name is read.
    path: String,
    /// A child's parent's path.
    parent: Option<String>,
}

const DEFINITION_FIELDS: &[&str] = &["name", "extends", "components", "children"];

impl<'de> DeserializeSeed<'de> for DefinitionSeed<'_, '_> {
    type Value = Definition;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Definition, D::Error> {
        deserializer.deserialize_struct("Template", DEFINITION_FIELDS, self)
    }
}

impl<'de> Visitor<'de> for DefinitionSeed<'_, '_> {
    type Value = Definition;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "template \"{}\": a map with components, extends, children",
            self.path
        )
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Definition, A::Error> {
        let mut extends = None;
        let mut components = None;
        let mut children = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => {
                    let name: String = map.next_value()?;
                    match &self.name {
                        Some(given) if *given != name => {
                            return Err(A::Error::custom(format_args!(
                                "template \"{}\" has the name \"{name}\" inside; leave it out or make them equal",
                                self.path
                            )));
                        }
                        _ => {}
                    }
                    if let Some(parent) = &self.parent {
                        self.path = format!("{parent}/{name}");
                    }
                    self.name = Some(name);
                }
                "extends" => extends = Some(map.next_value::<OneOrMany>()?.0),
                "components" => {
                    components = Some(map.next_value_seed(ComponentsSeed {
                        context: self.context,
                        path: &self.path,
                    })?)
                }
                "children" => {
                    children = Some(map.next_value_seed(ChildrenSeed {
                        context: self.context,
                        path: &self.path,
                    })?)
                }
                other => {
                    return Err(A::Error::custom(format_args!(
                        "template \"{}\": unknown field `{other}` (expected name, extends, components or children)",
                        self.path
                    )));
                }
            }
        }
        let name = (self.name).ok_or_else(|| {
            A::Error::custom(format_args!("template \"{}\": a child needs a `name`", self.path))
        })?;
        Ok(Definition {
            name,
            path: self.path,
            extends: extends.unwrap_or_default(),
            components: components.unwrap_or_default(),
            children: children.unwrap_or_default(),
        })
    }
}

/// `"base"` or `["base", ...]`.
struct OneOrMany(Vec<String>);

impl<'de> de::Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a template name or a list of them")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = seq.next_element()? {
                    names.push(name);
                }
                Ok(OneOrMany(names))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// A definition's `components`: registered name → value.
struct ComponentsSeed<'c, 'a, 'p> {
    context: &'c Context<'a>,
    path: &'p str,
}

impl<'de> DeserializeSeed<'de> for ComponentsSeed<'_, '_, '_> {
    type Value = Vec<Own>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Own>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ComponentsSeed<'_, '_, '_> {
    type Value = Vec<Own>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "template \"{}\": a map from component name to value",
            self.path
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Own>, A::Error> {
        let mut own = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        while let Some(component) = map.next_key::<String>()? {
            let Some(&read) = self.context.readers.readers.get(component.as_str()) else {
                let mut known: Vec<&str> = self.context.readers.readers.keys().copied().collect();
                known.sort_unstable();
                return Err(self.context.fail(TemplateError::UnknownComponent {
                    template: self.path.to_owned(),
                    component,
                    known: known.into_iter().map(str::to_owned).collect(),
                }));
            };
            if seen.contains(&component) {
                return Err(self.context.fail(TemplateError::BadValue {
                    template: self.path.to_owned(),
                    component,
                    message: "listed twice".to_owned(),
                }));
            }
            match map.next_value_seed(ComponentSeed { read }) {
                Ok(value) => own.push(value),
                Err(error) => {
                    return Err(self.context.fail(TemplateError::BadValue {
                        template: self.path.to_owned(),
                        component,
                        message: error.to_string(),
                    }));
                }
            }
            seen.push(component);
        }
        Ok(own)
    }
}

/// One component value, read through its registered function.
struct ComponentSeed {
    read: ReadFn,
}

impl<'de> DeserializeSeed<'de> for ComponentSeed {
    type Value = Own;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Own, D::Error> {
        let mut erased = <dyn erased_serde::Deserializer>::erase(deserializer);
        (self.read)(&mut erased).map_err(D::Error::custom)
    }
}

/// A definition's `children`: a list of definitions, each with a name.
struct ChildrenSeed<'c, 'a, 'p> {
    context: &'c Context<'a>,
    path: &'p str,
}

impl<'de> DeserializeSeed<'de> for ChildrenSeed<'_, '_, '_> {
    type Value = Vec<Definition>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Definition>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ChildrenSeed<'_, '_, '_> {
    type Value = Vec<Definition>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "template \"{}\": a list of child templates", self.path)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Definition>, A::Error> {
        let mut children = Vec::new();
        while let Some(child) = seq.next_element_seed(DefinitionSeed {
            context: self.context,
            name: None,
            path: format!("{}/children[{}]", self.path, children.len()),
            parent: Some(self.path.to_owned()),
        })? {
            children.push(child);
        }
        Ok(children)
    }
}

/// Builds the file's templates, each base before the templates extending it.
struct Resolver<'a> {
    names: Vec<String>,
    /// By file position; taken when built.
    pending: Vec<Option<Definition>>,
    /// (file position, template) of those built.
    built: Vec<(usize, Template)>,
    /// File positions being built, outermost first: a cycle when one comes back.
    stack: Vec<usize>,
    registered: &'a Templates,
}

impl Resolver<'_> {
    fn build_all(mut self) -> Result<Vec<Template>, TemplateError> {
        for at in 0..self.names.len() {
            self.top(at)?;
        }
        self.built.sort_by_key(|(at, _)| *at);
        Ok(self.built.into_iter().map(|(_, template)| template).collect())
    }

    /// The file's template at position `at`, built once.
    fn top(&mut self, at: usize) -> Result<Template, TemplateError> {
        if let Some((_, template)) = self.built.iter().find(|(i, _)| *i == at) {
            return Ok(template.clone());
        }
        if let Some(start) = self.stack.iter().position(|&i| i == at) {
            let mut templates: Vec<String> = self.stack[start..]
                .iter()
                .map(|&i| self.names[i].clone())
                .collect();
            templates.push(self.names[at].clone());
            return Err(TemplateError::Cycle { templates });
        }
        let definition = self.pending[at].take().expect("each template is built once");
        self.stack.push(at);
        let template = self.build(definition)?;
        self.stack.pop();
        self.built.push((at, template.clone()));
        Ok(template)
    }

    fn build(&mut self, definition: Definition) -> Result<Template, TemplateError> {
        let mut template = Template::new(definition.name);
        for base in &definition.extends {
            let base = match self.names.iter().position(|name| name == base) {
                Some(at) => self.top(at)?,
                None => match self.registered.get(base) {
                    Some(registered) => registered.clone(),
                    None => {
                        return Err(TemplateError::UnknownBase {
                            template: definition.path.clone(),
                            base: base.clone(),
                        });
                    }
                },
            };
            template = template.extends(&base);
        }
        for own in definition.components {
            template = own(template);
        }
        for child in definition.children {
            let child = self.build(child)?;
            template = template.with_child(child);
        }
        Ok(template)
    }
}
