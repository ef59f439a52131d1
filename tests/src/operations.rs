//! Operations built from an API schema, for tests that check what a contract lets through: one
//! that reaches a given member by a shortest path of fields from the query root, and random
//! ones (fields, arguments, input objects, enum values, inline fragments, variables,
//! introspection). Each comes with the schema coordinates it uses, in the catalog's spelling
//! (`Type`, `Type.field`, `Type.field(arg:)`, `Input.field`, `Enum.VALUE`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Write;

use apollo_compiler::ast::Type;
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::{Name, Schema};
use serde_json::{json, Map, Value};

/// An operation, its variables and the coordinates it uses.
#[derive(Debug, Clone)]
pub struct Built {
    pub query: String,
    pub variables: Value,
    pub uses: BTreeSet<String>,
}

/// A small deterministic generator (xorshift64*), so a failing sweep can be replayed by seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

/// One step down from a composite type.
#[derive(Debug, Clone)]
enum Step {
    Field { parent: Name, field: Name },
    Fragment(Name),
}

/// Builds operations over one schema.
pub struct Operations<'a> {
    schema: &'a Schema,
    /// Each composite type's shortest path of steps from the query root.
    paths: HashMap<Name, Vec<Step>>,
}

/// One operation under construction.
#[derive(Default)]
struct Draft {
    uses: BTreeSet<String>,
    variables: Map<String, Value>,
    definitions: Vec<String>,
    aliases: usize,
}

/// Where the value of an input type must carry the member under test.
#[derive(Clone, Copy)]
enum Target<'t> {
    None,
    InputField(&'t str, &'t str),
    EnumValue(&'t str, &'t str),
}

impl<'a> Operations<'a> {
    pub fn new(schema: &'a Schema) -> Self {
        let mut paths = HashMap::new();
        let Some(root) = schema
            .schema_definition
            .query
            .as_ref()
            .map(|r| r.name.clone())
        else {
            return Operations { schema, paths };
        };
        paths.insert(root.clone(), Vec::new());
        let mut queue = VecDeque::from([root]);
        while let Some(name) = queue.pop_front() {
            let path = paths[&name].clone();
            let mut next = Vec::new();
            for (field, definition) in fields(schema, &name) {
                if field.starts_with("__") {
                    continue;
                }
                next.push((
                    definition.ty.inner_named_type().clone(),
                    Step::Field {
                        parent: name.clone(),
                        field: field.clone(),
                    },
                ));
            }
            for possible in possible_types(schema, &name) {
                next.push((possible.clone(), Step::Fragment(possible)));
            }
            for (ty, step) in next {
                if is_composite(schema, &ty) && !paths.contains_key(&ty) {
                    let mut longer = path.clone();
                    longer.push(step);
                    paths.insert(ty.clone(), longer);
                    queue.push_back(ty);
                }
            }
        }
        Operations { schema, paths }
    }

    /// Whether some path of fields from the query root reaches the composite type `name`.
    pub fn reaches(&self, name: &str) -> bool {
        self.paths.contains_key(name)
    }

    /// A query that uses `coordinate`, or `None` when no path from the query root reaches it
    /// (or it is not a field, argument, input field or enum value).
    pub fn reaching(&self, coordinate: &str) -> Option<Built> {
        let mut draft = Draft::default();
        let (owner, rest) = coordinate.split_once('.')?;
        let selection = if let Some((field, argument)) =
            rest.strip_suffix(":)").and_then(|r| r.split_once('('))
        {
            let extra = vec![(argument, Target::None)];
            self.select_at(owner, field, &extra, &mut draft)?
        } else if fields(self.schema, owner).any(|(name, _)| name == rest) {
            self.select_at(owner, rest, &[], &mut draft)?
        } else {
            let target = match self.schema.types.get(owner)? {
                ExtendedType::InputObject(_) => Target::InputField(owner, rest),
                ExtendedType::Enum(_) => Target::EnumValue(owner, rest),
                _ => return None,
            };
            // The first reachable field with an argument whose type can carry the member.
            let (parent, field, argument) = self.paths.keys().find_map(|ty| {
                fields(self.schema, ty).find_map(|(field, definition)| {
                    definition
                        .arguments
                        .iter()
                        .find(|a| self.carries(&a.ty, target, &mut HashSet::new()))
                        .map(|a| (ty.clone(), field.clone(), a.name.clone()))
                })
            })?;
            let extra = vec![(argument.as_str(), target)];
            self.select_at(&parent, &field, &extra, &mut draft)?
        };
        Some(draft.finish(selection))
    }

