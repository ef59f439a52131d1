use super::*;

const DAY: u64 = 20_000;

fn insights(config: InsightsConfig) -> Insights {
    Insights::new(config).expect("a valid config")
}

fn opted_in(tenants: &[&str]) -> InsightsConfig {
    InsightsConfig {
        tenants: tenants.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    }
}

fn hit(coordinate: &str, score: f64) -> Hit {
    Hit {
        coordinate: coordinate.to_string(),
        score,
    }
}

fn search<'a>(client: u64, question: &'a str, hits: &'a [Hit]) -> Search<'a> {
    Search {
        tenant: "public",
        client,
        question,
        hits,
    }
}

#[test]
fn empty_low_and_searched_again_questions_are_counted_and_good_ones_are_not() {
    let store = insights(opted_in(&["public"]));
    let good = [hit("Query.books", 0.8)];
    let low = [hit("Query.authors", 0.1)];
    assert_eq!(
        store.searched_on(&search(1, "Books on sale?", &[]), DAY),
        [Reason::Empty]
    );
    // The same client asks again, differently: the first question led nowhere.
    assert_eq!(
        store.searched_on(&search(1, "discounted books", &low), DAY),
        [Reason::SearchedAgain, Reason::LowScore]
    );
    // Then runs an operation: its last question was answered.
    store.ran_operation(1);
    assert!(store
        .searched_on(&search(1, "books", &good), DAY)
        .is_empty());
    store.ran_operation(1);
    // Another client's good question, then the same question again: nothing counted.
    assert!(store
        .searched_on(&search(2, "authors", &good), DAY)
        .is_empty());
    assert!(store
        .searched_on(&search(2, "Authors", &good), DAY)
        .is_empty());

    let top = store.top_on("public", 10, DAY);
    let listed: Vec<(Option<&str>, u64)> =
        top.iter().map(|q| (q.text.as_deref(), q.count)).collect();
    assert_eq!(
        listed,
        [(Some("books on sale"), 2), (Some("discounted books"), 1)]
    );
    assert_eq!(
        top[0].reasons,
        [(Reason::Empty, 1), (Reason::SearchedAgain, 1)]
    );
    assert_eq!(top[1].best, low);
    assert!(top.iter().all(|q| q.hash.is_none()));
}

#[test]
fn only_opted_in_tenants_are_kept() {
    let store = insights(opted_in(&["partner"]));
    assert!(store
        .searched_on(&search(1, "anything", &[]), DAY)
        .is_empty());
    assert!(store.is_empty());
    let partner = Search {
        tenant: "partner",
        ..search(1, "anything", &[])
    };
    assert_eq!(store.searched_on(&partner, DAY), [Reason::Empty]);
    assert_eq!(store.tenants(), ["partner"]);
}

