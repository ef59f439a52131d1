//! Who is asking and what they may do: the tenant a request names and its `@tag` contract
//! ([`tenant`]), the operations and introspection that contract allows ([`gate`]) and what
//! that lets one request do ([`admission`]), and the rate of semantic fields it may use
//! ([`quota`]). Knows requests as operation text, headers and the router's answers to scrub;
//! never answers one.

pub mod admission;
pub mod gate;
pub mod quota;
pub mod tenant;
