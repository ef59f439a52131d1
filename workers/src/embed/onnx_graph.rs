//! Model graph rewrites applied before ONNX Runtime loads a model, to cut what a session holds
//! and what embedding a question costs.
//!
//! Weight-only int8 models (the default all-MiniLM-L6-v2 among them) store each weight as int8
//! rows and a float scale, made float by `Cast` and `Mul` nodes. ONNX Runtime folds those
//! constants at load, so a session holds every weight as float and every text reads them all as
//! float: 4 bytes a weight where the file has one. Two rewrites keep them int8:
//!
//! - [`Rewrites::gather`], for every session: a token-embedding table's `Gather` moves in front
//!   of the `Cast` and `Mul`, so the rows a text needs are gathered as int8 and only they are
//!   made float (the table is 30,522 x 384 floats, 45 MB, of which a question reads a dozen
//!   rows). Each value is the same float product as before: the vectors are the same to the bit.
//! - [`Rewrites::int8_matmul`], for the sessions that embed questions: a `MatMul` by such a
//!   weight, scaled per column, becomes ONNX Runtime's `DynamicQuantizeMatMul` over the int8
//!   weight as it is: the activations are quantized per call and multiplied in integers. A
//!   question embeds in half the time (the float weights no longer stream through the cache) and
//!   its vector moves a little (cosine ~0.99 to the float graph's). Not for documents: the
//!   activations are quantized over the whole batch, so a text's vector would depend on the
//!   texts embedded with it, and a document's vector must be the same whoever embeds it (the
//!   cache, the fleet's Redis store, a replica that embeds one text again). A question is
//!   embedded alone ([`crate::embed::Embedder::embed_queries`]).
//!
//! Before both, a [`Tuning`] (the model's fitted low-rank update) replaces the int8 weights and
//! scales it names with its merged ones.
//!
//! Flow: model bytes -> [`proto::ModelProto`] (prost) -> tuned, rewritten graph -> bytes, which
//! the embedder hands to ONNX Runtime. A model the rewrites do not fully understand (subgraphs,
//! external data, a newer IR than the vendored proto, names they would clash with) is left alone
//! and loaded from its file as it is; a tuning it cannot be given is an error.

#[allow(clippy::all, clippy::pedantic, rustdoc::all)]
#[rustfmt::skip]
pub mod proto;

use std::collections::{HashMap, HashSet};

use prost::Message;

use proto::attribute_proto::AttributeType;
use proto::{tensor_proto, AttributeProto, GraphProto, NodeProto, TensorProto};

use crate::embed::tuning::{Tuning, TuningError};

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("not an ONNX model: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("its tuning: {0}")]
    Tuning(#[from] TuningError),
}

/// One `Gather` to rewrite.
struct Match {
    gather: usize,
    cast: usize,
    mul: usize,
    table: String,
    scale: String,
    per_row: bool,
}

/// Which rewrites [`rewrite`] applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rewrites {
    pub gather: bool,
    pub int8_matmul: bool,
}

impl Rewrites {
    /// For sessions that embed documents: the same vectors as the file.
    pub const DOCUMENTS: Rewrites = Rewrites {
        gather: true,
        int8_matmul: false,
    };
    /// For sessions that embed questions, one at a time.
    pub const QUESTIONS: Rewrites = Rewrites {
        gather: true,
        int8_matmul: true,
    };
    #[cfg(test)]
    pub const NONE: Rewrites = Rewrites {
        gather: false,
        int8_matmul: false,
    };
}

/// The ONNX Runtime operator set `DynamicQuantizeMatMul` belongs to.
const MICROSOFT: &str = "com.microsoft";

/// A model rewritten: its bytes and the rewrites that matched.
#[derive(Debug, PartialEq)]
pub struct Rewritten {
    pub bytes: Vec<u8>,
    pub applied: Rewrites,
    /// Whether a tuning was added.
    pub tuned: bool,
}

