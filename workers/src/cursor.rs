//! Opaque pagination cursors that any replica of a fleet accepts.
//!
//! A cursor names a position in one ranking: the state of the index that ranked (what it
//! holds, [`crate::index::generation::Generation::state`], not a process's counter, so replicas at the
//! same state rank alike), the position after the result it belongs to, and a fingerprint of
//! the request (query, minimum score, contract). An HMAC-SHA256 over those, keyed by the
//! configured `cursors.secret` (or by a key of this process), makes a forged or edited cursor,
//! or one signed by a replica with another secret, an error instead of a silent jump; a cursor
//! from another index state is an error too, because the ranking it points into is not the one
//! this replica would make.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const VERSION: u8 = 2;
const SIGNED: usize = 1 + 8 + 4 + 8;
/// The first 128 bits of the HMAC: forging one is as hard as guessing them.
const MAC: usize = 16;
const LENGTH: usize = SIGNED + MAC;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error(
        "`after` is not a cursor this gateway signed (edited, or signed by a replica with another \
         `cursors.secret`, or with none: then each replica signs with its own key): {cursor:?}"
    )]
    Malformed { cursor: String },
    #[error("`after` belongs to another search (different query, minScore or contract)")]
    OtherSearch,
    #[error(
        "`after` comes from another state of the schema index (another supergraph, or one not \
         indexed as far: {cursor_state:016x} here {current_state:016x}); start the search again \
         without `after`"
    )]
    Stale {
        cursor_state: u64,
        current_state: u64,
    },
}

/// The key cursors are signed with. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct CursorSecret(String);

impl CursorSecret {
    pub fn new(secret: impl Into<String>) -> Self {
        CursorSecret(secret.into())
    }
}

impl std::fmt::Debug for CursorSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSecret(..)")
    }
}

/// Signs and checks cursors.
#[derive(Clone)]
pub struct CursorCodec {
    mac: Hmac<Sha256>,
    /// Keys still accepted, not signed with: a rollout that changes the secret breaks no
    /// agent's pagination.
    previous: Vec<Hmac<Sha256>>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec(..)")
    }
}

impl CursorCodec {
    /// Signs with `secret`: every replica given the same one accepts the others' cursors.
    pub fn new(secret: &CursorSecret) -> Self {
        Self::with_key(secret.0.as_bytes())
    }

    /// Also accepts cursors signed with `previous` secrets.
    pub fn accepting(mut self, previous: &[CursorSecret]) -> Self {
        self.previous = previous
            .iter()
            .map(|secret| Self::with_key(secret.0.as_bytes()).mac)
            .collect();
        self
    }

    /// Signs with a random key of this process: only it accepts its cursors.
    pub fn of_this_process() -> Self {
        let key: [u8; 32] = rand::random();
        Self::with_key(&key)
    }

    fn with_key(key: &[u8]) -> Self {
        CursorCodec {
            // HMAC takes a key of any length.
            mac: Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!()),
            previous: Vec::new(),
        }
    }

    fn sign(&self, signed: &[u8]) -> [u8; MAC] {
        let mut mac = self.mac.clone();
        mac.update(signed);
        let tag = mac.finalize().into_bytes();
        std::array::from_fn(|i| tag[i])
    }

    /// The cursor of the result at `position` (0-based) in a ranking by an index at `state`:
    /// a search continues at `position + 1`.
    pub fn encode(&self, state: u64, position: u32, request: u64) -> String {
        let mut bytes = [0u8; LENGTH];
        bytes[0] = VERSION;
        bytes[1..9].copy_from_slice(&state.to_le_bytes());
        bytes[9..13].copy_from_slice(&(position + 1).to_le_bytes());
        bytes[13..21].copy_from_slice(&request.to_le_bytes());
        let tag = self.sign(&bytes[..SIGNED]);
        bytes[SIGNED..].copy_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a search resumes at.
    pub fn decode(
        &self,
        cursor: &str,
        current_state: u64,
        request: u64,
    ) -> Result<usize, CursorError> {
        let malformed = || CursorError::Malformed {
            cursor: cursor.chars().take(64).collect(),
        };
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| malformed())?;
        if bytes.len() != LENGTH || bytes[0] != VERSION {
            return Err(malformed());
        }
        let signed_by = |key: &Hmac<Sha256>| {
            let mut mac = key.clone();
            mac.update(&bytes[..SIGNED]);
            mac.verify_truncated_left(&bytes[SIGNED..]).is_ok()
        };
        if !std::iter::once(&self.mac)
            .chain(&self.previous)
            .any(signed_by)
        {
            return Err(malformed());
        }
        let u64_at = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        let state = u64_at(1);
        if state != current_state {
            return Err(CursorError::Stale {
                cursor_state: state,
                current_state,
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
    fn cursors_round_trip_across_replicas_and_refuse_tampering() {
        let codec = CursorCodec::new(&CursorSecret::new("fleet secret"));
        let cursor = codec.encode(3, 9, 77);
        // Another replica with the same secret.
        let replica = CursorCodec::new(&CursorSecret::new("fleet secret"));
        assert_eq!(replica.decode(&cursor, 3, 77), Ok(10));
        assert!(matches!(
            codec.decode(&cursor, 4, 77),
            Err(CursorError::Stale {
                cursor_state: 3,
                current_state: 4
            })
        ));
        assert_eq!(codec.decode(&cursor, 3, 78), Err(CursorError::OtherSearch));
        for other in [
            CursorCodec::new(&CursorSecret::new("another secret")),
            CursorCodec::of_this_process(),
        ] {
            assert!(matches!(
                other.decode(&cursor, 3, 77),
                Err(CursorError::Malformed { .. })
            ));
        }
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
        assert_eq!(
            format!("{:?}", CursorSecret::new("fleet secret")),
            "CursorSecret(..)"
        );
        // A rollout to a new secret that still accepts the old one.
        let rotated = CursorCodec::new(&CursorSecret::new("new secret"))
            .accepting(&[CursorSecret::new("fleet secret")]);
        assert_eq!(rotated.decode(&cursor, 3, 77), Ok(10));
        assert!(matches!(
            codec.decode(&rotated.encode(3, 9, 77), 3, 77),
            Err(CursorError::Malformed { .. })
        ));
    }
}
