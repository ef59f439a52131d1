//! Who is asking and what they may do: the tenant a request names and its `@tag` contract
//! ([`tenant`]), the operations and introspection that contract allows ([`gate`]) and what
//! that lets one request do ([`admission`]), and the rate of semantic fields it may use
//! ([`quota`]). Knows requests as operation text, headers and the router's answers to scrub;
//! never answers one.

pub(crate) mod admission;
pub(crate) mod gate;
pub(crate) mod quota;
pub(crate) mod tenant;
