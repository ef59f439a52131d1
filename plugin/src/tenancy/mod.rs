//! Who is asking and what they may do: the tenant a request names and its `@tag` contract
//! ([`tenant`]), the operations and introspection that contract allows ([`gate`]), and the
//! rate of semantic fields it may use ([`quota`]). Knows requests only as operation text and
//! headers; never answers one.

pub mod gate;
pub mod quota;
pub mod tenant;
