//! The engine with the real embedding model (the one `scripts/setup` fetches): embeddings,
//! the vector cache across restarts and edits, contracts inside search, paging, and failure
//! modes that must leave search working.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wayfinder_supergraph::{Catalog, CatalogOptions, ContractFilter};
use wayfinder_tests::{catalog, engine_config, repo_path, temp_dir};
use wayfinder_workers::cursor::CursorError;
use wayfinder_workers::embed::math::dot;
use wayfinder_workers::embed::Embedder;
use wayfinder_workers::index::document::documents;
use wayfinder_workers::rank::params::DEFAULT_MODEL_KEY;
use wayfinder_workers::{
    Engine, IndexReport, Params, SearchError, SearchMode, SearchRequest, Stage,
};

const WAIT: Duration = Duration::from_secs(300);

fn bookshop_sdl() -> String {
    std::fs::read_to_string(repo_path("examples/bookshop/supergraph.graphql")).unwrap()
}

fn from_sdl(sdl: &str) -> Arc<Catalog> {
    Arc::new(Catalog::from_sdl(sdl, "test.graphql", CatalogOptions::default()).unwrap())
}

/// The distinct texts a catalog's documents embed.
fn text_hashes(catalog: &Catalog) -> HashSet<u128> {
    documents(catalog, &Default::default())
        .iter()
        .flat_map(|d| d.views.iter().flat_map(|v| v.parts.iter().map(|t| t.hash)))
        .collect()
}

/// Publishes `catalog` and waits for its vectors.
fn index(engine: &Engine, catalog: Arc<Catalog>) -> IndexReport {
    let published = engine.publish(catalog).unwrap();
    engine
        .wait_indexed(published.publication, WAIT)
        .expect("indexing finishes")
}

fn search<'a>(query: &'a str, first: usize) -> SearchRequest<'a> {
    SearchRequest {
        query,
        first,
        ..SearchRequest::default()
    }
}

#[test]
fn a_paraphrase_is_nearer_than_an_unrelated_text() {
    let mut embedder = Embedder::load(&engine_config(None).model, 1).unwrap();
    let vectors = embedder
        .embed(&[
            "find a user by email",
            "Retrieve a user by their email address",
            "delete a playlist",
        ])
        .unwrap();
    let (paraphrase, unrelated) = (dot(&vectors[0], &vectors[1]), dot(&vectors[0], &vectors[2]));
    assert!(paraphrase > 0.7, "paraphrase similarity {paraphrase}");
    assert!(unrelated < 0.3, "unrelated similarity {unrelated}");
    // The same text gives the same vector in a batch of one or of several.
    let alone = embedder.embed(&["delete a playlist"]).unwrap();
    assert!(dot(&alone[0], &vectors[2]) > 0.999);
}

#[test]
fn a_query_is_embedded_after_the_models_query_prefix_which_is_not_a_content_token() {
    let mut model = engine_config(None).model;
    model.query_prefix = "query: ".into();
    let mut embedder = Embedder::load(&model, 1).unwrap();
    let queries = embedder
        .embed_queries(&["delete a playlist", "playlists"])
        .unwrap();
    let texts = embedder
        .embed_with_tokens(&["query: delete a playlist", "delete a playlist"])
        .unwrap();
    let query = &queries[0];
    assert!(dot(&query.vector, &texts[0].vector) > 0.999);
    assert!(dot(&query.vector, &texts[1].vector) < 0.99);
    // `delete` and `playlist`, not `query`; the batch's shorter query skips its prefix too.
    assert_eq!((query.tokens.len(), texts[0].tokens.len()), (2, 3));
    assert_eq!(queries[1].tokens.len(), 1);
}

