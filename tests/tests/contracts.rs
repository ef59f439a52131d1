//! Contracts: `@tag` include/exclude filters decide what a tenant may see, with Apollo contract
//! semantics, and paths within a contract use only what it may see.

use std::collections::{BTreeMap, BTreeSet};

use apollo_compiler::schema::ExtendedType;
use apollo_compiler::{Name, Schema};
use wayfinder_supergraph::{Catalog, Contract, ContractFilter};
use wayfinder_tests::{catalog, every_eval_schema, repo_path};

fn tags(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn filter(include: &[&str], exclude: &[&str]) -> ContractFilter {
    ContractFilter {
        include_tags: tags(include),
        exclude_tags: tags(exclude),
    }
}

fn exclude(names: &[&str]) -> ContractFilter {
    filter(&[], names)
}

fn shop() -> Catalog {
    Catalog::from_file(
        &repo_path("examples/bookshop/supergraph.graphql"),
        Default::default(),
    )
    .unwrap()
}

fn visible(catalog: &Catalog, contract: &Contract, coordinate: &str) -> bool {
    contract.is_visible(
        catalog
            .get(coordinate)
            .unwrap_or_else(|| panic!("{coordinate}"))
            .id,
    )
}

/// Every path of every visible member is made of visible members, and invisible members have none.
fn assert_paths_within(catalog: &Catalog, contract: &Contract) {
    for member in catalog.members() {
        let paths = contract.paths_to_root(member.id);
        if !contract.is_visible(member.id) {
            assert!(
                paths.is_empty(),
                "{} is invisible but has paths",
                member.coordinate
            );
        }
        for path in paths {
            for step in path.iter() {
                assert!(
                    contract.is_visible(*step),
                    "{}: path through invisible {}",
                    member.coordinate,
                    catalog.member(*step).coordinate
                );
            }
        }
    }
}

#[test]
fn no_filter_sees_the_whole_api_schema() {
    let shop = shop();
    let staff = shop.contract(&ContractFilter::default());
    assert_eq!(staff.visible_count(), shop.members().len());
    assert!(visible(&shop, &staff, "Query.customer"));
}

#[test]
fn excluding_internal_hides_tagged_members_and_what_depends_on_them() {
    let shop = shop();
    let public = shop.contract(&exclude(&["internal"]));
    for hidden in [
        "Query.customer",
        "Query.customer(id:)",
        "Customer.supportNotes",
        "Book.costCents",
        "Review.hidden",
    ] {
        assert!(!visible(&shop, &public, hidden), "{hidden} is visible");
    }
    for shown in [
        "Query.me",
        "Customer",
        "Customer.email",
        "Book.priceCents",
        "Review.rating",
        "Mutation.placeOrder(input:)",
        "PlaceOrderInput.couponCode",
        "OrderStatus.SHIPPED",
    ] {
        assert!(visible(&shop, &public, shown), "{shown} is hidden");
    }
    // Paths avoid the hidden root field: Customer was reachable through Query.customer too.
    let customer = shop.get("Customer").unwrap();
    for path in public.paths_to_root(customer.id) {
        assert!(!shop.path_coordinates(path).contains(&"Query.customer"));
    }
    assert!(!public.paths_to_root(customer.id).is_empty());
    assert_paths_within(&shop, &public);
}

#[test]
fn a_type_left_without_fields_and_what_becomes_unreachable_are_hidden() {
    let shop = shop();
    // Include semantics: only tagged object fields are in; untagged types lose their fields.
    let internal_only = shop.contract(&filter(&["internal"], &[]));
    assert!(visible(&shop, &internal_only, "Query.customer"));
    assert!(visible(&shop, &internal_only, "Customer.supportNotes"));
    assert!(
        !visible(&shop, &internal_only, "Customer.email"),
        "untagged field in an include contract"
    );
    assert!(!visible(&shop, &internal_only, "Query.book"));
    // Book's only included field is `costCents`, but no visible field returns Book: unreachable.
    assert!(!visible(&shop, &internal_only, "Book"));
    assert!(!visible(&shop, &internal_only, "Book.costCents"));
    // Mutation has no included field left: the type goes, and with it the inputs only it took.
    assert!(!visible(&shop, &internal_only, "Mutation"));
    assert!(!visible(&shop, &internal_only, "PlaceOrderInput"));
    assert!(!visible(&shop, &internal_only, "OrderStatus"));
    assert_paths_within(&shop, &internal_only);
}

#[test]
fn exclude_wins_over_include() {
    let shop = shop();
    let both = shop.contract(&filter(&["internal"], &["internal"]));
    assert!(!visible(&shop, &both, "Query.customer"));
    assert!(!visible(&shop, &both, "Customer.supportNotes"));
}

#[test]
fn spotify_public_contract_hides_query_user_and_keeps_paths_valid() {
    let spotify = catalog("federated/spotify-showcase/supergraph.graphql");
    let public = spotify.contract(&exclude(&["internal"]));
    assert!(!visible(&spotify, &public, "Query.user"));
    assert!(!visible(&spotify, &public, "Query.user(id:)"));
    assert!(visible(&spotify, &public, "Query.me"));
    assert!(
        visible(&spotify, &public, "User"),
        "User stays reachable through other fields"
    );
    assert!(public.visible_count() < spotify.members().len());
    assert_paths_within(&spotify, &public);
}

/// The coordinates a schema defines, built-in types and introspection left out.
fn coordinates(schema: &Schema) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (name, ty) in &schema.types {
        if ty.is_built_in() {
            continue;
        }
        found.insert(name.to_string());
        let fields = match ty {
            ExtendedType::Object(o) => Some(&o.fields),
            ExtendedType::Interface(i) => Some(&i.fields),
            _ => None,
        };
        for field in fields.into_iter().flat_map(|f| f.values()) {
            found.insert(format!("{name}.{}", field.name));
            for argument in &field.arguments {
                found.insert(format!("{name}.{}({}:)", field.name, argument.name));
            }
        }
        let members: Vec<&Name> = match ty {
            ExtendedType::InputObject(i) => i.fields.keys().collect(),
            ExtendedType::Enum(e) => e.values.keys().collect(),
            _ => Vec::new(),
        };
        for member in members {
            found.insert(format!("{name}.{member}"));
        }
    }
    for (name, directive) in &schema.directive_definitions {
        found.insert(format!("@{name}"));
        for argument in &directive.arguments {
            found.insert(format!("@{name}({}:)", argument.name));
        }
    }
    found
}

