//! Every path the catalog gives for every member of every eval schema obeys the path rules and
//! names no coordinate twice, checked step by step against the API schema itself (derived here
//! with apollo-federation and read with apollo-compiler), not against the catalog's own
//! relations.
//!
//! The rules: a path starts with a root field and ends with the member; after a field comes one
//! of its arguments, or a field of a type whose possible types overlap the field's return type
//! (the type itself, a union member, an implementer...), or, last, such a type; after an
//! argument or input field comes an input field of its input type, or, last, that type or a
//! value of that enum.

use std::collections::{HashMap, HashSet};

use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::Schema;
use wayfinder_supergraph::MemberKind;
use wayfinder_tests::{catalog, every_eval_schema, schema_path};

/// A coordinate, parsed from its text.
#[derive(Debug)]
enum Coordinate<'a> {
    Type(&'a str),
    /// `T.f`: a field, input field or enum value, depending on `T`.
    Member(&'a str, &'a str),
    Argument(&'a str, &'a str, &'a str),
}

fn parse(coordinate: &str) -> Coordinate<'_> {
    if let Some((head, argument)) = coordinate
        .strip_suffix(":)")
        .and_then(|c| c.split_once('('))
    {
        let (ty, field) = head.split_once('.').expect("argument of a field");
        return Coordinate::Argument(ty, field, argument);
    }
    match coordinate.split_once('.') {
        Some((ty, member)) => Coordinate::Member(ty, member),
        None => Coordinate::Type(coordinate),
    }
}

struct Rules {
    schema: Valid<Schema>,
    possible: HashMap<String, HashSet<String>>,
}

impl Rules {
    fn new(schema: Valid<Schema>) -> Self {
        let implementers = schema.implementers_map();
        let possible = schema
            .types
            .iter()
            .map(|(name, ty)| {
                let set: HashSet<String> = match ty {
                    ExtendedType::Object(_) => [name.to_string()].into(),
                    ExtendedType::Union(u) => u.members.iter().map(|m| m.to_string()).collect(),
                    ExtendedType::Interface(_) => implementers
                        .get(name)
                        .map(|i| i.objects.iter().map(|o| o.to_string()).collect())
                        .unwrap_or_default(),
                    _ => [name.to_string()].into(),
                };
                (name.to_string(), set)
            })
            .collect();
        Self { schema, possible }
    }

    fn overlaps(&self, a: &str, b: &str) -> bool {
        a == b || !self.possible[a].is_disjoint(&self.possible[b])
    }

    fn is_root(&self, ty: &str) -> bool {
        let s = &self.schema.schema_definition;
        [&s.query, &s.mutation, &s.subscription]
            .into_iter()
            .flatten()
            .any(|root| root.as_str() == ty)
    }

    /// The named type a field returns, or an argument / input field accepts.
    fn type_of(&self, coordinate: &Coordinate<'_>) -> Option<String> {
        match *coordinate {
            Coordinate::Member(ty, name) => match self.schema.types.get(ty)? {
                ExtendedType::Object(o) => {
                    Some(o.fields.get(name)?.ty.inner_named_type().to_string())
                }
                ExtendedType::Interface(i) => {
                    Some(i.fields.get(name)?.ty.inner_named_type().to_string())
                }
                ExtendedType::InputObject(i) => {
                    Some(i.fields.get(name)?.ty.inner_named_type().to_string())
                }
                _ => None,
            },
            Coordinate::Argument(ty, field, argument) => {
                let field = self.schema.type_field(ty, field).ok()?;
                Some(
                    field
                        .argument_by_name(argument)?
                        .ty
                        .inner_named_type()
                        .to_string(),
                )
            }
            Coordinate::Type(_) => None,
        }
    }

    fn is_field(&self, ty: &str, name: &str) -> bool {
        matches!(
            self.schema.types.get(ty),
            Some(ExtendedType::Object(_) | ExtendedType::Interface(_))
        ) && self.schema.type_field(ty, name).is_ok()
    }

