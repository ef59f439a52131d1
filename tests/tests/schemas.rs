//! Every shared schema loads into a catalog, and the catalog states facts about it that were
//! checked by hand against the schema files (counts from the eval README, owners and keys from
//! the supergraph's join directives, deprecations from the SDL).

use wayfinder_supergraph::{Catalog, Member, MemberKind};
use wayfinder_tests::catalog;

/// Named types a schema declares (GraphQL's built-in scalars excluded).
fn declared_types(catalog: &Catalog) -> usize {
    catalog
        .members()
        .iter()
        .filter(|m| m.kind.is_type() && !m.builtin)
        .count()
}

fn count(catalog: &Catalog, kind: MemberKind) -> usize {
    catalog.counts_by_kind().get(&kind).copied().unwrap_or(0)
}

fn entities(catalog: &Catalog) -> usize {
    catalog
        .members()
        .iter()
        .filter(|m| !m.keys.is_empty())
        .count()
}

fn owners(catalog: &Catalog, coordinate: &str) -> Vec<String> {
    let member = catalog
        .get(coordinate)
        .unwrap_or_else(|| panic!("{coordinate} is not in {}", catalog.source_name()));
    let mut names: Vec<String> = member
        .subgraphs
        .iter()
        .map(|id| catalog.subgraph(*id).name.clone())
        .collect();
    names.sort();
    names
}

fn replacement(catalog: &Catalog, coordinate: &str) -> Option<String> {
    let member = catalog.get(coordinate).expect("member exists");
    let deprecation = member.deprecation.as_ref().expect("member is deprecated");
    deprecation
        .replacement
        .map(|id| catalog.member(id).coordinate.clone())
}

/// The first member of a kind deprecated with exactly this reason.
fn deprecated_with<'c>(catalog: &'c Catalog, kind: MemberKind, reason: &str) -> &'c Member {
    catalog
        .members()
        .iter()
        .find(|m| {
            m.kind == kind
                && m.deprecation.as_ref().and_then(|d| d.reason.as_deref()) == Some(reason)
        })
        .unwrap_or_else(|| panic!("no {} deprecated with {reason:?}", kind.as_str()))
}

#[test]
fn github_matches_its_published_counts_and_facts() {
    let github = catalog("monolithic/github/schema.graphql");
    // The README counts 1,623 types and 6,320 fields; two fields of `EnterpriseOwnerInfo` are
    // defined twice in the file, and the catalog keeps one of each (with a warning).
    assert_eq!(declared_types(&github), 1623);
    assert_eq!(count(&github, MemberKind::Field), 6318);
    assert_eq!(github.warnings().len(), 2);
    assert!(github.warnings()[0]
        .message
        .contains("repositoryDeployKeySetting"));
    assert_eq!(github.subgraphs().len(), 1);
    assert_eq!(github.subgraphs()[0].name, "default");
    // Interface fields sit under the interface's coordinate and under each implementer's.
    let sponsors = github.get("Sponsorable.sponsors").expect("interface field");
    assert_eq!(
        github.member(sponsors.parent.unwrap()).kind,
        MemberKind::Interface
    );
    assert!(github.get("User.sponsors").is_some());
    assert!(github.get("Organization.sponsors").is_some());
    let sponsorable = github.get("Sponsorable").unwrap();
    let implementers: Vec<&str> = sponsorable
        .possible_types
        .iter()
        .map(|id| github.member(*id).name.as_str())
        .collect();
    assert!(implementers.contains(&"User") && implementers.contains(&"Organization"));
    // Signatures carry arguments with defaults.
    let field = github.get("Repository.issues").unwrap();
    assert!(
        field.signature.starts_with("issues("),
        "{}",
        field.signature
    );
    assert!(
        field.signature.ends_with("): IssueConnection!"),
        "{}",
        field.signature
    );
    assert!(github.get("Repository.issues(states:)").is_some());
    // `changedFiles` names itself first, then its replacement.
    assert_eq!(
        replacement(&github, "Commit.changedFiles").as_deref(),
        Some("Commit.changedFilesIfAvailable")
    );
    // Paths: a root field is its own path; a type's paths end with a field returning it.
    let repository = github.get("Query.repository").unwrap();
    assert_eq!(github.depth(repository.id), Some(1));
    let stargazers = github.get("Repository.stargazers").unwrap();
    let first = github.path_coordinates(&github.paths_to_root(stargazers.id)[0]);
    assert_eq!(first.first(), Some(&"Query.repository"));
    assert_eq!(first.last(), Some(&"Repository.stargazers"));
    assert_eq!(first.len(), 2);
}

#[test]
fn saleor_counts_and_deprecations() {
    let saleor = catalog("monolithic/saleor/schema.graphql");
    assert_eq!(declared_types(&saleor), 1456);
    assert_eq!(count(&saleor, MemberKind::Field), 4723);
    let deprecated = saleor
        .members()
        .iter()
        .filter(|m| m.is_deprecated())
        .count();
    assert_eq!(deprecated, 596);
    // "Use `errors` field instead." on a payload field names its sibling.
    let payload_field = deprecated_with(&saleor, MemberKind::Field, "Use `errors` field instead.");
    let parent = &saleor.member(payload_field.parent.unwrap()).name;
    assert_eq!(
        replacement(&saleor, &payload_field.coordinate),
        Some(format!("{parent}.errors"))
    );
    // An argument deprecated for a sibling argument.
    let argument = deprecated_with(&saleor, MemberKind::Argument, "Use `where` filter instead.");
    let field = &saleor.member(argument.parent.unwrap()).coordinate;
    assert_eq!(
        replacement(&saleor, &argument.coordinate),
        Some(format!("{field}(where:)"))
    );
    // Enum values and input fields are members with coordinates of their own.
    assert_eq!(
        saleor.get("OrderStatus.DRAFT").unwrap().kind,
        MemberKind::EnumValue
    );
    assert!(saleor.get("Query.products(channel:)").is_some());
}

