//! Vector arithmetic the model's outputs, the documents' views and the token vectors share:
//! unit length, sums of unit vectors, dot products.

/// The sum of `vectors`, made unit length: how several embedded texts make one vector (`None`
/// without vectors, or when their widths differ).
pub(crate) fn unit_sum<'v>(vectors: impl IntoIterator<Item = &'v [f32]>) -> Option<Vec<f32>> {
    let mut vectors = vectors.into_iter();
    let mut sum = vectors.next()?.to_vec();
    for vector in vectors {
        if vector.len() != sum.len() {
            return None;
        }
        sum.iter_mut().zip(vector).for_each(|(s, v)| *s += v);
    }
    normalize(&mut sum);
    Some(sum)
}

pub(crate) fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|v| *v /= norm);
    }
}

/// Dot product; the cosine of two unit vectors. Summed in eight lanes: a single running sum
/// must add in order, which keeps the compiler from using SIMD.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut lanes = [0f32; 8];
    for (x, y) in a8.zip(b8) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_sum_to_one_unit_vector_of_their_width() {
        let sum = unit_sum([&[3.0f32, 0.0][..], &[0.0, 4.0][..]]).unwrap();
        assert!(
            (sum[0] - 0.6).abs() < 1e-6 && (sum[1] - 0.8).abs() < 1e-6,
            "{sum:?}"
        );
        assert_eq!(unit_sum([&[1.0f32, 0.0][..], &[1.0][..]]), None);
        assert_eq!(unit_sum(std::iter::empty::<&[f32]>()), None);
    }
}
