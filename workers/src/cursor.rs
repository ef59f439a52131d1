//! Opaque pagination cursors.
//!
//! A cursor names a position in one ranking: the index generation that produced it, the
//! position after the result it belongs to, and a fingerprint of the request (query, minimum
//! score, contract). A keyed checksum, seeded per engine, makes a forged or edited cursor an
//! error instead of a silent jump; a cursor from another generation is an error too, because
//! the ranking it points into no longer exists.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use xxhash_rust::xxh3::xxh3_64_with_seed;

const VERSION: u8 = 1;
const LENGTH: usize = 1 + 8 + 4 + 8 + 8;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error("`after` is not a cursor returned by __search: {cursor:?}")]
    Malformed { cursor: String },
    #[error("`after` belongs to another search (different query, minScore or contract)")]
    OtherSearch,
    #[error(
        "`after` comes from index generation {cursor_generation}, but the schema index is now at \
         generation {current_generation}; start the search again without `after`"
    )]
    Stale {
        cursor_generation: u64,
        current_generation: u64,
    },
}

/// Signs and checks cursors for one engine.
#[derive(Debug, Clone, Copy)]
pub struct CursorCodec {
    secret: u64,
}

impl CursorCodec {
    pub fn new(secret: u64) -> Self {
        CursorCodec { secret }
    }

    /// The cursor of the result at `position` (0-based): a search continues at `position + 1`.
    pub fn encode(&self, generation: u64, position: u32, request: u64) -> String {
        let mut bytes = [0u8; LENGTH];
        bytes[0] = VERSION;
        bytes[1..9].copy_from_slice(&generation.to_le_bytes());
        bytes[9..13].copy_from_slice(&(position + 1).to_le_bytes());
        bytes[13..21].copy_from_slice(&request.to_le_bytes());
        let mac = xxh3_64_with_seed(&bytes[..21], self.secret);
        bytes[21..].copy_from_slice(&mac.to_le_bytes());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a search resumes at.
    pub fn decode(
        &self,
        cursor: &str,
        current_generation: u64,
        request: u64,
    ) -> Result<usize, CursorError> {
        let malformed = || CursorError::Malformed {
            cursor: cursor.chars().take(64).collect(),
        };
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| malformed())?;
        if bytes.len() != LENGTH || bytes[0] != VERSION {
            return Err(malformed());
        }
        let u64_at = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        if u64_at(21) != xxh3_64_with_seed(&bytes[..21], self.secret) {
            return Err(malformed());
        }
        let generation = u64_at(1);
        if generation != current_generation {
            return Err(CursorError::Stale {
                cursor_generation: generation,
                current_generation,
            });
        }
        if u64_at(13) != request {
            return Err(CursorError::OtherSearch);
        }
        let mut position = [0u8; 4];
        position.copy_from_slice(&bytes[9..13]);
        Ok(u32::from_le_bytes(position) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_tampering() {
        let codec = CursorCodec::new(42);
        let cursor = codec.encode(3, 9, 77);
        assert_eq!(codec.decode(&cursor, 3, 77), Ok(10));
        assert!(matches!(
            codec.decode(&cursor, 4, 77),
            Err(CursorError::Stale {
                cursor_generation: 3,
                current_generation: 4
            })
        ));
        assert_eq!(codec.decode(&cursor, 3, 78), Err(CursorError::OtherSearch));
        assert!(matches!(
            CursorCodec::new(43).decode(&cursor, 3, 77),
            Err(CursorError::Malformed { .. })
        ));
        let mut forged = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        forged[9] = 200;
        let forged = URL_SAFE_NO_PAD.encode(forged);
        assert!(matches!(
            codec.decode(&forged, 3, 77),
            Err(CursorError::Malformed { .. })
        ));
        assert!(matches!(
            codec.decode("not a cursor!", 3, 77),
            Err(CursorError::Malformed { .. })
        ));
    }
}