/// Applies `tuning` and `rewrites` to the model. Returns the new model, or `None` when nothing
/// matched or the model is one the rewrites leave alone (see the module doc).
pub fn rewrite(
    model: &[u8],
    rewrites: Rewrites,
    tuning: Option<&Tuning>,
) -> Result<Option<Rewritten>, GraphError> {
    let unreadable = || match tuning {
        Some(_) => Err(GraphError::Tuning(TuningError::Unreadable)),
        None => Ok(None),
    };
    let mut model = proto::ModelProto::decode(model)?;
    // Fields of a newer format would be lost in the round trip.
    if model.ir_version() > proto::Version::IrVersion as i64 {
        return unreadable();
    }
    let Some(graph) = model.graph.as_mut() else {
        return unreadable();
    };
    let external = tensor_proto::DataLocation::External as i32;
    let subgraph = [AttributeType::Graph, AttributeType::Graphs];
    if graph
        .initializer
        .iter()
        .any(|t| t.data_location == Some(external))
        || graph.node.iter().flat_map(|n| &n.attribute).any(|a| {
            subgraph.contains(&a.r#type())
                || a.t
                    .as_ref()
                    .is_some_and(|t| t.data_location == Some(external))
        })
    {
        return unreadable();
    }
    if let Some(tuning) = tuning {
        add_tuning(graph, tuning)?;
    }
    let gathered = rewrites.gather && gather_before_dequantizing(graph);
    let multiplied = rewrites.int8_matmul && multiply_in_int8(graph);
    if multiplied && !model.opset_import.iter().any(|o| o.domain() == MICROSOFT) {
        model.opset_import.push(proto::OperatorSetIdProto {
            domain: Some(MICROSOFT.into()),
            version: Some(1),
        });
    }
    Ok(
        (tuning.is_some() || gathered || multiplied).then(|| Rewritten {
            bytes: model.encode_to_vec(),
            applied: Rewrites {
                gather: gathered,
                int8_matmul: multiplied,
            },
            tuned: tuning.is_some(),
        }),
    )
}

/// Replaces each int8 weight `tuning` updates, and its per-column scale, with the merged ones.
fn add_tuning(graph: &mut GraphProto, tuning: &Tuning) -> Result<(), TuningError> {
    // Each weight's scale, by the weight's name, where a `Mul(Cast(weight), scale)` reads them.
    let scales: HashMap<String, String> = {
        let initializers: HashMap<&str, &TensorProto> =
            graph.initializer.iter().map(|t| (t.name(), t)).collect();
        let uses = Uses::of(graph);
        (0..graph.node.len())
            .filter_map(|mul| dequantized(graph, &uses, &initializers, mul))
            .map(|(_, weight, scale)| (weight.name().to_string(), scale.name().to_string()))
            .collect()
    };
    let mut seen_scales = HashSet::new();
    for (name, [rows, columns]) in tuning.weights() {
        let no_weight = || TuningError::NoWeight {
            name: name.to_string(),
            rows,
            columns,
        };
        let scale_name = scales.get(name).ok_or_else(no_weight)?;
        if !seen_scales.insert(scale_name.clone()) {
            return Err(no_weight());
        }
        let find = |wanted: &str| graph.initializer.iter().position(|t| t.name() == wanted);
        let (w, s) = find(name).zip(find(scale_name)).ok_or_else(no_weight)?;
        let (weight, scale) = (&graph.initializer[w], &graph.initializer[s]);
        let shape_fits = weight.data_type() == tensor_proto::DataType::Int8 as i32
            && weight.dims == [rows as i64, columns as i64]
            && matches!(scale.dims.as_slice(), [1, c] | [c] if *c == columns as i64);
        let values: Option<Vec<i8>> = match &weight.raw_data {
            Some(raw) => Some(raw.iter().map(|&b| b as i8).collect()),
            None => weight
                .int32_data
                .iter()
                .map(|&v| i8::try_from(v).ok())
                .collect(),
        };
        let factors: Vec<f32> = match &scale.raw_data {
            Some(raw) => raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            None => scale.float_data.clone(),
        };
        let (values, factors) = values
            .filter(|_| shape_fits)
            .and_then(|values| tuning.merged(name, &values, &factors))
            .ok_or_else(no_weight)?;
        let weight = &mut graph.initializer[w];
        weight.raw_data = Some(values.iter().map(|&v| v as u8).collect());
        weight.int32_data.clear();
        let scale = &mut graph.initializer[s];
        scale.raw_data = Some(factors.iter().flat_map(|f| f.to_le_bytes()).collect());
        scale.float_data.clear();
    }
    Ok(())
}

/// Graph inputs and outputs by name: which node makes each value, and how many read it.
struct Uses<'g> {
    producer: HashMap<&'g str, usize>,
    consumers: HashMap<&'g str, usize>,
}

