//! One GraphQL request (or each entry of a batch): its text found (a persisted-query hash
//! looked up), admitted by the tenant's gate, then answered here ([`Instance::answer`]) or
//! handed back for the router to answer ([`Outcome::PassThrough`]).

use std::sync::Arc;

use apollo_router::Context;
use http::StatusCode;
use serde_json_bytes::Value;
use sha2::{Digest, Sha256};

use crate::error::{Code, RequestError};
use crate::request::graphql::{self, GraphqlRequest};
use crate::request::operation::{self, Parsed};
use crate::request::relay::{self, Inner, Reply};
use crate::tenancy::admission::{admit, Admitted, Scrub};
use crate::tenancy::gate::Gate;

use super::Instance;

/// What to do with one GraphQL request.
pub(super) enum Outcome {
    Answered(Reply),
    /// Not the plugin's: the router answers it (as received, for a request of its own), and
    /// its data is scrubbed of values the tenant's contract hides when needed.
    PassThrough(GraphqlRequest, Option<Scrub>),
}

impl Instance {
    pub(super) async fn reply_batch(
        &self,
        entries: Vec<Result<GraphqlRequest, RequestError>>,
        parts: &http::request::Parts,
        context: &Context,
        inner: &Inner,
        gate: Option<&Arc<Gate>>,
    ) -> Reply {
        let max = self.config.limits.max_batch;
        if entries.len() > max {
            return Reply::error(&RequestError::new(
                Code::BatchTooLarge,
                format!(
                    "the batch has {} operations; at most {max} are accepted",
                    entries.len()
                ),
            ));
        }
        let mut replies = Vec::with_capacity(entries.len());
        for entry in entries {
            let reply = match entry {
                Err(error) => Reply::error(&error),
                Ok(graphql) => match self.reply(graphql, parts, context, inner, gate).await {
                    Outcome::Answered(reply) => reply,
                    Outcome::PassThrough(graphql, scrub) => {
                        relay::send(graphql, parts, context, inner)
                            .await
                            .map(|mut reply| {
                                if let Some(scrub) = scrub {
                                    scrub.data(&mut reply.body);
                                }
                                reply
                            })
                            .unwrap_or_else(|error| Reply::error(&error))
                    }
                },
            };
            replies.push(reply.body);
        }
        Reply {
            status: StatusCode::OK,
            body: Value::Array(replies),
        }
    }

    /// Answers one GraphQL request, or hands it back when the router should.
    pub(super) async fn reply(
        &self,
        mut graphql: GraphqlRequest,
        parts: &http::request::Parts,
        context: &Context,
        inner: &Inner,
        gate: Option<&Arc<Gate>>,
    ) -> Outcome {
        let hash = graphql.persisted_query_hash().map(str::to_ascii_lowercase);
        let query: Arc<str> = match (graphql.query.take(), &hash) {
            (Some(query), Some(hash)) => {
                if hex::encode(Sha256::digest(query.as_bytes())) != *hash {
                    return Outcome::Answered(Reply::error(&RequestError::new(
                        Code::PersistedQueryHashMismatch,
                        "the persisted query's sha256Hash does not match its query",
                    )));
                }
                Arc::from(query)
            }
            (Some(query), None) => Arc::from(query),
            (None, Some(hash)) => {
                match (self.persisted.lookup(hash, gate.is_some()), gate) {
                    (Some(query), _) => query,
                    (None, None) => return Outcome::PassThrough(graphql, None),
                    // The text is needed to check it: the client sends it again (the
                    // automatic persisted queries protocol).
                    (None, Some(_)) => {
                        return Outcome::Answered(Reply::error(&RequestError::new(
                            Code::PersistedQueryNotFound,
                            "PersistedQueryNotFound",
                        )))
                    }
                }
            }
            (None, None) => return Outcome::PassThrough(graphql, None),
        };
        let Admitted {
            introspection: local_introspection,
            scrub,
        } = match gate.map(|gate| admit(gate, &query, &graphql)) {
            None => Admitted::default(),
            Some(Err(reply)) => return Outcome::Answered(reply),
            Some(Ok(admitted)) => {
                if let Some(hash) = &hash {
                    self.persisted.remember_gated(hash.clone(), &query);
                }
                admitted
            }
        };
        if !local_introspection && !graphql::mentions_semantic_fields(query.as_bytes()) {
            graphql.query = Some(query.to_string());
            return Outcome::PassThrough(graphql, scrub);
        }
        let prepared = match operation::prepare(
            gate.map_or(&self.schema, |gate| &gate.semantic),
            &query,
            graphql.operation_name.as_deref(),
            &graphql.variables,
            local_introspection,
            &self.config.limits,
        ) {
            Err(refusal) => return Outcome::Answered(Reply::refused(&refusal)),
            Ok(Parsed::PassThrough) => {
                graphql.query = Some(query.to_string());
                return Outcome::PassThrough(graphql, scrub);
            }
            Ok(Parsed::Semantic(prepared)) => prepared,
        };
        if let Some(hash) = hash {
            self.persisted.remember(hash, &query);
        }
        let mut reply = self
            .answer(prepared, graphql, parts, context, inner, gate)
            .await
            .unwrap_or_else(|error| Reply::error(&error));
        // The plugin's own part holds no value of the API's enums: the whole answer can be
        // scrubbed with the whole operation.
        if let Some(scrub) = scrub {
            scrub.data(&mut reply.body);
        }
        Outcome::Answered(reply)
    }
}
