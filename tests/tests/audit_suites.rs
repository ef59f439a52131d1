//! All 46 federation-gateway-audit suites load, and for each the catalog agrees with the
//! suite's own subgraph SDL files (an independent source: the catalog reads only the composed
//! supergraph): every field a subgraph defines and resolves lists that subgraph as an owner,
//! every `@key` a subgraph declares is recorded for it, and whatever is missing from the API
//! schema is `@inaccessible` in some subgraph. Hand-checked facts for a few suites follow.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use apollo_compiler::ast::{Definition, Directive, Document, FieldDefinition};
use apollo_compiler::Node;
use wayfinder_supergraph::{Catalog, CatalogOptions, MemberKind};
use wayfinder_tests::audit_suites;

/// What one subgraph file declares about one object or interface type.
#[derive(Default)]
struct Declared {
    inaccessible: bool,
    /// `@external` on the type: every field it lists is external.
    external: bool,
    keys: Vec<String>,
    fields: Vec<(String, Vec<Node<Directive>>)>,
}

fn has(directives: &[Node<Directive>], name: &str) -> bool {
    directives.iter().any(|d| d.name == name)
}

fn normalize(field_set: &str) -> String {
    field_set.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// subgraph name -> type name -> what the file declares (definitions and extensions merged).
fn read_subgraphs(suite: &Path) -> BTreeMap<String, BTreeMap<String, Declared>> {
    let mut subgraphs = BTreeMap::new();
    for entry in std::fs::read_dir(suite.join("subgraphs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let document = Document::parse(text, &path).unwrap_or_else(|e| e.partial);
        let mut types: BTreeMap<String, Declared> = BTreeMap::new();
        let mut add =
            |type_name: &str, directives: &[Node<Directive>], fields: &[Node<FieldDefinition>]| {
                let declared = types.entry(type_name.to_string()).or_default();
                declared.inaccessible |= has(directives, "inaccessible");
                declared.external |= has(directives, "external");
                for key in directives.iter().filter(|d| d.name == "key") {
                    if let Some(fields) = key
                        .specified_argument_by_name("fields")
                        .and_then(|v| v.as_str())
                    {
                        declared.keys.push(normalize(fields));
                    }
                }
                for field in fields {
                    declared
                        .fields
                        .push((field.name.to_string(), field.directives.0.clone()));
                }
            };
        for definition in &document.definitions {
            match definition {
                Definition::ObjectTypeDefinition(t) => add(&t.name, &t.directives, &t.fields),
                Definition::ObjectTypeExtension(t) => add(&t.name, &t.directives, &t.fields),
                Definition::InterfaceTypeDefinition(t) => add(&t.name, &t.directives, &t.fields),
                Definition::InterfaceTypeExtension(t) => add(&t.name, &t.directives, &t.fields),
                _ => {}
            }
        }
        subgraphs.insert(name, types);
    }
    subgraphs
}

fn owner_names(catalog: &Catalog, coordinate: &str) -> BTreeSet<String> {
    catalog
        .get(coordinate)
        .map(|m| {
            m.subgraphs
                .iter()
                .map(|id| catalog.subgraph(*id).name.clone())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_audit_suite_agrees_with_its_subgraph_files() {
    let suites = audit_suites();
    assert_eq!(suites.len(), 46, "the audit has 46 suites");
    let mut checked_fields = 0;
    let mut checked_keys = 0;
    for suite in &suites {
        let name = suite.file_name().unwrap().to_string_lossy().to_string();
        let catalog =
            Catalog::from_file(&suite.join("supergraph.graphql"), CatalogOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        let subgraphs = read_subgraphs(suite);
        let catalog_subgraphs: BTreeSet<String> =
            catalog.subgraphs().iter().map(|s| s.name.clone()).collect();
        assert_eq!(
            catalog_subgraphs,
            subgraphs.keys().cloned().collect::<BTreeSet<_>>(),
            "{name}: subgraphs"
        );
        // (type, field) pairs that another subgraph takes over with `@override(from:)`.
        let mut overridden: BTreeSet<(String, String, String)> = BTreeSet::new();
        let mut inaccessible: BTreeSet<String> = BTreeSet::new();
        for types in subgraphs.values() {
            for (type_name, declared) in types {
                if declared.inaccessible {
                    inaccessible.insert(type_name.clone());
                }
                for (field, directives) in &declared.fields {
                    if has(directives, "inaccessible") {
                        inaccessible.insert(format!("{type_name}.{field}"));
                    }
                    for o in directives.iter().filter(|d| d.name == "override") {
                        if let Some(from) = o
                            .specified_argument_by_name("from")
                            .and_then(|v| v.as_str())
                        {
                            overridden.insert((from.to_string(), type_name.clone(), field.clone()));
                        }
                    }
                }
            }
        }
        for (subgraph, types) in &subgraphs {
            for (type_name, declared) in types {
                if catalog.get(type_name).is_none() {
                    assert!(
                        inaccessible.contains(type_name) || type_name.starts_with('_'),
                        "{name}: {subgraph} declares {type_name}, missing from the catalog and not @inaccessible"
                    );
                    continue;
                }
                assert!(
                    owner_names(&catalog, type_name).contains(subgraph),
                    "{name}: {subgraph} declares {type_name} but is not among its owners"
                );
                let recorded: Vec<String> = catalog
                    .get(type_name)
                    .unwrap()
                    .keys
                    .iter()
                    .filter(|k| &catalog.subgraph(k.subgraph).name == subgraph)
                    .map(|k| normalize(&k.fields))
                    .collect();
                for key in &declared.keys {
                    assert!(
                        recorded.contains(key),
                        "{name}: {subgraph} @key({key}) on {type_name}: recorded {recorded:?}"
                    );
                    checked_keys += 1;
                }
                for (field, directives) in &declared.fields {
                    let coordinate = format!("{type_name}.{field}");
                    if catalog.get(&coordinate).is_none() {
                        assert!(
                            inaccessible.contains(&coordinate) || field.starts_with('_'),
                            "{name}: {subgraph} defines {coordinate}, missing from the catalog and not @inaccessible"
                        );
                        continue;
                    }
                    let external = declared.external || has(directives, "external");
                    let taken =
                        overridden.contains(&(subgraph.clone(), type_name.clone(), field.clone()));
                    if external || taken {
                        continue;
                    }
                    assert!(
                        owner_names(&catalog, &coordinate).contains(subgraph),
                        "{name}: {subgraph} resolves {coordinate}; catalog owners {:?}",
                        owner_names(&catalog, &coordinate)
                    );
                    checked_fields += 1;
                }
            }
        }
    }
    assert!(checked_fields > 400, "only {checked_fields} fields checked");
    assert!(checked_keys > 80, "only {checked_keys} keys checked");
}

fn suite(name: &str) -> Catalog {
    wayfinder_tests::catalog(&format!(
        "federated/federation-gateway-audit/{name}/supergraph.graphql"
    ))
}

fn owners(catalog: &Catalog, coordinate: &str) -> Vec<String> {
    owner_names(catalog, coordinate).into_iter().collect()
}

#[test]
fn simple_inaccessible_hides_the_marked_members() {
    let catalog = suite("simple-inaccessible");
    // `FriendType.FAMILY` and the `type:` argument default are @inaccessible in the friends
    // subgraph: the value is gone from the API schema, the rest of the enum stays.
    assert!(catalog.get("FriendType.FAMILY").is_none());
    assert!(catalog.get("FriendType.FRIEND").is_some());
    assert_eq!(owners(&catalog, "Query.usersInAge"), ["age"]);
    assert_eq!(owners(&catalog, "User.friends"), ["friends"]);
}

#[test]
fn simple_override_moves_ownership() {
    let catalog = suite("simple-override");
    let overridden: Vec<_> = catalog
        .members()
        .iter()
        .filter(|m| !m.federation.overrides.is_empty())
        .collect();
    assert!(!overridden.is_empty(), "the suite overrides a field");
    for member in overridden {
        for o in &member.federation.overrides {
            // The overriding subgraph resolves the field; the one named in `from` does not.
            assert!(member.subgraphs.contains(&o.by), "{}", member.coordinate);
            assert!(
                !member
                    .subgraphs
                    .iter()
                    .any(|id| catalog.subgraph(*id).name == o.from),
                "{} is still owned by {}",
                member.coordinate,
                o.from
            );
        }
    }
}

#[test]
fn interface_objects_are_recorded_per_subgraph() {
    let catalog = suite("simple-interface-object");
    let interfaces: Vec<_> = catalog
        .members()
        .iter()
        .filter(|m| m.kind == MemberKind::Interface && !m.federation.interface_object_in.is_empty())
        .collect();
    assert!(
        !interfaces.is_empty(),
        "an interface is an @interfaceObject somewhere"
    );
    for interface in interfaces {
        // The subgraphs that see it as an object own it too, and it still has implementers.
        for id in &interface.federation.interface_object_in {
            assert!(interface.subgraphs.contains(id));
        }
        assert!(!interface.possible_types.is_empty());
    }
}

#[test]
fn fed1_external_fields_are_not_owned_by_the_referencing_subgraph() {
    let catalog = suite("fed1-external-extends");
    let external: Vec<_> = catalog
        .members()
        .iter()
        .filter(|m| !m.federation.external_in.is_empty())
        .collect();
    assert!(
        !external.is_empty(),
        "the suite references fields with @external"
    );
    for member in external {
        for id in &member.federation.external_in {
            assert!(
                !member.subgraphs.contains(id) || member.subgraphs.len() == 1,
                "{}",
                member.coordinate
            );
        }
    }
}

#[test]
fn requires_and_provides_are_recorded() {
    let requires = suite("simple-requires-provides");
    assert!(requires
        .members()
        .iter()
        .any(|m| !m.federation.requires.is_empty()));
    assert!(requires
        .members()
        .iter()
        .any(|m| !m.federation.provides.is_empty()));
}

#[test]
fn shared_root_fields_are_shareable_with_every_owner() {
    let catalog = suite("shared-root");
    let query = catalog.member(catalog.roots().query.unwrap());
    let shared: Vec<_> = query
        .children
        .iter()
        .map(|id| catalog.member(*id))
        .filter(|f| f.subgraphs.len() > 1)
        .collect();
    assert!(!shared.is_empty());
    assert!(shared.iter().all(|f| f.federation.shareable));
}