#[test]
fn artsy_and_shopify_load_with_their_published_counts() {
    let artsy = catalog("monolithic/artsy-metaphysics/schema.graphql");
    assert_eq!(declared_types(&artsy), 2270);
    assert_eq!(count(&artsy, MemberKind::Union), 253);
    let shopify = catalog("monolithic/shopify-storefront/schema.graphql");
    assert_eq!(declared_types(&shopify), 411);
    assert!(shopify.get("QueryRoot.product").is_some() || shopify.get("Query.product").is_some());
}

#[test]
fn spotify_supergraph_owners_keys_tags_and_entities() {
    let spotify = catalog("federated/spotify-showcase/supergraph.graphql");
    assert_eq!(declared_types(&spotify), 163);
    assert_eq!(entities(&spotify), 10);
    let names: Vec<&str> = spotify
        .subgraphs()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["playback", "spotify"]);
    // `Query.user` is tagged internal in the supergraph (extracted subgraphs lose the tag).
    assert_eq!(spotify.get("Query.user").unwrap().tags, ["internal"]);
    // An enum both subgraphs define, value by value.
    assert_eq!(owners(&spotify, "Action.PAUSING"), ["playback", "spotify"]);
    // Track is an entity of the spotify subgraph, keyed by id.
    let track = spotify.get("Track").unwrap();
    assert!(track
        .keys
        .iter()
        .any(|k| spotify.subgraph(k.subgraph).name == "spotify" && k.fields == "id"));
    // `CurrentUser.profile` replaces nothing and is reached from `Query.me`.
    let profile = spotify.get("CurrentUser.profile").unwrap();
    let path = spotify.path_coordinates(&spotify.paths_to_root(profile.id)[0]);
    assert_eq!(path, ["Query.me", "CurrentUser.profile"]);
    // Federation machinery is not part of the API schema.
    assert!(spotify.get("join__Graph").is_none());
    assert!(spotify.get("@join__field").is_none());
    assert!(spotify.get("link__Purpose").is_none());
    assert!(spotify.get("@tag").is_none());
}

#[test]
fn the_191_subgraph_supergraph_loads_with_its_published_counts() {
    let huge = catalog("federated/guild-huge-schema-obfuscated/supergraph.graphql");
    assert_eq!(huge.subgraphs().len(), 191);
    assert_eq!(declared_types(&huge), 4269);
    assert_eq!(count(&huge, MemberKind::Field), 8740);
    assert_eq!(entities(&huge), 93);
    // Every member is owned by a subgraph of the supergraph, except the gateway's directives.
    for member in huge.members() {
        let gateway_level = member.builtin
            || matches!(
                member.kind,
                MemberKind::Directive | MemberKind::DirectiveArgument
            );
        assert!(
            gateway_level || !member.subgraphs.is_empty(),
            "{} has no owner",
            member.coordinate
        );
    }
}

#[test]
fn the_other_supergraphs_load() {
    let dgs = catalog("federated/guild-dgs-obfuscated/supergraph.graphql");
    assert_eq!(dgs.subgraphs().len(), 11);
    assert_eq!(declared_types(&dgs), 545);
    for name in [
        "retail-supergraph",
        "financial-supergraph",
        "media-supergraph",
        "supergraph-demo-fed2",
    ] {
        let catalog = catalog(&format!("federated/{name}/supergraph.graphql"));
        assert!(catalog.subgraphs().len() >= 2, "{name}");
        assert!(entities(&catalog) >= 1, "{name} has entities");
        assert!(catalog.roots().query.is_some(), "{name}");
    }
}

#[test]
fn the_example_supergraph_has_what_the_readme_promises() {
    let path = wayfinder_tests::repo_path("examples/bookshop/supergraph.graphql");
    let shop = Catalog::from_file(&path, Default::default()).expect("example loads");
    assert_eq!(shop.subgraphs().len(), 4);
    assert_eq!(owners(&shop, "Customer"), ["accounts", "orders", "reviews"]);
    assert_eq!(owners(&shop, "Customer.orders"), ["orders"]);
    assert_eq!(owners(&shop, "Book.reviews"), ["reviews"]);
    let book = shop.get("Book").unwrap();
    let orders_key = book
        .keys
        .iter()
        .find(|k| shop.subgraph(k.subgraph).name == "orders")
        .expect("orders references Book");
    assert!(!orders_key.resolvable);
    assert_eq!(
        replacement(&shop, "Customer.name").as_deref(),
        Some("Customer.displayName")
    );
    assert_eq!(shop.get("Query.customer").unwrap().tags, ["internal"]);
    // Key fields every owner resolves are shareable.
    assert!(shop.get("Customer.id").unwrap().federation.shareable);
    assert!(!shop.get("Customer.email").unwrap().federation.shareable);
}