/// For every eval schema and each of its three most used tags, excluded and included: the
/// contract's API schema validates, and it defines exactly the members the contract shows.
#[test]
fn every_contract_schema_is_valid_and_defines_exactly_the_visible_members() {
    let mut contracts = 0;
    for relative in every_eval_schema() {
        let catalog = catalog(&relative);
        let mut uses: BTreeMap<&str, usize> = BTreeMap::new();
        for tag in catalog.members().iter().flat_map(|m| &m.tags) {
            *uses.entry(tag).or_default() += 1;
        }
        let mut tags: Vec<(&str, usize)> = uses.into_iter().collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut filters = vec![ContractFilter::default()];
        for (tag, _) in tags.into_iter().take(3) {
            filters.push(exclude(&[tag]));
            filters.push(filter(&[tag], &[]));
        }
        for filter in filters {
            let contract = catalog.contract(&filter);
            let query = &catalog.api_schema().schema_definition.query;
            let query = query.as_ref().and_then(|q| catalog.get(q.as_str()));
            if !query.is_some_and(|q| contract.is_visible(q.id)) {
                // A contract without a query field is no API: refused, never served.
                assert!(
                    contract.api_schema(&catalog).is_err(),
                    "{relative}, {filter:?}"
                );
                continue;
            }
            let schema = match contract.api_schema(&catalog) {
                Ok(schema) => schema,
                Err(error) => panic!("{relative}, {filter:?}: {error}"),
            };
            let expected: BTreeSet<String> = catalog
                .members()
                .iter()
                .filter(|m| contract.is_visible(m.id) && !(m.builtin && m.kind.is_type()))
                .map(|m| m.coordinate.clone())
                .collect();
            let actual = coordinates(&schema);
            let missing: Vec<_> = expected.difference(&actual).take(5).collect();
            let extra: Vec<_> = actual.difference(&expected).take(5).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{relative}, {filter:?}: visible but not defined {missing:?}, defined but hidden {extra:?}"
            );
            contracts += 1;
        }
    }
    assert!(contracts > 46, "{contracts} contracts");
}