impl<'g> Uses<'g> {
    fn of(graph: &'g GraphProto) -> Self {
        let producer = graph
            .node
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i)))
            .collect();
        let mut consumers: HashMap<&str, usize> = HashMap::new();
        for name in graph.node.iter().flat_map(|n| n.input.iter()) {
            *consumers.entry(name.as_str()).or_default() += 1;
        }
        for output in &graph.output {
            *consumers.entry(output.name()).or_default() += 1;
        }
        Uses {
            producer,
            consumers,
        }
    }

    fn read_once(&self, value: &str) -> bool {
        self.consumers.get(value) == Some(&1)
    }
}

/// Every name a node, value or initializer of `graph` has.
fn taken_names(graph: &GraphProto) -> HashSet<&str> {
    graph
        .node
        .iter()
        .flat_map(|n| n.output.iter().map(String::as_str).chain(n.name.as_deref()))
        .chain(graph.initializer.iter().map(|t| t.name()))
        .chain(graph.input.iter().map(|v| v.name()))
        .collect()
}

/// `Mul(Cast(int8 or uint8 initializer of two dimensions), float initializer)`, in either
/// order, made by node `mul`: the `Cast` node, the quantized initializer and the scale's.
fn dequantized<'g>(
    graph: &'g GraphProto,
    uses: &Uses<'_>,
    initializers: &HashMap<&str, &'g TensorProto>,
    mul: usize,
) -> Option<(usize, &'g TensorProto, &'g TensorProto)> {
    let node = &graph.node[mul];
    let [a, b] = node.input.as_slice() else {
        return None;
    };
    if !is_op(node, "Mul") {
        return None;
    }
    [(a, b), (b, a)].into_iter().find_map(|(cast_out, scale)| {
        let c = *uses.producer.get(cast_out.as_str())?;
        let cast = &graph.node[c];
        let quantized = *initializers.get(cast.input.first()?.as_str())?;
        let scale = *initializers.get(scale.as_str())?;
        let int8 = [tensor_proto::DataType::Int8, tensor_proto::DataType::Uint8]
            .map(|t| t as i32)
            .contains(&quantized.data_type());
        (is_op(cast, "Cast")
            && int8
            && quantized.dims.len() == 2
            && scale.data_type() == tensor_proto::DataType::Float as i32
            && uses.read_once(cast_out))
        .then_some((c, quantized, scale))
    })
}

/// Rewrites every `MatMul(x, Mul(Cast(int8 weight [k, n]), scale))` whose scale is one per
/// column (`[1, n]`, `[n]`) or one for all into `DynamicQuantizeMatMul(x, weight, scale)`,
/// dropping the `Cast` and `Mul` when nothing else reads them. True when one was rewritten.
fn multiply_in_int8(graph: &mut GraphProto) -> bool {
    /// One `MatMul` to rewrite.
    struct Multiplication {
        matmul: usize,
        /// The `Mul` and `Cast` that made the weight float, when nothing else reads them.
        dequantizing: Option<[usize; 2]>,
        weight: String,
        scale: String,
        /// The scale's columns, when it is `[1, n]` and is given again as `[n]`.
        reshaped: Option<i64>,
    }
    let mut matches = Vec::new();
    {
        let initializers: HashMap<&str, &TensorProto> =
            graph.initializer.iter().map(|t| (t.name(), t)).collect();
        let uses = Uses::of(graph);
        let taken = taken_names(graph);
        for (i, matmul) in graph.node.iter().enumerate() {
            let [_, weight] = matmul.input.as_slice() else {
                continue;
            };
            if !is_op(matmul, "MatMul") {
                continue;
            }
            let Some(&mul) = uses.producer.get(weight.as_str()) else {
                continue;
            };
            let Some((cast, quantized, scale)) = dequantized(graph, &uses, &initializers, mul)
            else {
                continue;
            };
            let columns = quantized.dims[1];
            let reshaped = match scale.dims.as_slice() {
                [] | [1] => None,
                [c] if *c == columns => None,
                [1, c] if *c == columns => Some(columns),
                _ => continue,
            };
            if reshaped.is_some() && taken.contains(new_name(scale.name(), "columns").as_str()) {
                continue;
            }
            matches.push(Multiplication {
                matmul: i,
                dequantizing: uses.read_once(weight).then_some([mul, cast]),
                weight: quantized.name().to_string(),
                scale: scale.name().to_string(),
                reshaped,
            });
        }
    }
    if matches.is_empty() {
        return false;
    }
    let mut removed = vec![false; graph.node.len()];
    let mut dropped_values = Vec::new();
    // In the order first needed, so the same model gives the same graph.
    let mut added: Vec<TensorProto> = Vec::new();
    for Multiplication {
        matmul,
        dequantizing,
        weight,
        scale,
        reshaped,
    } in matches
    {
        let scale = match reshaped {
            Some(columns) => {
                let name = new_name(&scale, "columns");
                if !added.iter().any(|t| t.name() == name) {
                    let Some(tensor) = graph.initializer.iter().find(|t| t.name() == scale) else {
                        continue;
                    };
                    let mut tensor = tensor.clone();
                    tensor.name = Some(name.clone());
                    tensor.dims = vec![columns];
                    added.push(tensor);
                }
                name
            }
            None => scale,
        };
        for node in dequantizing.into_iter().flatten() {
            removed[node] = true;
            dropped_values.push(graph.node[node].output[0].clone());
        }
        let matmul = &mut graph.node[matmul];
        matmul.op_type = Some("DynamicQuantizeMatMul".into());
        matmul.domain = Some(MICROSOFT.into());
        matmul.input = vec![matmul.input[0].clone(), weight, scale];
    }
    graph.initializer.extend(added);
    let old = std::mem::take(&mut graph.node);
    graph.node = old
        .into_iter()
        .zip(removed)
        .filter_map(|(node, removed)| (!removed).then_some(node))
        .collect();
    // What only the dropped nodes read is dropped too; ONNX Runtime warns of unread initializers.
    let read: HashSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| n.input.iter().map(String::as_str))
        .chain(graph.output.iter().map(|o| o.name()))
        .collect();
    graph.initializer.retain(|t| read.contains(t.name()));
    graph
        .value_info
        .retain(|v| !dropped_values.iter().any(|d| d == v.name()));
    true
}