    /// A random query over the schema: a few root fields, nested up to `depth`, with their
    /// required arguments (and optional ones at random), inline fragments on possible types,
    /// some arguments passed as variables, and sometimes `__type` or `__schema`.
    pub fn random(&self, rng: &mut Rng, depth: usize) -> Built {
        let mut draft = Draft::default();
        let root = self
            .schema
            .schema_definition
            .query
            .as_ref()
            .map(|r| r.name.clone());
        let mut selection = match root {
            Some(root) => self.random_selection(&root, depth, rng, &mut draft),
            None => String::new(),
        };
        if rng.chance(20) {
            let types: Vec<&Name> = self.schema.types.keys().collect();
            if let Some(name) = rng.pick(&types) {
                draft.aliases += 1;
                let _ = write!(
                    selection,
                    " t{}: __type(name: \"{name}\") {{ name kind fields(includeDeprecated: true) {{ name args {{ name }} }} \
                     inputFields {{ name }} enumValues(includeDeprecated: true) {{ name }} possibleTypes {{ name }} interfaces {{ name }} }}",
                    draft.aliases
                );
            }
        }
        if rng.chance(5) {
            selection.push_str(" __schema { types { name fields { name } } }");
        }
        if selection.trim().is_empty() {
            selection.push_str("__typename");
        }
        draft.finish(selection)
    }

    fn random_selection(
        &self,
        ty: &Name,
        depth: usize,
        rng: &mut Rng,
        draft: &mut Draft,
    ) -> String {
        let mut selection = String::from("__typename");
        let candidates: Vec<(&Name, &apollo_compiler::schema::FieldDefinition)> =
            fields(self.schema, ty)
                .filter(|(n, _)| !n.starts_with("__"))
                .collect();
        let count = 1 + rng.below(3);
        for _ in 0..count {
            let Some((field, definition)) = rng.pick(&candidates).copied() else {
                break;
            };
            let child = definition.ty.inner_named_type();
            if is_composite(self.schema, child) && depth == 0 {
                continue;
            }
            let Some(arguments) = self.arguments(ty, definition, &[], rng, draft) else {
                continue;
            };
            draft.uses.insert(format!("{ty}.{field}"));
            draft.aliases += 1;
            let _ = write!(selection, " f{}: {field}{arguments}", draft.aliases);
            if is_composite(self.schema, child) {
                let inner = self.random_selection(child, depth - 1, rng, draft);
                let _ = write!(selection, " {{ {inner} }}");
            }
        }
        let possible: Vec<Name> = possible_types(self.schema, ty).collect();
        if depth > 0 && rng.chance(50) {
            if let Some(object) = rng.pick(&possible) {
                draft.uses.insert(object.to_string());
                let inner = self.random_selection(object, depth - 1, rng, draft);
                let _ = write!(selection, " ... on {object} {{ {inner} }}");
            }
        }
        selection
    }