    fn step(&self, previous: &str, next: &str, last: bool) -> Result<(), String> {
        let prev = parse(previous);
        let step = parse(next);
        let returned = self
            .type_of(&prev)
            .ok_or_else(|| format!("{previous} is not a field, argument or input field"))?;
        let prev_is_field = matches!(prev, Coordinate::Member(ty, name) if self.is_field(ty, name));
        let ok = match step {
            Coordinate::Argument(ty, field, argument) => {
                matches!(prev, Coordinate::Member(t, f) if t == ty && f == field)
                    && self
                        .schema
                        .type_field(ty, field)
                        .ok()
                        .and_then(|f| f.argument_by_name(argument))
                        .is_some()
            }
            Coordinate::Member(ty, name) => match self.schema.types.get(ty) {
                Some(ExtendedType::Object(_) | ExtendedType::Interface(_)) => {
                    prev_is_field && self.overlaps(ty, &returned) && self.is_field(ty, name)
                }
                Some(ExtendedType::InputObject(input)) => {
                    !prev_is_field && ty == returned && input.fields.contains_key(name)
                }
                Some(ExtendedType::Enum(e)) => {
                    last && ty == returned && e.values.contains_key(name)
                }
                _ => false,
            },
            Coordinate::Type(ty) => {
                last && self.schema.types.contains_key(ty)
                    && if prev_is_field {
                        self.overlaps(ty, &returned)
                    } else {
                        ty == returned
                    }
            }
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{next} does not belong to what {previous} returns or accepts ({returned})"
            ))
        }
    }

    fn check(&self, member: &str, path: &[&str]) -> Result<(), String> {
        let first = path.first().ok_or("empty path")?;
        match parse(first) {
            Coordinate::Member(ty, field) if self.is_root(ty) && self.is_field(ty, field) => {}
            _ => return Err(format!("{first} is not a root field")),
        }
        if path.last() != Some(&member) {
            return Err(format!("the path does not end with {member}"));
        }
        for (index, pair) in path.windows(2).enumerate() {
            self.step(pair[0], pair[1], index + 2 == path.len())?;
        }
        Ok(())
    }
}

/// A schema's API schema as apollo-federation (a supergraph) or apollo-compiler (a monolithic
/// schema) derives it, not as the catalog reads it.
fn api_schema(relative: &str) -> Valid<Schema> {
    let path = schema_path(relative);
    let sdl = std::fs::read_to_string(&path).unwrap();
    if sdl.contains("@join__graph") {
        return apollo_federation::Supergraph::new(&sdl)
            .unwrap()
            .to_api_schema(Default::default())
            .unwrap()
            .schema()
            .clone();
    }
    // A public schema may break a rule the catalog tolerates (github repeats a field); the
    // walk is checked against what it declares.
    let schema = Schema::parse(sdl, &path).unwrap_or_else(|invalid| invalid.partial);
    Valid::assume_valid(schema)
}

fn spotify_api_schema() -> Valid<Schema> {
    api_schema(SPOTIFY)
}

const SPOTIFY: &str = "federated/spotify-showcase/supergraph.graphql";

/// Every schema of the shared evaluation data, relative to its schemas folder.
/// Checks every path of every member of `relative` against its API schema; the members of a
/// kind that needs a path but has none.
fn check_every_path(relative: &str) -> (usize, Vec<String>) {
    let catalog = catalog(relative);
    let rules = Rules::new(api_schema(relative));

    let mut paths = 0;
    let mut without_path = Vec::new();
    for member in catalog.members() {
        let member_paths = catalog.paths_to_root(member.id);
        for path in member_paths {
            let coordinates = catalog.path_coordinates(path);
            if let Err(problem) = rules.check(&member.coordinate, &coordinates) {
                panic!(
                    "{relative}: {}: path {coordinates:?}: {problem}",
                    member.coordinate
                );
            }
            let distinct: HashSet<&str> = coordinates.iter().copied().collect();
            assert_eq!(
                distinct.len(),
                coordinates.len(),
                "{relative}: {}: path {coordinates:?} names a coordinate twice",
                member.coordinate
            );
            paths += 1;
        }
        let distinct: HashSet<_> = member_paths.iter().collect();
        assert_eq!(
            distinct.len(),
            member_paths.len(),
            "{relative}: {}: repeated paths",
            member.coordinate
        );
        assert!(member_paths.len() <= catalog.options().max_paths);
        // Lengths never decrease among the paths from one root type.
        let root_of = |p: &[wayfinder_supergraph::MemberId]| catalog.member(p[0]).parent;
        for pair in member_paths.windows(2) {
            if root_of(&pair[0]) == root_of(&pair[1]) {
                assert!(
                    pair[0].len() <= pair[1].len(),
                    "{relative}: {}: longer path first",
                    member.coordinate
                );
            }
        }
        let needs_path = !member.builtin
            && !matches!(
                member.kind,
                MemberKind::Directive | MemberKind::DirectiveArgument
            )
            && !catalog.roots().contains(member.id);
        if needs_path && member_paths.is_empty() {
            without_path.push(member.coordinate.clone());
        }
    }
    (paths, without_path)
}

#[test]
fn every_path_of_every_eval_schema_is_a_simple_walk_from_a_root() {
    let schemas = every_eval_schema();
    assert!(schemas.len() > 40, "only {} schemas found", schemas.len());
    let mut paths = 0;
    for relative in &schemas {
        paths += check_every_path(relative).0;
    }
    assert!(paths > 100_000, "only {paths} paths checked");
}

#[test]
fn every_spotify_member_but_a_few_unused_types_has_a_path() {
    let (paths, without_path) = check_every_path(SPOTIFY);
    assert!(paths > 1000, "only {paths} paths checked");
    // Nothing but a few unused input types and scalars is out of reach.
    assert!(
        without_path.len() <= 5,
        "members without a path: {without_path:?}"
    );
}

