//! What a search may return: everything, or the members one contract lets a tenant see.
//! Cheap to clone and `'static`, because the lexical and vector searches take it as a
//! predicate inside their own loops, so a page is always filled from visible members.

use std::sync::Arc;

use wayfinder_supergraph::{Catalog, Contract, Example, MemberId, NoExample};

#[derive(Debug, Clone, Default)]
pub struct Visibility(Option<Arc<Contract>>);

impl Visibility {
    /// Every member of the catalog.
    pub fn all() -> Self {
        Visibility(None)
    }

    /// A contract's, or everything's without one.
    pub fn of(contract: Option<Arc<Contract>>) -> Self {
        Visibility(contract)
    }

    pub fn allows(&self, member: MemberId) -> bool {
        self.0.as_ref().is_none_or(|c| c.is_visible(member))
    }

    pub fn as_contract(&self) -> Option<&Contract> {
        self.0.as_deref()
    }

    /// `member`'s paths to the roots through visible members only.
    pub fn paths_to_root<'a>(
        &'a self,
        catalog: &'a Catalog,
        member: MemberId,
    ) -> &'a [Box<[MemberId]>] {
        match self.as_contract() {
            Some(contract) => contract.paths_to_root(member),
            None => catalog.paths_to_root(member),
        }
    }

    /// An operation that uses `member` and only what this view sees.
    pub fn example(&self, catalog: &Catalog, member: MemberId) -> Result<Example, NoExample> {
        match self.as_contract() {
            Some(contract) => contract.example(catalog, member),
            None => catalog.example(member),
        }
    }
}