    /// The selection reaching `parent.field`, with `extra` arguments beside the required ones.
    fn select_at(
        &self,
        parent: &str,
        field: &str,
        extra: &[(&str, Target<'_>)],
        draft: &mut Draft,
    ) -> Option<String> {
        let parent = self.schema.types.get(parent)?.name().clone();
        let path = self.paths.get(&parent)?.clone();
        let definition = fields(self.schema, &parent)
            .find(|(name, _)| name.as_str() == field)?
            .1;
        let mut rng = Rng::new(1);
        let arguments = self.arguments(&parent, definition, extra, &mut rng, draft)?;
        draft.uses.insert(format!("{parent}.{field}"));
        let mut selection = format!("{field}{arguments}");
        if is_composite(self.schema, definition.ty.inner_named_type()) {
            selection.push_str(" { __typename }");
        }
        for step in path.iter().rev() {
            selection = match step {
                Step::Fragment(object) => {
                    draft.uses.insert(object.to_string());
                    format!("... on {object} {{ {selection} }}")
                }
                Step::Field { parent, field } => {
                    let definition = fields(self.schema, parent)
                        .find(|(name, _)| *name == field)?
                        .1;
                    let arguments = self.arguments(parent, definition, &[], &mut rng, draft)?;
                    draft.uses.insert(format!("{parent}.{field}"));
                    format!("{field}{arguments} {{ {selection} }}")
                }
            };
        }
        Some(selection)
    }

    /// `(a: v, ...)`: required arguments, `extra` ones, and (from `random`) optional ones at
    /// random; some passed as variables. `None` when a value cannot be built.
    fn arguments(
        &self,
        parent: &Name,
        definition: &apollo_compiler::schema::FieldDefinition,
        extra: &[(&str, Target<'_>)],
        rng: &mut Rng,
        draft: &mut Draft,
    ) -> Option<String> {
        let mut parts = Vec::new();
        for argument in &definition.arguments {
            let target = extra
                .iter()
                .find(|(name, _)| *name == argument.name.as_str())
                .map(|(_, target)| *target);
            let required = argument.ty.is_non_null() && argument.default_value.is_none();
            if target.is_none() && !required && !rng.chance(30) {
                continue;
            }
            let target = target.unwrap_or(Target::None);
            let (literal, json) = self.value(&argument.ty, target, rng, draft, 0)?;
            draft
                .uses
                .insert(format!("{parent}.{}({}:)", definition.name, argument.name));
            if rng.chance(30) {
                let variable = format!("v{}", draft.variables.len());
                draft
                    .definitions
                    .push(format!("${variable}: {}", argument.ty));
                draft
                    .uses
                    .insert(argument.ty.inner_named_type().to_string());
                draft.variables.insert(variable.clone(), json);
                parts.push(format!("{}: ${variable}", argument.name));
            } else {
                parts.push(format!("{}: {literal}", argument.name));
            }
        }
        Some(if parts.is_empty() {
            String::new()
        } else {
            format!("({})", parts.join(", "))
        })
    }

    /// A value of `ty` as a GraphQL literal and as JSON, carrying `target` when given.
    fn value(
        &self,
        ty: &Type,
        target: Target<'_>,
        rng: &mut Rng,
        draft: &mut Draft,
        depth: usize,
    ) -> Option<(String, Value)> {
        if depth > 8 {
            return None;
        }
        if let Type::List(inner) | Type::NonNullList(inner) = ty {
            let (literal, json) = self.value(inner, target, rng, draft, depth + 1)?;
            return Some((format!("[{literal}]"), json!([json])));
        }
        let name = ty.inner_named_type();
        match self.schema.types.get(name)? {
            ExtendedType::Scalar(_) => Some(match name.as_str() {
                "Int" => ("1".into(), json!(1)),
                "Float" => ("1.5".into(), json!(1.5)),
                "Boolean" => ("true".into(), json!(true)),
                _ => ("\"1\"".into(), json!("1")),
            }),
            ExtendedType::Enum(definition) => {
                let values: Vec<&Name> = definition.values.keys().collect();
                let value = match target {
                    Target::EnumValue(owner, value) if owner == name.as_str() => {
                        values.iter().find(|v| v.as_str() == value).copied()?
                    }
                    _ => *rng.pick(&values)?,
                };
                draft.uses.insert(format!("{name}.{value}"));
                Some((value.to_string(), json!(value.as_str())))
            }
            ExtendedType::InputObject(definition) => {
                let mut literal = Vec::new();
                let mut object = Map::new();
                for (field, input) in &definition.fields {
                    let is_target = matches!(target, Target::InputField(owner, f) if owner == name.as_str() && f == field.as_str());
                    let carries = self.carries(&input.ty, target, &mut HashSet::new());
                    let required = input.ty.is_non_null() && input.default_value.is_none();
                    let optional_taken = depth < 2 && rng.chance(20);
                    if !(required || is_target || carries || optional_taken) {
                        continue;
                    }
                    let inner_target = if carries { target } else { Target::None };
                    let (value, json) =
                        self.value(&input.ty, inner_target, rng, draft, depth + 1)?;
                    draft.uses.insert(format!("{name}.{field}"));
                    literal.push(format!("{field}: {value}"));
                    object.insert(field.to_string(), json);
                }
                Some((format!("{{{}}}", literal.join(", ")), Value::Object(object)))
            }
            _ => None,
        }
    }

    /// Whether a value of `ty` can carry `target` (in itself or an input field, at any depth).
    fn carries(&self, ty: &Type, target: Target<'_>, seen: &mut HashSet<Name>) -> bool {
        let name = ty.inner_named_type();
        match target {
            Target::None => false,
            Target::EnumValue(owner, _) if owner == name.as_str() => true,
            Target::InputField(owner, _) if owner == name.as_str() => true,
            _ => {
                let Some(ExtendedType::InputObject(definition)) = self.schema.types.get(name)
                else {
                    return false;
                };
                if !seen.insert(name.clone()) {
                    return false;
                }
                definition
                    .fields
                    .values()
                    .any(|f| self.carries(&f.ty, target, seen))
            }
        }
    }
}

impl Draft {
    fn finish(self, selection: String) -> Built {
        let definitions = if self.definitions.is_empty() {
            String::new()
        } else {
            format!("({})", self.definitions.join(", "))
        };
        Built {
            query: format!("query Built{definitions} {{ {selection} }}"),
            variables: Value::Object(self.variables),
            uses: self.uses,
        }
    }
}

fn fields<'s>(
    schema: &'s Schema,
    ty: &str,
) -> impl Iterator<Item = (&'s Name, &'s apollo_compiler::schema::FieldDefinition)> + 's {
    let fields = match schema.types.get(ty) {
        Some(ExtendedType::Object(object)) => Some(&object.fields),
        Some(ExtendedType::Interface(interface)) => Some(&interface.fields),
        _ => None,
    };
    fields
        .into_iter()
        .flat_map(|fields| fields.iter().map(|(name, field)| (name, &***field)))
}

fn possible_types<'s>(schema: &'s Schema, ty: &str) -> impl Iterator<Item = Name> + 's {
    let names: Vec<Name> = match schema.types.get(ty) {
        Some(ExtendedType::Union(union)) => union.members.iter().map(|m| m.name.clone()).collect(),
        Some(ExtendedType::Interface(interface)) => schema
            .types
            .values()
            .filter_map(|t| match t {
                ExtendedType::Object(o)
                    if o.implements_interfaces
                        .iter()
                        .any(|i| i.name == interface.name) =>
                {
                    Some(o.name.clone())
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    names.into_iter()
}

fn is_composite(schema: &Schema, ty: &str) -> bool {
    matches!(
        schema.types.get(ty),
        Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_))
    )
}
