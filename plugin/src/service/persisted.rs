//! Operation texts remembered by their persisted-query hash, so a client that names one by its
//! hash alone is answered: those the plugin answered, and apart from them those restricted
//! tenants sent (only a restricted tenant's request looks there). Bounded in count and in the
//! length of a text.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;

/// Texts remembered in each store.
const KEPT: usize = 1024;

/// Longer operation texts are not remembered by their hash (memory stays bounded): a client
/// naming one by its hash alone is asked for the text again.
const MAX_CHARS: usize = 64 * 1024;

type Store = Mutex<LruCache<String, Arc<str>>>;

pub(super) struct Persisted {
    all: Store,
    /// Texts restricted tenants sent with a persisted-query hash.
    gated: Store,
}

impl Persisted {
    pub(super) fn new() -> Self {
        let store = || {
            Mutex::new(LruCache::new(
                NonZeroUsize::new(KEPT).unwrap_or(NonZeroUsize::MIN),
            ))
        };
        Persisted {
            all: store(),
            gated: store(),
        }
    }

    /// No text the plugin answered is remembered.
    pub(super) fn is_empty(&self) -> bool {
        self.all.lock().map_or(true, |p| p.is_empty())
    }

    /// The text under `hash`: one the plugin answered, or (for a restricted tenant, `gated`)
    /// one a restricted tenant sent.
    pub(super) fn lookup(&self, hash: &str, gated: bool) -> Option<Arc<str>> {
        let lookup = |store: &Store| store.lock().ok().and_then(|mut p| p.get(hash).cloned());
        lookup(&self.all).or_else(|| gated.then(|| lookup(&self.gated)).flatten())
    }

    /// Remembers a text the plugin answers.
    pub(super) fn remember(&self, hash: String, query: &Arc<str>) {
        Self::put(&self.all, hash, query);
    }

    /// Remembers a text a restricted tenant's contract admitted.
    pub(super) fn remember_gated(&self, hash: String, query: &Arc<str>) {
        Self::put(&self.gated, hash, query);
    }

    fn put(store: &Store, hash: String, query: &Arc<str>) {
        if query.len() <= MAX_CHARS {
            if let Ok(mut kept) = store.lock() {
                kept.put(hash, Arc::clone(query));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restricted_tenants_text_is_found_only_by_restricted_tenants() {
        let persisted = Persisted::new();
        let query: Arc<str> = Arc::from("{ a }");
        persisted.remember_gated("h".into(), &query);
        assert!(persisted.is_empty());
        assert_eq!(persisted.lookup("h", false), None);
        assert_eq!(persisted.lookup("h", true), Some(Arc::clone(&query)));
        persisted.remember("h2".into(), &query);
        assert!(!persisted.is_empty());
        assert_eq!(persisted.lookup("h2", false), Some(query));
    }

    #[test]
    fn a_text_too_long_to_keep_is_not_remembered() {
        let persisted = Persisted::new();
        persisted.remember("long".into(), &Arc::from("x".repeat(MAX_CHARS + 1)));
        persisted.remember_gated("long".into(), &Arc::from("x".repeat(MAX_CHARS + 1)));
        assert_eq!(persisted.lookup("long", true), None);
    }
}
