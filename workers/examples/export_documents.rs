//! Dev tool: dumps a schema's documents (texts, views, structure) and the lexical candidates of
//! a questions file as JSON, for ranking experiments outside the engine.
use std::path::PathBuf;

use serde_json::json;
use wayfinder_supergraph::{Catalog, CatalogOptions};
use wayfinder_workers::eval::read_questions;
use wayfinder_workers::index::document::documents;
use wayfinder_workers::index::lexical::LexicalIndex;
use wayfinder_workers::index::visibility::Visibility;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let catalog = Catalog::from_file(&PathBuf::from(&args[1]), CatalogOptions::default())?;
    let questions = read_questions(&PathBuf::from(&args[2]))?;
    let docs = documents(&catalog, &Default::default());
    let lexical = LexicalIndex::build(&catalog, &docs)?;
    let mut texts: Vec<String> = Vec::new();
    let mut text_ids = std::collections::HashMap::new();
    let mut members = Vec::new();
    for (m, d) in catalog.members().iter().zip(&docs) {
        let views: Vec<Vec<usize>> = d
            .views
            .iter()
            .map(|v| {
                v.parts
                    .iter()
                    .map(|t| {
                        *text_ids.entry(t.hash).or_insert_with(|| {
                            texts.push(t.text.to_string());
                            texts.len() - 1
                        })
                    })
                    .collect()
            })
            .collect();
        members.push(json!({
            "coordinate": m.coordinate, "kind": m.kind.as_str(), "name": m.name,
            "parent": m.parent.map(|p| p.0), "named_type": m.named_type.map(|p| p.0),
            "container": catalog.container(m.id).map(|c| c.id.0),
            "children": m.children.iter().map(|c| c.0).collect::<Vec<_>>(),
            "referenced_by": m.referenced_by.iter().map(|c| c.0).collect::<Vec<_>>(),
            "described": m.description.is_some(), "description": m.description, "builtin": m.builtin,
            "deprecated": m.deprecation.is_some(),
            "replacement": m.deprecation.as_ref().and_then(|d| d.replacement).map(|r| r.0),
            "prior": d.prior, "title": d.title, "views": views,
        }));
    }
    let roots = catalog.roots();
    let qs: Vec<_> = questions
        .iter()
        .map(|q| {
            let hits = lexical
                .search(&q.query, 200, &Visibility::all())
                .unwrap_or_default();
            json!({"id": q.id, "query": q.query, "kind": q.kind, "expected": q.expected,
                   "lexical": hits.iter().map(|(m, s)| (m.0, *s)).collect::<Vec<_>>()})
        })
        .collect();
    let out = json!({"members": members, "texts": texts, "questions": qs,
        "roots": [roots.query.map(|r| r.0), roots.mutation.map(|r| r.0), roots.subscription.map(|r| r.0)]});
    println!("{out}");
    Ok(())
}
