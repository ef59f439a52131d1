//! Trees: the fitted ranker's boosted trees, read from its ONNX file and evaluated here.
//!
//! bench/fit exports the trees as one ONNX `TreeEnsembleRegressor` (domain `ai.onnx.ml`), the
//! format its fitting library writes and any ONNX tool reads. Evaluating them in place of ONNX
//! Runtime is what keeps a question's scoring under 0.3 ms: ONNX Runtime walks each row down
//! each tree on branches the processor cannot predict (about 1 us a row for 100 trees), while
//! here the nodes sit in one flat array, every leaf loops to itself, and each tree takes a fixed
//! number of steps for a block of rows at once, with no branch to mispredict and the block's
//! walks interleaved (bench/RESULTS.md). The result is the operator's: the same comparisons,
//! each tree's leaf added in tree order, the base value last (a test holds it to ONNX Runtime's).
//!
//! Flow: ONNX bytes -> [`proto::ModelProto`] -> the operator's attributes, checked -> [`Trees`]
//! -> one raw score per row.

use std::collections::HashMap;

use prost::Message;

use crate::embed::onnx_graph::proto::{self, AttributeProto};
use crate::rank::features::{Row, COUNT};

/// What a file holds that is not a tree ensemble this evaluates, named.
#[derive(Debug, thiserror::Error)]
pub enum TreesError {
    #[error("not an ONNX model: {0}")]
    Decode(String),
    #[error("no ai.onnx.ml TreeEnsembleRegressor node in the graph")]
    NoEnsemble,
    #[error("the graph has a {0} node beyond the one TreeEnsembleRegressor and the Identity nodes evaluated here")]
    OtherNode(String),
    #[error("attribute {name}: {message}")]
    Attribute { name: &'static str, message: String },
    #[error("tree {tree}: {message}")]
    Tree { tree: i64, message: String },
}

/// One node of the flat array. A leaf's two children are itself, so a walk that reaches it
/// early stays there for the tree's remaining steps.
#[derive(Debug, Clone, Copy)]
struct Node {
    /// The feature compared ([`FEATURE`]), and [`MISSING_YES`] when a missing value goes
    /// where `x <= threshold` goes.
    feature: u32,
    threshold: f32,
    /// Where `x <= threshold` goes, and where it does not.
    next: [u32; 2],
}

const FEATURE: u32 = u32::MAX >> 1;
const MISSING_YES: u32 = !FEATURE;

#[derive(Debug, Clone, Copy)]
struct Tree {
    root: u32,
    /// Its longest path from the root to a leaf, in edges.
    depth: u32,
}

/// A fitted tree ensemble over rows of `features` numbers.
#[derive(Debug)]
pub struct Trees {
    nodes: Vec<Node>,
    /// Each node's leaf value (0 for a branch).
    values: Vec<f32>,
    trees: Vec<Tree>,
    base: f32,
}

/// Rows walked down a tree together: independent walks the processor overlaps.
const BLOCK: usize = 8;

impl Trees {
    /// The ensemble of the ONNX model `bytes`, over [`Row`]s.
    pub fn from_onnx(bytes: &[u8]) -> Result<Trees, TreesError> {
        let model =
            proto::ModelProto::decode(bytes).map_err(|e| TreesError::Decode(e.to_string()))?;
        let mut ensemble = None;
        for node in model.graph.iter().flat_map(|g| &g.node) {
            match (node.op_type(), node.domain()) {
                ("TreeEnsembleRegressor", "ai.onnx.ml") if ensemble.is_none() => {
                    ensemble = Some(node)
                }
                ("Identity", "") => {}
                (op, domain) => {
                    return Err(TreesError::OtherNode(if domain.is_empty() {
                        op.to_string()
                    } else {
                        format!("{domain}.{op}")
                    }))
                }
            }
        }
        let attributes: HashMap<&str, &AttributeProto> = ensemble
            .ok_or(TreesError::NoEnsemble)?
            .attribute
            .iter()
            .map(|a| (a.name(), a))
            .collect();
        Self::from_attributes(&Attributes(attributes))
    }