/// Rewrites every `Gather(Mul(Cast(int8 table), per-row or single scale), ids)` on axis 0 into
/// `Mul(Cast(Gather(table, ids)), Gather(scale, ids))`. True when one was rewritten.
fn gather_before_dequantizing(graph: &mut GraphProto) -> bool {
    let mut matches = Vec::new();
    {
        let initializers: HashMap<&str, &TensorProto> =
            graph.initializer.iter().map(|t| (t.name(), t)).collect();
        let uses = Uses::of(graph);
        for (g, gather) in graph.node.iter().enumerate() {
            if !is_op(gather, "Gather") || int_attribute(gather, "axis").unwrap_or(0) != 0 {
                continue;
            }
            let ([table, _ids], [_output]) = (gather.input.as_slice(), gather.output.as_slice())
            else {
                continue;
            };
            let Some(&mul) = uses.producer.get(table.as_str()) else {
                continue;
            };
            if !uses.read_once(table) {
                continue;
            }
            let Some((cast, quantized, scale)) = dequantized(graph, &uses, &initializers, mul)
            else {
                continue;
            };
            let per_row = match scale.dims.as_slice() {
                [] | [1] => false,
                [r, 1] if *r == quantized.dims[0] => true,
                _ => continue,
            };
            matches.push(Match {
                gather: g,
                cast,
                mul,
                table: quantized.name().to_string(),
                scale: scale.name().to_string(),
                per_row,
            });
        }
        if matches.is_empty() {
            return false;
        }
        let taken = taken_names(graph);
        let clashes = matches.iter().any(|m| {
            let output = &graph.node[m.gather].output[0];
            ["rows", "float_rows", "row_scales"]
                .iter()
                .any(|what| taken.contains(new_name(output, what).as_str()))
        });
        if clashes {
            return false;
        }
    }

    let mut removed = vec![false; graph.node.len()];
    let mut replaced: HashMap<usize, Vec<NodeProto>> = HashMap::new();
    let mut dropped_values = Vec::new();
    for Match {
        gather: g,
        cast,
        mul,
        table,
        scale,
        per_row,
    } in matches
    {
        let gather = &graph.node[g];
        let node_name = gather
            .name
            .clone()
            .unwrap_or_else(|| gather.output[0].clone());
        let (ids, output) = (gather.input[1].clone(), gather.output[0].clone());
        let rows = new_name(&output, "rows");
        let floats = new_name(&output, "float_rows");
        let mut nodes = vec![
            node(
                "Gather",
                &rows,
                [table, ids.clone()],
                &rows,
                gather.attribute.clone(),
            ),
            node(
                "Cast",
                &floats,
                [rows.clone()],
                &floats,
                graph.node[cast].attribute.clone(),
            ),
        ];
        let scale = if per_row {
            let scales = new_name(&output, "row_scales");
            nodes.push(node("Gather", &scales, [scale, ids], &scales, vec![]));
            scales
        } else {
            scale
        };
        nodes.push(node("Mul", &node_name, [floats, scale], &output, vec![]));
        replaced.insert(g, nodes);
        removed[cast] = true;
        removed[mul] = true;
        dropped_values.push(graph.node[cast].output[0].clone());
        dropped_values.push(graph.node[mul].output[0].clone());
    }
    let old = std::mem::take(&mut graph.node);
    for (i, n) in old.into_iter().enumerate() {
        match replaced.remove(&i) {
            Some(nodes) => graph.node.extend(nodes),
            None if !removed[i] => graph.node.push(n),
            None => {}
        }
    }
    // Their recorded shapes would describe tensors that no longer exist.
    graph
        .value_info
        .retain(|v| !dropped_values.iter().any(|d| d == v.name()));
    true
}

