//! Content hashes: a member's hash covers everything that describes it (so an edit anywhere in
//! it shows), a set's hash covers its members' coordinates and hashes (so a subgraph or catalog
//! whose hash is unchanged has nothing to re-index). Hashes name subgraphs and replacements by
//! name, never by id, so they compare across catalogs.

use xxhash_rust::xxh3::Xxh3;

use crate::member::{Member, MemberId};

pub(crate) struct ContentHasher(Xxh3);

impl ContentHasher {
    fn new() -> Self {
        Self(Xxh3::new())
    }

    /// Writes a field with a terminator, so adjacent fields cannot run into each other.
    fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update(&(bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    fn text(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            Some(text) => self.field(b"\x01").field(text.as_bytes()),
            None => self.field(b"\x00"),
        }
    }

    pub fn member(member: &Member, all: &[Member], subgraph_names: &[String]) -> u64 {
        let mut hasher = Self::new();
        hasher
            .field(member.coordinate.as_bytes())
            .field(member.kind.as_str().as_bytes())
            .text(member.description.as_deref())
            .field(member.signature.as_bytes());
        match &member.deprecation {
            Some(deprecation) => {
                let replacement = deprecation
                    .replacement
                    .map(|id| all[id.index()].coordinate.as_str());
                hasher
                    .field(b"deprecated")
                    .text(deprecation.reason.as_deref())
                    .text(replacement);
            }
            None => {
                hasher.field(b"current");
            }
        }
        let name = |id: crate::SubgraphId| subgraph_names[id.index()].as_bytes();
        for owner in &member.subgraphs {
            hasher.field(b"owner").field(name(*owner));
        }
        for key in &member.keys {
            hasher
                .field(b"key")
                .field(name(key.subgraph))
                .field(key.fields.as_bytes())
                .field(&[key.resolvable as u8]);
        }
        let facts = &member.federation;
        hasher.field(&[facts.shareable as u8]);
        for id in &facts.external_in {
            hasher.field(b"external").field(name(*id));
        }
        for id in &facts.interface_object_in {
            hasher.field(b"interfaceObject").field(name(*id));
        }
        for o in &facts.overrides {
            hasher
                .field(b"override")
                .field(name(o.by))
                .field(o.from.as_bytes());
        }
        for (id, fields) in &facts.requires {
            hasher
                .field(b"requires")
                .field(name(*id))
                .field(fields.as_bytes());
        }
        for (id, fields) in &facts.provides {
            hasher
                .field(b"provides")
                .field(name(*id))
                .field(fields.as_bytes());
        }
        for tag in &member.tags {
            hasher.field(b"tag").field(tag.as_bytes());
        }
        hasher.0.digest()
    }

    pub fn members(all: &[Member], ids: impl Iterator<Item = MemberId>) -> u64 {
        let mut hasher = Self::new();
        for id in ids {
            let member = &all[id.index()];
            hasher
                .field(member.coordinate.as_bytes())
                .field(&member.content_hash.to_le_bytes());
        }
        hasher.0.digest()
    }
}