#[test]
fn a_restart_reuses_the_cache_and_an_edit_embeds_only_what_changed() {
    let dir = temp_dir("restart");
    let sdl = bookshop_sdl();
    let first = {
        let engine = Engine::start(engine_config(Some(&dir))).unwrap();
        index(&engine, from_sdl(&sdl))
    };
    assert!(
        first.embedded > 0 && first.failed_shards.is_empty(),
        "{first:?}"
    );
    assert_eq!(first.embedded + first.reused, first.texts);

    let engine = Engine::start(engine_config(Some(&dir))).unwrap();
    let second = index(&engine, from_sdl(&sdl));
    assert_eq!(second.embedded, 0, "{second:?}");
    assert_eq!(second.reused, second.texts);
    assert_eq!(engine.current().unwrap().mode(), SearchMode::Hybrid);

    // Edit one type's description: only documents whose text changed are embedded again,
    // in the same running engine (a reload) and in a fresh one (a restart).
    let needle = "\"\"\"A title the shop sells, in one or more formats.\"\"\"";
    assert!(
        sdl.contains(needle),
        "the example describes Book as {needle}"
    );
    let edited = sdl.replacen(
        needle,
        "\"\"\"A printed or electronic book that shoppers can buy.\"\"\"",
        1,
    );
    let before = text_hashes(&from_sdl(&sdl));
    let edited_catalog = from_sdl(&edited);
    let changed: HashSet<u128> = text_hashes(&edited_catalog)
        .difference(&before)
        .copied()
        .collect();
    assert!(!changed.is_empty());
    // Only Book's own texts change: members that use Book blend its vector, not its words
    // (members without a description of their own borrow the words, so they count too).
    for document in documents(&edited_catalog, &Default::default()) {
        let member = edited_catalog.member(document.member);
        let own = member.name == "Book" || member.description.is_none();
        let texts = document.views.iter().flat_map(|v| v.parts.iter());
        let mut changed_texts = texts.filter(|t| changed.contains(&t.hash));
        if !own {
            assert!(
                changed_texts.all(|t| t.text.starts_with("book.")),
                "{}",
                member.coordinate
            );
        }
    }
    let changed = changed.len();
    let reload = index(&engine, from_sdl(&edited));
    assert_eq!(reload.embedded, changed, "{reload:?}");
    assert_eq!(reload.reused, reload.texts - changed);
    let unchanged_shards = reload.shards - reload.shards_rebuilt;
    assert!(
        unchanged_shards >= 1,
        "a subgraph without the type keeps its shard: {reload:?}"
    );
    drop(engine);
    let restart = index(
        &Engine::start(engine_config(Some(&dir))).unwrap(),
        from_sdl(&edited),
    );
    assert_eq!(restart.embedded, 0, "{restart:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_contract_never_returns_an_invisible_member() {
    let engine = Engine::start(engine_config(None)).unwrap();
    let internal = ContractFilter {
        exclude_tags: ["internal".to_string()].into(),
        ..Default::default()
    };
    let mut checked = 0;
    for schema in [
        Arc::new(catalog("federated/spotify-showcase/supergraph.graphql")),
        from_sdl(&bookshop_sdl()),
    ] {
        index(&engine, Arc::clone(&schema));
        checked += check_contract(&engine, &schema, &internal);
    }
    assert!(checked > 2000, "only {checked} results checked");
}

/// Runs 100 random queries (half of them phrased as actions) as `filter`'s tenant and checks every result and path step is
/// visible; returns how many results were checked.
fn check_contract(engine: &Engine, schema: &Catalog, filter: &ContractFilter) -> usize {
    let contract = schema.contract(filter);
    assert!(
        contract.visible_count() < schema.members().len(),
        "{filter:?} hides something"
    );
    // Queries are random word pairs from the schema's own descriptions (seeded, repeatable).
    let words: Vec<&str> = schema
        .members()
        .iter()
        .filter_map(|m| m.description.as_deref())
        .flat_map(str::split_whitespace)
        .filter(|w| w.len() > 3)
        .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut checked = 0;
    for i in 0..100 {
        let mut query = format!("{} {}", words[next(words.len())], words[next(words.len())]);
        // Every other query is phrased as an action, which also scores every mutation field.
        if i % 2 == 1 {
            query = format!("update the {query}");
        }
        let results = engine
            .search(&SearchRequest {
                contract: Some(filter),
                ..search(&query, 25)
            })
            .unwrap();
        for hit in &results.hits {
            assert!(
                contract.is_visible(hit.member),
                "{query:?} returned {}",
                hit.coordinate
            );
            for path in results.paths_to_root(hit.member) {
                for step in path {
                    assert!(
                        contract.is_visible(schema.get(&step).unwrap().id),
                        "path step {step}"
                    );
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn pages_follow_each_other_and_bad_cursors_are_errors() {
    let engine = Engine::start(engine_config(None)).unwrap();
    let shop = from_sdl(&bookshop_sdl());
    index(&engine, Arc::clone(&shop));
    let whole = engine
        .search(&search("books customers ordered", 12))
        .unwrap();
    assert_eq!(whole.hits.len(), 12);
    assert!(whole.hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(whole.hits.iter().all(|h| (0.0..=1.0).contains(&h.score)));
    let first = engine
        .search(&search("books customers ordered", 5))
        .unwrap();
    let second = engine
        .search(&SearchRequest {
            after: Some(&first.hits[4].cursor),
            ..search("books customers ordered", 7)
        })
        .unwrap();
    let paged: Vec<_> = first
        .hits
        .iter()
        .chain(&second.hits)
        .map(|h| &h.coordinate)
        .collect();
    let at_once: Vec<_> = whole.hits.iter().map(|h| &h.coordinate).collect();
    assert_eq!(paged, at_once);

    let cursor = &first.hits[4].cursor;
    let other_query = engine.search(&SearchRequest {
        after: Some(cursor),
        ..search("authors", 5)
    });
    assert!(matches!(
        other_query,
        Err(SearchError::Cursor(CursorError::OtherSearch))
    ));
    let mut forged = cursor.clone();
    forged.replace_range(3..4, if &cursor[3..4] == "A" { "B" } else { "A" });
    let forged = engine.search(&SearchRequest {
        after: Some(&forged),
        ..search("books customers ordered", 5)
    });
    assert!(
        matches!(
            forged,
            Err(SearchError::Cursor(CursorError::Malformed { .. }))
        ),
        "{forged:?}"
    );

    let min = engine
        .search(&SearchRequest {
            min_score: Some(0.5),
            ..search("books customers ordered", 50)
        })
        .unwrap();
    assert!(min.hits.iter().all(|h| h.score >= 0.5));
    assert!(matches!(
        engine.search(&SearchRequest {
            min_score: Some(1.5),
            ..search("x", 5)
        }),
        Err(SearchError::MinScore(_))
    ));

    // The same catalog indexed again ranks alike: its cursors still hold.
    index(&engine, shop);
    assert!(engine
        .search(&SearchRequest {
            after: Some(cursor),
            ..search("books customers ordered", 5)
        })
        .is_ok());
    // Another catalog does not.
    let changed = bookshop_sdl().replace("Every author, alphabetically.", "Every author, sorted.");
    index(&engine, from_sdl(&changed));
    let stale = engine.search(&SearchRequest {
        after: Some(cursor),
        ..search("books customers ordered", 5)
    });
    assert!(
        matches!(stale, Err(SearchError::Cursor(CursorError::Stale { .. }))),
        "{stale:?}"
    );
}

#[test]
fn a_deprecated_member_ranks_below_its_replacement() {
    let sdl = r#"
        type Query {
          "Look up a customer's orders by the customer's email address."
          ordersByEmail(email: String!): [Order!]! @deprecated(reason: "Use `customerOrders`.")
          "The orders a customer placed."
          customerOrders(customerId: ID!): [Order!]!
          "The shop's opening hours."
          openingHours: String
        }
        type Order { id: ID! total: Float! }
    "#;
    let engine = Engine::start(engine_config(None)).unwrap();
    index(&engine, from_sdl(sdl));
    let results = engine
        .search(&search("orders by email address", 10))
        .unwrap();
    let rank = |c: &str| results.hits.iter().position(|h| h.coordinate == c);
    let (old, new) = (rank("Query.ordersByEmail"), rank("Query.customerOrders"));
    assert!(old.is_some(), "the deprecated member is still returned");
    assert!(new < old, "replacement at {new:?}, deprecated at {old:?}");
}

#[test]
fn a_member_the_query_names_is_the_top_hit() {
    let engine = Engine::start(engine_config(None)).unwrap();
    index(&engine, from_sdl(&bookshop_sdl()));
    let top = |query: &str| {
        let results = engine.search(&search(query, 5)).unwrap();
        results
            .hits
            .first()
            .map(|h| (h.coordinate.clone(), h.score))
    };
    // A coordinate; a type and then one of its members, that member's coordinate written with
    // a space; a member's bare name, whichever type it is on.
    for (query, named) in [
        ("values of BookFormat", "BookFormat"),
        (
            "how is Query.searchBooks(format:) used",
            "Query.searchBooks(format:)",
        ),
        ("the Book title", "Book.title"),
        ("what does priceCents hold", "Book.priceCents"),
        ("cancelOrder(orderId:)", "Mutation.cancelOrder(orderId:)"),
    ] {
        assert_eq!(top(query), Some((named.into(), 1.0)), "{query}");
    }
    // A type and several of its members describe the type.
    let results = engine
        .search(&search("BookFormat HARDCOVER EBOOK", 5))
        .unwrap();
    let first: Vec<&str> = results
        .hits
        .iter()
        .take(3)
        .map(|h| h.coordinate.as_str())
        .collect();
    assert_eq!(
        first,
        ["BookFormat", "BookFormat.HARDCOVER", "BookFormat.EBOOK"]
    );
    // Capitals alone name nothing.
    assert!(top("HARDCOVER").is_some_and(|(_, score)| score < 1.0));
    // A capital at the start of a query is grammar, not a name: ranked like any other word.
    let results = engine.search(&search("Review", 5)).unwrap();
    assert!(
        results.hits.iter().all(|h| h.score < 1.0),
        "{:?}",
        results.hits
    );
    // Named members outside the caller's contract stay hidden.
    let internal = ContractFilter {
        exclude_tags: ["internal".to_string()].into(),
        ..Default::default()
    };
    // By coordinate or by bare name.
    for (query, hidden) in [
        ("what does Query.customer(id:) take", "Query.customer"),
        ("costCents", "Book.costCents"),
    ] {
        let results = engine
            .search(&SearchRequest {
                contract: Some(&internal),
                ..search(query, 5)
            })
            .unwrap();
        assert!(
            results
                .hits
                .iter()
                .all(|h| !h.coordinate.starts_with(hidden)),
            "{query}: {:?}",
            results.hits
        );
    }
}

#[test]
fn a_damaged_cache_or_model_leaves_search_working() {
    let dir = temp_dir("damaged");
    let shop = from_sdl(&bookshop_sdl());
    let engine = Engine::start(engine_config(Some(&dir))).unwrap();
    index(&engine, Arc::clone(&shop));
    drop(engine);
    // Damage the vector cache's store (not LMDB any more) and every saved graph.
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    let graphs: Vec<_> = files
        .iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("graph-")
        })
        .cloned()
        .collect();
    assert!(!graphs.is_empty(), "a built graph is saved: {files:?}");
    for file in &graphs {
        let bytes = std::fs::read(file).unwrap();
        std::fs::write(file, &bytes[..bytes.len() / 3]).unwrap();
    }
    let store = dir.join("vectors.lmdb");
    assert!(store.join("data.mdb").is_file(), "{files:?}");
    std::fs::write(store.join("data.mdb"), vec![7u8; 64 << 10]).unwrap();

    let engine = Engine::start(engine_config(Some(&dir))).unwrap();
    let warning = engine.cache_warning().expect("the damage is reported");
    assert!(warning.contains(&store.display().to_string()), "{warning}");
    let report = index(&engine, Arc::clone(&shop));
    let texts = text_hashes(&shop).len();
    assert_eq!(
        report.embedded, texts,
        "a new store replaces the damaged one, moved aside"
    );
    assert!(dir.join("vectors.lmdb.damaged").exists());
    assert!(
        report.failed_shards.is_empty(),
        "unreadable graphs are built again"
    );
    let results = engine.search(&search("book reviews", 5)).unwrap();
    assert_eq!(results.mode, SearchMode::Hybrid);
    drop(engine);
    let engine = Engine::start(engine_config(Some(&dir))).unwrap();
    assert!(engine.cache_warning().is_none());
    assert_eq!(
        index(&engine, Arc::clone(&shop)).embedded,
        0,
        "the repaired cache holds every text"
    );
    drop(engine);

    // A model file that is not a model: the engine starts, says why, and answers lexically.
    let bad_model = dir.join("broken.onnx");
    std::fs::write(&bad_model, b"not an onnx file").unwrap();
    let mut config = engine_config(None);
    config.model.onnx = bad_model.clone();
    let engine = Engine::start(config).unwrap();
    let error = engine.model_error().expect("a model error").to_string();
    assert!(error.contains(&bad_model.display().to_string()), "{error}");
    let report = index(&engine, shop);
    assert!(!report.failed_shards.is_empty());
    let results = engine.search(&search("book reviews", 5)).unwrap();
    assert_eq!(results.mode, SearchMode::Lexical);
    assert!(!results.hits.is_empty());
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

#[test]
fn the_default_model_ranks_with_its_measured_params_and_a_stage_switches_off() {
    let config = engine_config(None);
    let key = wayfinder_workers::embed::model_key(&config.model).unwrap();
    assert_eq!(
        key, DEFAULT_MODEL_KEY,
        "the default model's key is {key:#x}"
    );
    let engine = Engine::start(config).unwrap();
    assert_eq!(engine.params(), &Params::default());
    index(&engine, from_sdl(&bookshop_sdl()));
    let query = "what does priceCents hold";
    let top = |engine: &Engine| engine.search(&search(query, 1)).unwrap().hits[0].score;
    assert_eq!(top(&engine), 1.0, "the member named comes first at 1.0");

    let mut config = engine_config(None);
    config.ranking = Some(Params {
        stages: Stage::ALL
            .into_iter()
            .filter(|s| *s != Stage::Named)
            .collect(),
        ..Params::default()
    });
    let unnamed = Engine::start(config).unwrap();
    index(&unnamed, from_sdl(&bookshop_sdl()));
    assert!(
        top(&unnamed) < 1.0,
        "without `named` no member is put first at 1.0"
    );

    let mut config = engine_config(None);
    config.ranking = Some(Params {
        path_share: 2.0,
        ..Params::default()
    });
    let error = Engine::start(config).err().expect("refused");
    assert_eq!(
        error.to_string(),
        "ranking parameter `path_share` is 2, outside [0, 1]"
    );
}