/// A name for what a rewrite adds beside `value`.
fn new_name(value: &str, what: &str) -> String {
    format!("{value}/wayfinder/{what}")
}

fn is_op(node: &NodeProto, op: &str) -> bool {
    node.op_type() == op && matches!(node.domain(), "" | "ai.onnx")
}

fn int_attribute(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute
        .iter()
        .find(|a| a.name() == name)
        .map(|a| a.i())
}

fn node<const N: usize>(
    op: &str,
    name: &str,
    inputs: [String; N],
    output: &str,
    attribute: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        op_type: Some(op.to_string()),
        name: Some(name.to_string()),
        input: inputs.into(),
        output: vec![output.to_string()],
        attribute,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{GraphProto, ModelProto};

    fn tensor(name: &str, dims: &[i64], data_type: tensor_proto::DataType) -> TensorProto {
        TensorProto {
            name: Some(name.into()),
            dims: dims.to_vec(),
            data_type: Some(data_type as i32),
            ..Default::default()
        }
    }

    fn model(scale_dims: &[i64], table_uses: usize) -> Vec<u8> {
        let cast_to = AttributeProto {
            name: Some("to".into()),
            r#type: Some(AttributeType::Int as i32),
            i: Some(tensor_proto::DataType::Float as i64),
            ..Default::default()
        };
        let mut nodes = vec![
            node("Cast", "c", ["q".into()], "f", vec![cast_to]),
            node("Mul", "m", ["f".into(), "s".into()], "w", vec![]),
        ];
        for i in 0..table_uses {
            nodes.push(node(
                "Gather",
                "g",
                ["w".into(), "ids".into()],
                &format!("e{i}"),
                vec![],
            ));
        }
        ModelProto {
            graph: Some(GraphProto {
                node: nodes,
                initializer: vec![
                    tensor("q", &[10, 4], tensor_proto::DataType::Int8),
                    tensor("s", scale_dims, tensor_proto::DataType::Float),
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// `y = x · (Cast(q) * s)`, with the dequantized weight also read by `readers - 1` more nodes.
    fn matmul(scale_dims: &[i64], readers: usize) -> Vec<u8> {
        let mut bytes = model(scale_dims, 0);
        let mut model = ModelProto::decode(&bytes[..]).unwrap();
        let graph = model.graph.as_mut().unwrap();
        graph
            .node
            .push(node("MatMul", "mm", ["x".into(), "w".into()], "y", vec![]));
        for i in 1..readers {
            graph
                .node
                .push(node("Relu", "r", ["w".into()], &format!("r{i}"), vec![]));
        }
        bytes.clear();
        model.encode_to_vec()
    }

    fn ops(bytes: &[u8]) -> Vec<(String, Vec<String>)> {
        let model = ModelProto::decode(bytes).unwrap();
        model
            .graph
            .unwrap()
            .node
            .into_iter()
            .map(|n| (n.op_type().to_string(), n.input))
            .collect()
    }

    #[test]
    fn gathers_int8_rows_and_their_scales() {
        let rewritten = rewrite(&model(&[10, 1], 1), Rewrites::QUESTIONS, None)
            .unwrap()
            .unwrap()
            .bytes;
        let ops = ops(&rewritten);
        let names: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, ["Gather", "Cast", "Gather", "Mul"]);
        assert_eq!(ops[0].1, ["q", "ids"]);
        assert_eq!(ops[2].1, ["s", "ids"]);
    }

    #[test]
    fn a_single_scale_is_not_gathered() {
        let rewritten = rewrite(&model(&[], 1), Rewrites::QUESTIONS, None)
            .unwrap()
            .unwrap()
            .bytes;
        let ops = ops(&rewritten);
        assert_eq!(
            ops.iter().map(|(op, _)| op.as_str()).collect::<Vec<_>>(),
            ["Gather", "Cast", "Mul"]
        );
        assert_eq!(ops[2].1[1], "s");
    }

    #[test]
    fn a_table_used_twice_or_scaled_by_column_is_left_alone() {
        assert!(rewrite(&model(&[10, 1], 2), Rewrites::QUESTIONS, None)
            .unwrap()
            .is_none());
        assert!(rewrite(&model(&[1, 4], 1), Rewrites::QUESTIONS, None)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_matmul_by_a_weight_scaled_per_column_multiplies_in_int8() {
        let rewritten = rewrite(&matmul(&[1, 4], 1), Rewrites::QUESTIONS, None)
            .unwrap()
            .unwrap()
            .bytes;
        assert_eq!(
            ops(&rewritten),
            [(
                "DynamicQuantizeMatMul".to_string(),
                vec!["x".into(), "q".into(), "s/wayfinder/columns".into()]
            )]
        );
        let model = ModelProto::decode(&rewritten[..]).unwrap();
        assert!(model
            .opset_import
            .iter()
            .any(|o| o.domain() == MICROSOFT && o.version() == 1));
        let graph = model.graph.unwrap();
        let initializers: Vec<(&str, &[i64])> = graph
            .initializer
            .iter()
            .map(|t| (t.name(), t.dims.as_slice()))
            .collect();
        assert_eq!(
            initializers,
            [("q", &[10, 4][..]), ("s/wayfinder/columns", &[4][..])]
        );
        // A documents' session does not multiply in int8.
        assert!(rewrite(&matmul(&[1, 4], 1), Rewrites::DOCUMENTS, None)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_dequantized_weight_read_elsewhere_stays_and_a_row_scale_is_left_alone() {
        let rewritten = rewrite(&matmul(&[], 2), Rewrites::QUESTIONS, None)
            .unwrap()
            .unwrap()
            .bytes;
        let names: Vec<String> = ops(&rewritten).into_iter().map(|(op, _)| op).collect();
        assert_eq!(names, ["Cast", "Mul", "DynamicQuantizeMatMul", "Relu"]);
        assert!(rewrite(&matmul(&[10, 1], 1), Rewrites::QUESTIONS, None)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_tuning_replaces_the_weight_and_scale_it_names() {
        let mut model = ModelProto::decode(&matmul(&[1, 4], 1)[..]).unwrap();
        let graph = model.graph.as_mut().unwrap();
        graph.initializer[0].raw_data = Some((0..40u8).collect());
        graph.initializer[1].raw_data =
            Some([0.5f32; 4].iter().flat_map(|f| f.to_le_bytes()).collect());
        let bytes = model.encode_to_vec();
        let pair = |name: &str| {
            crate::embed::tuning::tests::file(
                &[
                    (&format!("{name}.a"), vec![10, 1], vec![1.0; 10]),
                    (
                        &format!("{name}.b"),
                        vec![1, 4],
                        vec![0.25, 0.0, -0.25, 1.0],
                    ),
                ],
                Some("00"),
            )
        };
        let tuning = Tuning::from_bytes(&pair("q")).unwrap();
        let rewritten = rewrite(&bytes, Rewrites::DOCUMENTS, Some(&tuning))
            .unwrap()
            .unwrap();
        let tuned = ModelProto::decode(&rewritten.bytes[..])
            .unwrap()
            .graph
            .unwrap();
        let values: Vec<i8> = (0..40).collect();
        let (q, s) = tuning.merged("q", &values, &[0.5; 4]).unwrap();
        let as_bytes: Vec<u8> = q.iter().map(|&v| v as u8).collect();
        assert_eq!(
            tuned.initializer[0].raw_data.as_deref(),
            Some(&as_bytes[..])
        );
        let scales: Vec<u8> = s.iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(tuned.initializer[1].raw_data.as_deref(), Some(&scales[..]));
        assert_ne!(q, values);
        // The graph is left as it was: only the values change.
        assert_eq!(ops(&rewritten.bytes), ops(&bytes));

        let elsewhere = Tuning::from_bytes(&pair("other")).unwrap();
        assert!(matches!(
            rewrite(&bytes, Rewrites::DOCUMENTS, Some(&elsewhere)),
            Err(GraphError::Tuning(TuningError::NoWeight { .. }))
        ));
    }

    #[test]
    fn bytes_that_are_not_a_model_are_an_error() {
        assert!(rewrite(b"\xff\xff\xff", Rewrites::QUESTIONS, None).is_err());
    }
}
