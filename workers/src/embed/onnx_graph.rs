//! Model graph rewrites applied before ONNX Runtime loads a model, to cut what a session holds.
//!
//! Weight-only int8 models (the default all-MiniLM-L6-v2 among them) store each weight as int8
//! rows and a float scale, made float by `Cast` and `Mul` nodes. ONNX Runtime folds those
//! constants at load, so a session holds every weight as float, the token-embedding table
//! included: 30,522 x 384 floats (45 MB) of which a question reads a dozen rows.
//! [`gather_before_dequantizing`] moves such a table's `Gather` in front of the `Cast` and
//! `Mul`: the rows a text needs are gathered as int8 and only they are made float. Each value
//! is the same float product as before; for the default model the vectors are the same to the
//! bit (a test compares them). Another model's runtime fusions may differ once rewritten.
//!
//! Flow: model bytes -> [`proto::ModelProto`] (prost) -> rewritten graph -> bytes, which the
//! embedder hands to ONNX Runtime. A model the rewrite does not fully understand (subgraphs,
//! external data, a newer IR than the vendored proto, names it would clash with) is left alone
//! and loaded from its file as it is.

#[allow(clippy::all, clippy::pedantic, rustdoc::all)]
#[rustfmt::skip]
pub mod proto;

use std::collections::{HashMap, HashSet};

use prost::Message;

use proto::attribute_proto::AttributeType;
use proto::{tensor_proto, AttributeProto, NodeProto, TensorProto};

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("not an ONNX model: {0}")]
    Decode(#[from] prost::DecodeError),
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

/// Rewrites every `Gather(Mul(Cast(int8 table), per-row or single scale), ids)` on axis 0 into
/// `Mul(Cast(Gather(table, ids)), Gather(scale, ids))`. Returns the new model's bytes, or `None`
/// when no gather matched or the model is one the rewrite leaves alone (see the module doc).
pub fn gather_before_dequantizing(model: &[u8]) -> Result<Option<Vec<u8>>, GraphError> {
    let mut model = proto::ModelProto::decode(model)?;
    // Fields of a newer format would be lost in the round trip.
    if model.ir_version() > proto::Version::IrVersion as i64 {
        return Ok(None);
    }
    let Some(graph) = model.graph.as_mut() else {
        return Ok(None);
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
        return Ok(None);
    }

    let initializers: HashMap<&str, &TensorProto> =
        graph.initializer.iter().map(|t| (t.name(), t)).collect();
    let producer: HashMap<&str, usize> = graph
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

    let mut matches = Vec::new();
    for (g, gather) in graph.node.iter().enumerate() {
        if !is_op(gather, "Gather") || int_attribute(gather, "axis").unwrap_or(0) != 0 {
            continue;
        }
        let ([table, _ids], [_output]) = (gather.input.as_slice(), gather.output.as_slice()) else {
            continue;
        };
        let Some(&m) = producer.get(table.as_str()) else {
            continue;
        };
        let mul = &graph.node[m];
        if !is_op(mul, "Mul") || consumers.get(table.as_str()) != Some(&1) {
            continue;
        }
        let [a, b] = mul.input.as_slice() else {
            continue;
        };
        let found = [(a, b), (b, a)].into_iter().find_map(|(cast_out, scale)| {
            let c = *producer.get(cast_out.as_str())?;
            let cast = &graph.node[c];
            let quantized = initializers.get(cast.input.first()?.as_str())?;
            let scale = initializers.get(scale.as_str())?;
            let int8 = [tensor_proto::DataType::Int8, tensor_proto::DataType::Uint8]
                .map(|t| t as i32)
                .contains(&quantized.data_type());
            let rows = *quantized.dims.first()?;
            let per_row = match scale.dims.as_slice() {
                [] | [1] => false,
                [r, 1] if *r == rows => true,
                _ => return None,
            };
            (is_op(cast, "Cast")
                && int8
                && quantized.dims.len() == 2
                && consumers.get(cast_out.as_str()) == Some(&1))
            .then(|| (c, scale.name().to_string(), per_row))
        });
        if let Some((cast, scale, per_row)) = found {
            let table = graph.node[cast].input[0].clone();
            matches.push(Match {
                gather: g,
                cast,
                mul: m,
                table,
                scale,
                per_row,
            });
        }
    }
    if matches.is_empty() {
        return Ok(None);
    }
    let taken: HashSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| n.output.iter().map(String::as_str).chain(n.name.as_deref()))
        .chain(graph.initializer.iter().map(|t| t.name()))
        .chain(graph.input.iter().map(|v| v.name()))
        .collect();
    let new_name = |output: &str, what: &str| format!("{output}/wayfinder/{what}");
    let clashes = matches.iter().any(|m| {
        let output = &graph.node[m.gather].output[0];
        ["rows", "float_rows", "row_scales"]
            .iter()
            .any(|what| taken.contains(new_name(output, what).as_str()))
    });
    if clashes {
        return Ok(None);
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
    Ok(Some(model.encode_to_vec()))
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
        let rewritten = gather_before_dequantizing(&model(&[10, 1], 1))
            .unwrap()
            .unwrap();
        let ops = ops(&rewritten);
        let names: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, ["Gather", "Cast", "Gather", "Mul"]);
        assert_eq!(ops[0].1, ["q", "ids"]);
        assert_eq!(ops[2].1, ["s", "ids"]);
    }

    #[test]
    fn a_single_scale_is_not_gathered() {
        let rewritten = gather_before_dequantizing(&model(&[], 1)).unwrap().unwrap();
        let ops = ops(&rewritten);
        assert_eq!(
            ops.iter().map(|(op, _)| op.as_str()).collect::<Vec<_>>(),
            ["Gather", "Cast", "Mul"]
        );
        assert_eq!(ops[2].1[1], "s");
    }

    #[test]
    fn a_table_used_twice_or_scaled_by_column_is_left_alone() {
        assert!(gather_before_dequantizing(&model(&[10, 1], 2))
            .unwrap()
            .is_none());
        assert!(gather_before_dequantizing(&model(&[1, 4], 1))
            .unwrap()
            .is_none());
    }

    #[test]
    fn bytes_that_are_not_a_model_are_an_error() {
        assert!(gather_before_dequantizing(b"\xff\xff\xff").is_err());
    }
}
