//! Examples made from the schema: every member of every eval schema (and of the bundled
//! example, through each contract router.yaml configures) gets an operation that validates
//! against the API schema its view sees, or is listed with the reason it has none.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use wayfinder_supergraph::{Catalog, CatalogOptions, Contract, ContractFilter, NoExample};
use wayfinder_tests::{catalog, every_eval_schema, repo_path};

/// Share of visible members that must have an example.
const COVERED: f64 = 0.999;

struct Tally {
    members: usize,
    made: usize,
    /// Made, but only an introspection query shows the member (nothing reaches it).
    introspection: usize,
    missing: BTreeMap<String, Vec<String>>,
}

/// Makes and validates the example of every member `contract` (or the whole catalog) sees.
fn check_view(catalog: &Catalog, contract: Option<&Contract>, schema: &Valid<Schema>) -> Tally {
    let mut tally = Tally {
        members: 0,
        made: 0,
        introspection: 0,
        missing: BTreeMap::new(),
    };
    for member in catalog.members() {
        let made = match contract {
            Some(contract) => contract.example(catalog, member.id),
            None => catalog.example(member.id),
        };
        let example = match made {
            Err(NoExample::Hidden) => continue,
            Err(reason) => {
                tally.members += 1;
                tally
                    .missing
                    .entry(reason.to_string())
                    .or_default()
                    .push(member.coordinate.clone());
                continue;
            }
            Ok(example) => example,
        };
        tally.members += 1;
        tally.made += 1;
        let first_field = example.operation.lines().nth(1).unwrap_or("").trim();
        if first_field.starts_with("__schema") || first_field.starts_with("__type(") {
            tally.introspection += 1;
        }
        if let Err(errors) =
            ExecutableDocument::parse_and_validate(schema, &example.operation, "example.graphql")
        {
            panic!(
                "{} ({}): the example does not validate:\n{}\n{}",
                member.coordinate,
                catalog.source_name(),
                example.operation,
                errors.errors
            );
        }
        assert!(
            !example.description.is_empty(),
            "{}: no description",
            member.coordinate
        );
    }
    tally
}

fn report(name: &str, tally: &Tally) -> f64 {
    let share = tally.made as f64 / tally.members.max(1) as f64;
    println!(
        "{name}: {} of {} members ({:.4}); {} of them by introspection only",
        tally.made, tally.members, share, tally.introspection
    );
    for (reason, coordinates) in &tally.missing {
        let shown: Vec<&str> = coordinates.iter().take(8).map(String::as_str).collect();
        println!(
            "  {} {reason}: {}{}",
            coordinates.len(),
            shown.join(", "),
            if coordinates.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        );
    }
    share
}

#[test]
fn every_member_of_every_eval_schema_has_an_example_that_validates() {
    let mut below = Vec::new();
    let (mut members, mut made) = (0, 0);
    for relative in every_eval_schema() {
        let catalog = catalog(&relative);
        let tally = check_view(&catalog, None, catalog.api_schema());
        members += tally.members;
        made += tally.made;
        if report(&relative, &tally) < COVERED {
            below.push(relative);
        }
    }
    println!(
        "all: {made} of {members} ({:.4})",
        made as f64 / members as f64
    );
    assert!(below.is_empty(), "below {COVERED}: {below:?}");
}

/// The contracts router.yaml configures, read from the file so the test follows it.
fn configured_contracts() -> Vec<(String, ContractFilter)> {
    let text = std::fs::read_to_string(repo_path("router.yaml")).unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let contracts = &yaml["plugins"]["wayfinder.search"]["tenants"]["contracts"];
    let tags = |filter: &serde_yaml::Value, key: &str| -> BTreeSet<String> {
        filter[key]
            .as_sequence()
            .map(|tags| {
                tags.iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let contracts: Vec<(String, ContractFilter)> = contracts
        .as_mapping()
        .expect("router.yaml configures contracts")
        .iter()
        .map(|(name, filter)| {
            (
                name.as_str().unwrap().to_string(),
                ContractFilter {
                    include_tags: tags(filter, "include_tags"),
                    exclude_tags: tags(filter, "exclude_tags"),
                },
            )
        })
        .collect();
    assert!(!contracts.is_empty(), "router.yaml configures no contracts");
    contracts
}

#[test]
fn a_contract_sees_examples_that_validate_against_its_own_schema() {
    let example = Catalog::from_file(
        &repo_path("examples/bookshop/supergraph.graphql"),
        CatalogOptions::default(),
    )
    .unwrap();
    let mut schemas: Vec<(String, Catalog)> = vec![("examples/bookshop".into(), example)];
    for relative in every_eval_schema() {
        let catalog = catalog(&relative);
        schemas.push((relative, catalog));
    }
    for (name, catalog) in &schemas {
        for (tenant, filter) in configured_contracts() {
            let contract = catalog.contract(&filter);
            let sees_a_root = catalog
                .roots()
                .query
                .is_some_and(|query| contract.is_visible(query));
            if !sees_a_root {
                // An include filter on a schema without its tags: the tenant sees nothing.
                println!("{name} as {tenant}: sees no query root");
                continue;
            }
            let schema = contract.api_schema(catalog).unwrap();
            let tally = check_view(catalog, Some(&contract), &schema);
            let share = report(&format!("{name} as {tenant}"), &tally);
            assert!(share >= COVERED, "{name} as {tenant}: {share}");
        }
    }
}

#[test]
fn the_examples_of_github_are_made_in_well_under_five_seconds() {
    let catalog = catalog("monolithic/github/schema.graphql");
    let started = Instant::now();
    let mut bytes = 0;
    for member in catalog.members() {
        if let Ok(example) = catalog.example(member.id) {
            bytes += example.operation.len() + example.description.len();
        }
    }
    let took = started.elapsed();
    println!(
        "github: {} members in {took:?}, {bytes} bytes of examples",
        catalog.members().len()
    );
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
}

#[test]
fn an_example_reads_with_a_query_passes_values_and_spells_out_required_input() {
    let catalog = catalog("monolithic/github/schema.graphql");
    let example = |coordinate: &str| {
        let member = catalog.get(coordinate).unwrap();
        catalog.example(member.id).unwrap()
    };
    // Only mutations return `Starrable` itself: reading a field must not star a repository.
    let read = example("Starrable.stargazerCount");
    assert!(read.operation.starts_with("query "), "{}", read.operation);
    assert!(
        read.operation.contains("stargazerCount"),
        "{}",
        read.operation
    );
    // An enum value is passed as a literal, in a list where the argument takes one.
    let value = example("IssueState.OPEN");
    assert!(
        value.operation.contains("(states: [OPEN])"),
        "{}",
        value.operation
    );
    // A mutation's required input object is written out with its required fields.
    let create = example("Mutation.createIssue");
    assert!(
        create.operation.starts_with("mutation ")
            && create
                .operation
                .contains("createIssue(input: {repositoryId: $repositoryId, title: $title})"),
        "{}",
        create.operation
    );
    assert!(
        create.operation.contains("$repositoryId: ID!"),
        "{}",
        create.operation
    );
}