    fn from_attributes(a: &Attributes<'_>) -> Result<Trees, TreesError> {
        for (name, expected) in [("aggregate_function", "SUM"), ("post_transform", "NONE")] {
            let value = a.string(name).unwrap_or(expected.as_bytes());
            if value != expected.as_bytes() {
                return Err(TreesError::Attribute {
                    name,
                    message: format!(
                        "{} (only {expected} is evaluated)",
                        String::from_utf8_lossy(value)
                    ),
                });
            }
        }
        if let Some(n) = a.0.get("n_targets").and_then(|t| t.i).filter(|n| *n != 1) {
            return Err(TreesError::Attribute {
                name: "n_targets",
                message: format!("{n} (one score a row is evaluated)"),
            });
        }
        for name in ["nodes_values_as_tensor", "target_weights_as_tensor"] {
            if a.0.contains_key(name) {
                return Err(TreesError::Attribute {
                    name,
                    message: "double thresholds or weights are not evaluated".into(),
                });
            }
        }
        let tree_ids = a.ints("nodes_treeids")?;
        let node_ids = a.ints("nodes_nodeids")?;
        let feature_ids = a.ints("nodes_featureids")?;
        let thresholds = a.floats("nodes_values")?;
        let modes = a.strings("nodes_modes")?;
        let yes_ids = a.ints("nodes_truenodeids")?;
        let no_ids = a.ints("nodes_falsenodeids")?;
        let missing = a.optional_ints("nodes_missing_value_tracks_true");
        let count = tree_ids.len();
        for (name, len) in [
            ("nodes_nodeids", node_ids.len()),
            ("nodes_featureids", feature_ids.len()),
            ("nodes_values", thresholds.len()),
            ("nodes_modes", modes.len()),
            ("nodes_truenodeids", yes_ids.len()),
            ("nodes_falsenodeids", no_ids.len()),
            (
                "nodes_missing_value_tracks_true",
                missing.map_or(count, <[i64]>::len),
            ),
        ] {
            if len != count {
                return Err(TreesError::Attribute {
                    name,
                    message: format!("{len} entries for {count} nodes"),
                });
            }
        }
        let place: HashMap<(i64, i64), u32> = tree_ids
            .iter()
            .zip(node_ids)
            .enumerate()
            .map(|(i, (&t, &n))| ((t, n), i as u32))
            .collect();
        if place.len() != count {
            return Err(TreesError::Attribute {
                name: "nodes_nodeids",
                message: "a (tree, node) pair is listed twice".into(),
            });
        }
        let find = |tree: i64, node: i64| {
            place.get(&(tree, node)).copied().ok_or(TreesError::Tree {
                tree,
                message: format!("node {node} is referred to but not listed"),
            })
        };
        let mut nodes = Vec::with_capacity(count);
        for i in 0..count {
            let tree = tree_ids[i];
            let leaf = |at: u32| Node {
                feature: 0,
                threshold: 0.0,
                next: [at, at],
            };
            nodes.push(match modes[i].as_slice() {
                b"LEAF" => leaf(i as u32),
                b"BRANCH_LEQ" if yes_ids[i] != node_ids[i] && no_ids[i] != node_ids[i] => {
                    let feature = usize::try_from(feature_ids[i])
                        .ok()
                        .filter(|f| *f < COUNT)
                        .ok_or_else(|| TreesError::Tree {
                            tree,
                            message: format!(
                                "node {} reads feature {} of {COUNT}",
                                node_ids[i], feature_ids[i]
                            ),
                        })?;
                    let missing_yes = missing.is_some_and(|m| m[i] != 0);
                    Node {
                        feature: feature as u32 | if missing_yes { MISSING_YES } else { 0 },
                        threshold: thresholds[i],
                        next: [find(tree, yes_ids[i])?, find(tree, no_ids[i])?],
                    }
                }
                other => {
                    return Err(TreesError::Tree {
                        tree,
                        message: format!(
                            "node {} has mode {} (BRANCH_LEQ to other nodes and LEAF are \
                             evaluated)",
                            node_ids[i],
                            String::from_utf8_lossy(other)
                        ),
                    })
                }
            });
        }

        let mut values = vec![0f32; count];
        let target_trees = a.ints("target_treeids")?;
        let target_nodes = a.ints("target_nodeids")?;
        let weights = a.floats("target_weights")?;
        if target_nodes.len() != target_trees.len() || weights.len() != target_trees.len() {
            return Err(TreesError::Attribute {
                name: "target_weights",
                message: format!(
                    "{} tree ids, {} node ids and {} weights",
                    target_trees.len(),
                    target_nodes.len(),
                    weights.len()
                ),
            });
        }
        for ((&tree, &node), &weight) in target_trees.iter().zip(target_nodes).zip(weights) {
            let at = find(tree, node)? as usize;
            if modes[at] != b"LEAF" {
                return Err(TreesError::Tree {
                    tree,
                    message: format!("node {node} has a weight but is not a leaf"),
                });
            }
            values[at] += weight;
        }

        let mut roots: Vec<i64> = tree_ids.to_vec();
        roots.sort_unstable();
        roots.dedup();
        let trees = roots
            .into_iter()
            .map(|tree| {
                let root = find(tree, 0)?;
                let depth = depth(&nodes, root).ok_or(TreesError::Tree {
                    tree,
                    message: format!("a path from the root is longer than its {count} nodes"),
                })?;
                Ok(Tree { root, depth })
            })
            .collect::<Result<Vec<_>, TreesError>>()?;
        let base = match a.optional_floats("base_values") {
            None | Some([]) => 0.0,
            Some([base]) => *base,
            Some(more) => {
                return Err(TreesError::Attribute {
                    name: "base_values",
                    message: format!("{} values for one target", more.len()),
                })
            }
        };
        Ok(Trees {
            nodes,
            values,
            trees,
            base,
        })
    }