#[test]
fn the_window_slides() {
    let store = insights(InsightsConfig {
        days: 3,
        ..opted_in(&["public"])
    });
    let count = |day| {
        store
            .top_on("public", 1, day)
            .first()
            .map_or(0, |q| q.count)
    };
    for client in [1, 2] {
        store.searched_on(&search(client, "gift cards", &[]), DAY);
    }
    assert_eq!(count(DAY), 2);
    store.searched_on(&search(3, "gift cards", &[]), DAY + 2);
    assert_eq!(count(DAY + 2), 3);
    assert_eq!(count(DAY + 3), 1, "the first day left the window");
    assert_eq!(count(DAY + 5), 0);
    // Counted again after a gap: the days in between start from 0.
    store.searched_on(&search(4, "gift cards", &[]), DAY + 9);
    assert_eq!(count(DAY + 9), 1);
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

#[test]
fn a_hundred_thousand_distinct_questions_stay_within_the_bound_and_the_top_survives() {
    let config = opted_in(&["public"]);
    let per_tenant = config.per_tenant;
    let store = insights(config);
    let asked_often = [
        "how do i refund part of an order",
        "which field has the tracking number",
        "loyalty points of a customer",
    ];
    let before = rss();
    let long = "x".repeat(400);
    for i in 0..100_000u64 {
        let question = format!("question number {i} {long}");
        store.searched_on(&search(i, &question, &[]), DAY);
        // Each asked once every hundred new questions (and a different client every time).
        if i % 100 == 0 {
            for (k, often) in asked_often.iter().enumerate() {
                store.searched_on(&search(1_000_000 + i * 3 + k as u64, often, &[]), DAY);
            }
        }
        assert!(store.len() <= 2 * per_tenant + 1);
    }
    let after = rss();
    let held = store.text_bytes();
    println!(
        "100,000 distinct questions of 430 characters: {} kept, {:.1} MiB of text held; \
         RSS {:.1} MiB before, {:.1} MiB after",
        store.len(),
        held as f64 / 1048576.0,
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    );
    // At most 2 x per_tenant kept and PENDING_CLIENTS pending, each at most
    // MAX_QUESTION_CHARS (and the tenant's name; these questions found no hit).
    let bound = (2 * per_tenant + 1 + PENDING_CLIENTS) * (MAX_QUESTION_CHARS + "public".len());
    assert!(held <= bound, "{held} bytes held, bound {bound}");
    let top: Vec<String> = store
        .top_on("public", 3, DAY)
        .into_iter()
        .filter_map(|q| q.text)
        .collect();
    let mut expected: Vec<String> = asked_often.iter().map(|q| q.to_string()).collect();
    expected.sort();
    assert_eq!(top, expected);
}

#[test]
fn with_a_hash_key_no_text_is_stored() {
    let store = insights(InsightsConfig {
        hash_key: Some("a key of sixteen chars".into()),
        ..opted_in(&["public"])
    });
    store.searched_on(&search(1, "Secret Project Falcon budget", &[]), DAY);
    store.searched_on(&search(2, "secret project falcon budget?", &[]), DAY);
    let top = store.top_on("public", 10, DAY);
    assert_eq!(top.len(), 1, "the same question counts together");
    assert_eq!(top[0].count, 2);
    assert_eq!(top[0].text, None);
    assert_eq!(top[0].hash.as_ref().map(String::len), Some(64));
    // Nowhere in the store, pending searches included.
    let state = format!("{:?}", store.lock().tenants)
        + &format!("{:?}", store.lock().pending.iter().collect::<Vec<_>>());
    assert!(!state.to_lowercase().contains("falcon"), "{state}");
    // Another key hashes otherwise.
    let other = insights(InsightsConfig {
        hash_key: Some("another key, also long".into()),
        ..opted_in(&["public"])
    });
    other.searched_on(&search(1, "secret project falcon budget", &[]), DAY);
    assert_ne!(other.top_on("public", 1, DAY)[0].hash, top[0].hash);
}

#[test]
fn bad_settings_are_named() {
    let errors = [
        InsightsConfig {
            low_score: 2.0,
            ..Default::default()
        },
        InsightsConfig {
            per_tenant: 0,
            ..Default::default()
        },
        InsightsConfig {
            days: 90,
            ..Default::default()
        },
        InsightsConfig {
            hash_key: Some("short".into()),
            ..Default::default()
        },
    ]
    .map(|config| Insights::new(config).err().map(|e| e.to_string()));
    let settings = ["low_score", "per_tenant", "days", "hash_key"];
    for (error, setting) in errors.iter().zip(settings) {
        assert!(
            error.as_deref().is_some_and(|e| e.contains(setting)),
            "{error:?}"
        );
    }
}

#[test]
fn questions_are_normalised() {
    assert_eq!(
        normalise("  How do I   REFUND an order?? "),
        "how do i refund an order"
    );
    assert_eq!(normalise("?!"), "");
    assert_eq!(normalise(&"a".repeat(900)).len(), MAX_QUESTION_CHARS);
}

#[test]
fn the_store_is_saved_and_read_back() {
    let dir = std::env::temp_dir().join(format!("wayfinder-insights-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (store, error) = Insights::open(opted_in(&["public"]), Some(&dir)).unwrap();
    assert!(error.is_none(), "{error:?}");
    store.searched_on(&search(1, "gift cards", &[hit("Query.cards", 0.1)]), DAY);
    store.save().unwrap();
    assert!(dir.join(FILE).exists());
    drop(store);

    let (again, error) = Insights::open(opted_in(&["public"]), Some(&dir)).unwrap();
    assert!(error.is_none(), "{error:?}");
    let listed = again.top_on("public", 5, DAY);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].text.as_deref(), Some("gift cards"));
    assert_eq!(listed[0].best, [hit("Query.cards", 0.1)]);
    // Counting goes on from what was read, and the drop saves it.
    again.searched_on(&search(2, "gift cards", &[]), DAY);
    drop(again);

    let read = Insights::read(&dir).unwrap();
    assert_eq!(read.tenants(), ["public"]);
    assert_eq!(read.top_on("public", 5, DAY)[0].count, 2);

    // A store of texts is not read as one of hashes.
    let (hashed, error) = Insights::open(
        InsightsConfig {
            hash_key: Some("a key of sixteen chars".into()),
            ..opted_in(&["public"])
        },
        Some(&dir),
    )
    .unwrap();
    assert!(error.is_some_and(|e| e.to_string().contains("starting anew")));
    assert!(hashed.is_empty());
    drop(hashed);
    let _ = std::fs::remove_dir_all(&dir);
}