/// The operation a path implies: its fields nested as selections (an inline fragment where a
/// step moves to a union member, implementer or interface), every required argument and the
/// path's own argument passed as variables, `__typename` under a composite end.
fn operation_for(schema: &Schema, path: &[&str]) -> String {
    let steps: Vec<Coordinate<'_>> = path.iter().map(|c| parse(c)).collect();
    let Coordinate::Member(root, _) = steps[0] else {
        panic!("{path:?} does not start with a root field");
    };
    let kind = if Some(root)
        == schema
            .schema_definition
            .mutation
            .as_ref()
            .map(|n| n.as_str())
    {
        "mutation"
    } else if Some(root)
        == schema
            .schema_definition
            .subscription
            .as_ref()
            .map(|n| n.as_str())
    {
        "subscription"
    } else {
        "query"
    };
    let mut variables = Vec::new();
    let body = selection(schema, &steps, 0, root, &mut variables);
    let declared = if variables.is_empty() {
        String::new()
    } else {
        format!("({})", variables.join(", "))
    };
    format!("{kind} Path{declared} {{ {body} }}")
}

fn selection(
    schema: &Schema,
    steps: &[Coordinate<'_>],
    i: usize,
    current: &str,
    variables: &mut Vec<String>,
) -> String {
    let wrap = |ty: &str, inner: String| {
        if ty == current {
            inner
        } else {
            format!("... on {ty} {{ {inner} }}")
        }
    };
    match steps[i] {
        // A path may end at the type a field returns; a scalar or enum needs no selection.
        Coordinate::Type(ty) => match schema.types.get(ty) {
            Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_)) => {
                wrap(ty, "__typename".into())
            }
            _ => String::new(),
        },
        Coordinate::Member(ty, name) => {
            let Ok(field) = schema.type_field(ty, name) else {
                // An input field or enum value after an argument: the variable covers it.
                return String::new();
            };
            let own_argument = match steps.get(i + 1) {
                Some(Coordinate::Argument(_, _, argument)) => Some(*argument),
                _ => None,
            };
            let mut arguments = Vec::new();
            for argument in &field.arguments {
                if argument.is_required() || Some(argument.name.as_str()) == own_argument {
                    let variable = format!("v{}", variables.len());
                    variables.push(format!("${variable}: {}", argument.ty));
                    arguments.push(format!("{}: ${variable}", argument.name));
                }
            }
            let arguments = if arguments.is_empty() {
                String::new()
            } else {
                format!("({})", arguments.join(", "))
            };
            let returned = field.ty.inner_named_type().as_str();
            let composite = matches!(
                schema.types.get(returned),
                Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_))
            );
            // The path goes on into this field's type, or ends here (or in its argument).
            let inner = if own_argument.is_none() && i + 1 < steps.len() {
                selection(schema, steps, i + 1, returned, variables)
            } else if composite {
                "__typename".to_string()
            } else {
                String::new()
            };
            let field_text = if inner.is_empty() {
                format!("{name}{arguments}")
            } else {
                format!("{name}{arguments} {{ {inner} }}")
            };
            wrap(ty, field_text)
        }
        Coordinate::Argument(..) => String::new(),
    }
}

#[test]
fn every_spotify_path_implies_a_valid_operation() {
    let catalog = catalog(SPOTIFY);
    let schema = &spotify_api_schema();
    let mut operations = 0;
    for member in catalog.members() {
        for path in catalog.paths_to_root(member.id) {
            let coordinates = catalog.path_coordinates(path);
            let operation = operation_for(schema, &coordinates);
            if let Err(errors) = apollo_compiler::ExecutableDocument::parse_and_validate(
                schema,
                &operation,
                "path.graphql",
            ) {
                panic!(
                    "{}: path {coordinates:?}\n{operation}\n{}",
                    member.coordinate, errors.errors
                );
            }
            operations += 1;
        }
    }
    assert!(operations > 1000, "only {operations} operations checked");
}

#[test]
fn query_paths_come_before_mutation_payload_paths() {
    let catalog = catalog(SPOTIFY);
    let query = catalog.roots().query.unwrap();
    for member in catalog.members() {
        let roots: Vec<_> = catalog
            .paths_to_root(member.id)
            .iter()
            .map(|path| catalog.member(path[0]).parent.unwrap())
            .collect();
        if let Some(first_non_query) = roots.iter().position(|r| *r != query) {
            assert!(
                roots[first_non_query..].iter().all(|r| *r != query),
                "{}: a Query path after a Mutation one",
                member.coordinate
            );
        }
    }
    // A type mutations return but queries also reach is reached from Query first.
    let playlist = catalog.get("Playlist").unwrap();
    let first = catalog.paths_to_root(playlist.id)[0][0];
    assert_eq!(catalog.member(first).parent, Some(query));
}