    /// Each row's raw score, in order.
    pub fn predict(&self, rows: &[Row]) -> Vec<f32> {
        let mut scores = vec![0f32; rows.len()];
        let (blocks, rest) = rows.as_chunks::<BLOCK>();
        let (sums, rest_sums) = scores.as_chunks_mut::<BLOCK>();
        for (block, sums) in blocks.iter().zip(sums) {
            for tree in &self.trees {
                let mut at = [tree.root; BLOCK];
                for _ in 0..tree.depth {
                    for k in 0..BLOCK {
                        at[k] = self.step(at[k], &block[k]);
                    }
                }
                for k in 0..BLOCK {
                    sums[k] += self.values[at[k] as usize];
                }
            }
        }
        for (row, sum) in rest.iter().zip(rest_sums) {
            for tree in &self.trees {
                let mut at = tree.root;
                for _ in 0..tree.depth {
                    at = self.step(at, row);
                }
                *sum += self.values[at as usize];
            }
        }
        scores.iter_mut().for_each(|s| *s += self.base);
        scores
    }

    #[inline(always)]
    fn step(&self, at: u32, row: &Row) -> u32 {
        let node = self.nodes[at as usize];
        let x = row[(node.feature & FEATURE) as usize];
        let missing_yes = node.feature & MISSING_YES != 0;
        let yes = (x <= node.threshold) | (missing_yes & x.is_nan());
        node.next[usize::from(!yes)]
    }
}

/// The longest path from `root` in edges; `None` when it is longer than the nodes could make
/// without a cycle.
fn depth(nodes: &[Node], root: u32) -> Option<u32> {
    let mut deepest = 0;
    let mut stack = vec![(root, 0u32)];
    while let Some((at, depth)) = stack.pop() {
        if depth as usize > nodes.len() {
            return None;
        }
        let node = nodes[at as usize];
        if node.next == [at, at] {
            deepest = deepest.max(depth);
        } else {
            stack.extend(node.next.map(|next| (next, depth + 1)));
        }
    }
    Some(deepest)
}

/// The ensemble node's attributes by name, each read as the type the operator gives it.
struct Attributes<'a>(HashMap<&'a str, &'a AttributeProto>);

impl<'a> Attributes<'a> {
    fn required(&self, name: &'static str) -> Result<&'a AttributeProto, TreesError> {
        self.0.get(name).copied().ok_or(TreesError::Attribute {
            name,
            message: "missing".into(),
        })
    }

    fn ints(&self, name: &'static str) -> Result<&'a [i64], TreesError> {
        Ok(&self.required(name)?.ints)
    }

    fn optional_ints(&self, name: &str) -> Option<&'a [i64]> {
        self.0.get(name).map(|a| &a.ints[..])
    }

    fn floats(&self, name: &'static str) -> Result<&'a [f32], TreesError> {
        Ok(&self.required(name)?.floats)
    }

    fn optional_floats(&self, name: &str) -> Option<&'a [f32]> {
        self.0.get(name).map(|a| &a.floats[..])
    }

    fn strings(&self, name: &'static str) -> Result<&'a [Vec<u8>], TreesError> {
        Ok(&self.required(name)?.strings)
    }

    fn string(&self, name: &str) -> Option<&'a [u8]> {
        self.0.get(name).and_then(|a| a.s.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use ort::session::Session;
    use ort::value::Tensor;

    use super::*;

    const BUILT_IN: &[u8] = include_bytes!("fitted/all-MiniLM-L6-v2-int8.onnx");

    /// Rows whose every feature sits on, just below or just above a threshold the trees compare
    /// it with, or is missing: each comparison goes both ways somewhere.
    fn rows_at_the_thresholds(count: usize) -> Vec<Row> {
        let model = proto::ModelProto::decode(BUILT_IN).unwrap();
        let node = &model.graph.unwrap().node[0];
        let attribute = |name: &str| node.attribute.iter().find(|a| a.name() == name).unwrap();
        let mut thresholds = vec![Vec::new(); COUNT];
        let features = &attribute("nodes_featureids").ints;
        for (mode, (&f, &t)) in attribute("nodes_modes")
            .strings
            .iter()
            .zip(features.iter().zip(&attribute("nodes_values").floats))
        {
            if mode == b"BRANCH_LEQ" {
                thresholds[f as usize].push(t);
            }
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        (0..count)
            .map(|_| {
                let mut row = [0f32; COUNT];
                for (x, near) in row.iter_mut().zip(&thresholds) {
                    if near.is_empty() {
                        continue;
                    }
                    let t = near[next(near.len())];
                    *x = match next(7) {
                        0 => f32::NAN,
                        1 | 2 => t,
                        3 | 4 => t.next_down(),
                        _ => t.next_up(),
                    };
                }
                row
            })
            .collect()
    }

    fn home() -> PathBuf {
        std::env::var_os("WAYFINDER_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.wayfinder")))
    }

    #[test]
    fn scores_as_onnx_runtime_does() {
        let rows = rows_at_the_thresholds(500);
        let ours = Trees::from_onnx(BUILT_IN).unwrap().predict(&rows);

        let runtime = crate::ModelConfig::default_in(&home()).runtime;
        let environment = crate::embed::model::environment(&runtime).unwrap();
        let mut session = Session::builder(&environment)
            .unwrap()
            .commit_from_memory(BUILT_IN)
            .unwrap();
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let input = Tensor::from_array(([rows.len() as i64, COUNT as i64], flat)).unwrap();
        let outputs = session.run(ort::inputs!["features" => input]).unwrap();
        let (_, theirs) = outputs[0].try_extract_tensor::<f32>().unwrap();

        assert_eq!(ours.len(), theirs.len());
        let spread = theirs.iter().fold(0f32, |m, s| m.max(s.abs()));
        for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
            assert!(
                (a - b).abs() <= 1e-5 * spread.max(1.0),
                "row {i}: {a} against {b}"
            );
        }
        assert!(
            ours.iter().any(|s| *s != ours[0]),
            "rows that all score alike"
        );
    }

    #[test]
    fn what_is_not_an_ensemble_it_evaluates_is_refused_by_name() {
        let edited = |edit: &dyn Fn(&mut Vec<AttributeProto>)| {
            let mut model = proto::ModelProto::decode(BUILT_IN).unwrap();
            edit(&mut model.graph.as_mut().unwrap().node[0].attribute);
            Trees::from_onnx(&model.encode_to_vec())
                .unwrap_err()
                .to_string()
        };
        fn named(name: &str) -> impl Fn(&AttributeProto) -> bool + '_ {
            move |a| a.name() == name
        }
        let text = edited(&|attributes| {
            let modes = attributes
                .iter_mut()
                .find(|a| named("nodes_modes")(a))
                .unwrap();
            modes.strings[0] = b"BRANCH_EQ".to_vec();
        });
        assert!(text.contains("BRANCH_EQ"), "{text}");
        let text = edited(&|attributes| {
            let features = attributes
                .iter_mut()
                .find(|a| named("nodes_featureids")(a))
                .unwrap();
            features.ints[0] = 999;
        });
        assert!(text.contains("feature 999"), "{text}");
        let text = edited(&|attributes| attributes.retain(|a| !named("nodes_values")(a)));
        assert!(text.contains("nodes_values: missing"), "{text}");
        let text = edited(&|attributes| {
            let no = attributes
                .iter_mut()
                .find(|a| named("nodes_falsenodeids")(a))
                .unwrap();
            no.ints[0] = 12_345;
        });
        assert!(text.contains("node 12345"), "{text}");
        assert!(matches!(
            Trees::from_onnx(b"not a model"),
            Err(TreesError::Decode(_))
        ));
    }
}
