//! Trees: the fitted ranker's boosted trees, read from its ONNX file and evaluated here.
//!
//! bench/fit exports the trees as one ONNX `TreeEnsembleRegressor` (domain `ai.onnx.ml`), the
//! format its fitting library writes and any ONNX tool reads. ONNX Runtime walks each row down
//! each tree on branches the processor cannot predict (1-3 us a row for 100 trees); here the
//! nodes sit in one flat array, every leaf loops to itself, and each tree takes a fixed number
//! of steps for eight rows at once, with no branch to mispredict and the eight walks overlapping:
//! github's scoring 0.29 -> 0.17-0.23 ms a question (bench/RESULTS.md). The result is the
//! operator's, as ONNX Runtime reads the same file (a test holds them equal): the same
//! comparisons, each tree's leaf added in the order the trees are listed, the base value last.
//! A file is checked whole as it loads (each tree a tree, at most [`MAX_DEPTH`] deep, each leaf
//! one weight), so no row can make a walk fail or run long.
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

impl Node {
    fn is_leaf(&self, at: usize) -> bool {
        self.next == [at as u32; 2]
    }
}

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

/// The deepest tree evaluated: every row takes this many steps at most in each tree.
const MAX_DEPTH: u32 = 64;

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
            let value = a
                .get(name)
                .and_then(|a| a.s.as_deref())
                .unwrap_or(expected.as_bytes());
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
        match a.get("n_targets").and_then(|t| t.i) {
            Some(1) => {}
            n => {
                return Err(TreesError::Attribute {
                    name: "n_targets",
                    message: format!("{n:?} (one score a row is evaluated)"),
                })
            }
        }
        for name in [
            "nodes_values_as_tensor",
            "target_weights_as_tensor",
            "base_values_as_tensor",
        ] {
            if a.get(name).is_some() {
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
        let missing = a
            .get("nodes_missing_value_tracks_true")
            .map(|m| &m.ints[..]);
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
        let mut place: HashMap<(i64, i64), u32> = HashMap::with_capacity(count);
        for (i, (&tree, &node)) in tree_ids.iter().zip(node_ids).enumerate() {
            if place.insert((tree, node), i as u32).is_some() {
                return Err(TreesError::Tree {
                    tree,
                    message: format!("node {node} is listed twice"),
                });
            }
        }
        let find = |tree: i64, node: i64| {
            place.get(&(tree, node)).copied().ok_or(TreesError::Tree {
                tree,
                message: format!("node {node} is referred to but not listed"),
            })
        };
        let mut nodes = Vec::with_capacity(count);
        for i in 0..count {
            let (tree, node) = (tree_ids[i], node_ids[i]);
            nodes.push(match modes[i].as_slice() {
                b"LEAF" => Node {
                    feature: 0,
                    threshold: 0.0,
                    next: [i as u32; 2],
                },
                b"BRANCH_LEQ" => {
                    let feature = usize::try_from(feature_ids[i])
                        .ok()
                        .filter(|f| *f < COUNT)
                        .ok_or_else(|| TreesError::Tree {
                            tree,
                            message: format!(
                                "node {node} reads feature {} of {COUNT}",
                                feature_ids[i]
                            ),
                        })?;
                    let missing_yes = missing.is_some_and(|m| m[i] == 1);
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
                            "node {node} has mode {} (BRANCH_LEQ and LEAF are evaluated)",
                            String::from_utf8_lossy(other)
                        ),
                    })
                }
            });
        }
        let values = leaf_values(a, &nodes, tree_ids, node_ids, find)?;
        let trees = walks(&nodes, tree_ids, node_ids)?;
        let base = match a.get("base_values").map(|b| &b.floats[..]) {
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
        let (blocks, rest) = rows.as_chunks::<BLOCK>();
        let mut last = [[0f32; COUNT]; BLOCK];
        last[..rest.len()].copy_from_slice(rest);
        let last = (!rest.is_empty()).then_some(&last);
        let mut scores = Vec::with_capacity(rows.len() + BLOCK);
        for block in blocks.iter().chain(last) {
            let mut sums = [0f32; BLOCK];
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
            scores.extend(sums.map(|sum| sum + self.base));
        }
        scores.truncate(rows.len());
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

/// Each leaf's value: its one weight.
fn leaf_values(
    a: &Attributes<'_>,
    nodes: &[Node],
    tree_ids: &[i64],
    node_ids: &[i64],
    find: impl Fn(i64, i64) -> Result<u32, TreesError>,
) -> Result<Vec<f32>, TreesError> {
    let target_trees = a.ints("target_treeids")?;
    let target_nodes = a.ints("target_nodeids")?;
    let weights = a.floats("target_weights")?;
    for (name, len) in [
        ("target_nodeids", target_nodes.len()),
        ("target_weights", weights.len()),
    ] {
        if len != target_trees.len() {
            return Err(TreesError::Attribute {
                name,
                message: format!("{len} entries for {} target tree ids", target_trees.len()),
            });
        }
    }
    let mut values = vec![None; nodes.len()];
    for ((&tree, &node), &weight) in target_trees.iter().zip(target_nodes).zip(weights) {
        let at = find(tree, node)? as usize;
        let message = if !nodes[at].is_leaf(at) {
            "has a weight but is not a leaf"
        } else if values[at].replace(weight).is_some() {
            "has two weights"
        } else {
            continue;
        };
        return Err(TreesError::Tree {
            tree,
            message: format!("node {node} {message}"),
        });
    }
    values
        .iter()
        .enumerate()
        .map(|(at, value)| match (nodes[at].is_leaf(at), value) {
            (true, Some(value)) => Ok(*value),
            (false, _) => Ok(0.0),
            (true, None) => Err(at),
        })
        .collect::<Result<_, usize>>()
        .map_err(|at| TreesError::Tree {
            tree: tree_ids[at],
            message: format!("leaf {} has no weight", node_ids[at]),
        })
}

/// The trees in the order listed, as ONNX Runtime reads them: each tree's nodes listed
/// together, the first its root. Each must be a tree (every other node reached from the root
/// by exactly one branch) no deeper than [`MAX_DEPTH`], so a walk ends and costs a bounded
/// number of steps whatever the file holds.
fn walks(nodes: &[Node], tree_ids: &[i64], node_ids: &[i64]) -> Result<Vec<Tree>, TreesError> {
    // Each tree's nodes in one run first: a branch names a node of its own tree, so every
    // walk below then stays inside the run it checks.
    let mut runs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut start = 0;
    while start < nodes.len() {
        let tree = tree_ids[start];
        if !seen.insert(tree) {
            return Err(TreesError::Tree {
                tree,
                message: "its nodes are not listed together".into(),
            });
        }
        let end = start + tree_ids[start..].iter().take_while(|t| **t == tree).count();
        runs.push((tree, start, end));
        start = end;
    }
    let mut trees = Vec::with_capacity(runs.len());
    let mut parents = vec![0u8; nodes.len()];
    for (tree, start, end) in runs {
        let error = |message: String| TreesError::Tree { tree, message };
        for (at, node) in nodes.iter().enumerate().take(end).skip(start) {
            if !node.is_leaf(at) {
                for child in node.next {
                    let child = child as usize;
                    parents[child] = parents[child].saturating_add(1);
                    if child == start || parents[child] > 1 {
                        return Err(error(format!(
                            "node {} is reached by more than one branch",
                            node_ids[child]
                        )));
                    }
                }
            }
        }
        // One parent each and none for the root: a walk from the root meets each node once.
        let (mut reached, mut depth) = (0, 0);
        let mut stack = vec![(start as u32, 0)];
        while let Some((at, level)) = stack.pop() {
            reached += 1;
            if level > MAX_DEPTH {
                return Err(error(format!("deeper than {MAX_DEPTH}")));
            }
            depth = depth.max(level);
            if !nodes[at as usize].is_leaf(at as usize) {
                stack.extend(nodes[at as usize].next.map(|next| (next, level + 1)));
            }
        }
        if reached != end - start {
            return Err(error(format!(
                "{} of its {} nodes are not reached from its first, node {}",
                end - start - reached,
                end - start,
                node_ids[start]
            )));
        }
        trees.push(Tree {
            root: start as u32,
            depth,
        });
    }
    Ok(trees)
}

/// The ensemble node's attributes by name, each read as the type the operator gives it.
struct Attributes<'a>(HashMap<&'a str, &'a AttributeProto>);

impl<'a> Attributes<'a> {
    fn get(&self, name: &str) -> Option<&'a AttributeProto> {
        self.0.get(name).copied()
    }

    fn required(&self, name: &'static str) -> Result<&'a AttributeProto, TreesError> {
        self.get(name).ok_or(TreesError::Attribute {
            name,
            message: "missing".into(),
        })
    }

    fn ints(&self, name: &'static str) -> Result<&'a [i64], TreesError> {
        Ok(&self.required(name)?.ints)
    }

    fn floats(&self, name: &'static str) -> Result<&'a [f32], TreesError> {
        Ok(&self.required(name)?.floats)
    }

    fn strings(&self, name: &'static str) -> Result<&'a [Vec<u8>], TreesError> {
        Ok(&self.required(name)?.strings)
    }
}

#[cfg(test)]
mod tests {

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

    #[test]
    fn scores_as_onnx_runtime_does() {
        let rows = rows_at_the_thresholds(500);
        let ours = Trees::from_onnx(BUILT_IN).unwrap().predict(&rows);

        let config = crate::ModelConfig::default_in(&crate::embed::model::tests::home());
        let environment =
            crate::embed::model::environment(config.runtime.as_deref().unwrap()).unwrap();
        let mut session = Session::builder(&environment)
            .unwrap()
            .commit_from_memory(BUILT_IN)
            .unwrap();
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        let input = Tensor::from_array(([rows.len() as i64, COUNT as i64], flat)).unwrap();
        let outputs = session.run(ort::inputs!["features" => input]).unwrap();
        let (_, theirs) = outputs[0].try_extract_tensor::<f32>().unwrap();

        assert_eq!(ours.len(), theirs.len());
        // ONNX Runtime adds the leaves in its own order and precision: the sums may differ in
        // the last bits (3e-7 here), while the closest two leaves of one tree differ by 9e-6.
        for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs().max(1.0),
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
        fn attribute<'a>(
            attributes: &'a mut [AttributeProto],
            name: &str,
        ) -> &'a mut AttributeProto {
            attributes.iter_mut().find(|a| a.name() == name).unwrap()
        }
        let text = edited(&|attributes| {
            let modes = attribute(attributes, "nodes_modes");
            modes.strings[0] = b"BRANCH_EQ".to_vec();
        });
        assert!(text.contains("BRANCH_EQ"), "{text}");
        let text = edited(&|attributes| {
            let features = attribute(attributes, "nodes_featureids");
            features.ints[0] = 999;
        });
        assert!(text.contains("feature 999"), "{text}");
        let text = edited(&|attributes| attributes.retain(|a| a.name() != "nodes_values"));
        assert!(text.contains("nodes_values: missing"), "{text}");
        let text = edited(&|attributes| {
            let no = attribute(attributes, "nodes_falsenodeids");
            no.ints[0] = 12_345;
        });
        assert!(text.contains("node 12345"), "{text}");
        // Both branches to one node: a graph whose paths double at each step, not a tree.
        let text = edited(&|attributes| {
            let yes = attribute(attributes, "nodes_truenodeids").ints[0];
            let no = attribute(attributes, "nodes_falsenodeids");
            no.ints[0] = yes;
        });
        assert!(text.contains("more than one branch"), "{text}");
        let text = edited(&|attributes| {
            for name in ["target_treeids", "target_nodeids", "target_weights"] {
                let target = attribute(attributes, name);
                target.ints.truncate(target.ints.len().saturating_sub(1));
                target
                    .floats
                    .truncate(target.floats.len().saturating_sub(1));
            }
        });
        assert!(text.contains("has no weight"), "{text}");
        // Tree 2 renamed tree 0 (its node ids moved past tree 0's): tree 0 in two runs.
        let text = edited(&|attributes| {
            let at = |name: &str| attributes.iter().position(|a| a.name() == name).unwrap();
            let (trees, targets) = (at("nodes_treeids"), at("target_treeids"));
            let shifted = [
                at("nodes_nodeids"),
                at("nodes_truenodeids"),
                at("nodes_falsenodeids"),
            ];
            let target_nodes = at("target_nodeids");
            for i in 0..attributes[trees].ints.len() {
                if attributes[trees].ints[i] == 2 {
                    attributes[trees].ints[i] = 0;
                    for ids in shifted {
                        attributes[ids].ints[i] += 1000;
                    }
                }
            }
            for i in 0..attributes[targets].ints.len() {
                if attributes[targets].ints[i] == 2 {
                    attributes[targets].ints[i] = 0;
                    attributes[target_nodes].ints[i] += 1000;
                }
            }
        });
        assert!(text.contains("not listed together"), "{text}");
        let text = edited(&|attributes| attributes.retain(|a| a.name() != "n_targets"));
        assert!(text.contains("n_targets"), "{text}");
        assert!(matches!(
            Trees::from_onnx(b"not a model"),
            Err(TreesError::Decode(_))
        ));
    }
}
