//! The `wayfinder.search` section of `router.yaml`: one struct whose doc comments become the
//! JSON schema the router checks at start, so a wrong key or value stops the start with a
//! message naming it. `Config::check` adds what a schema cannot say (a default tenant that
//! names a contract, one JWT key source) and names the key too.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use wayfinder_supergraph::ContractFilter;
use wayfinder_workers::cursor::CursorSecret;
use wayfinder_workers::insights::{InsightsConfig, InsightsConfigError};
use wayfinder_workers::learned::LearnedConfig;
use wayfinder_workers::{Admission, EngineConfig, ModelConfig, Overload, Params, RedisConfig};

/// Semantic introspection (`__search` and `__definitions`) answered at the gateway.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Answer `__search` and `__definitions`. When false every request passes through untouched.
    pub enabled: bool,
    /// Whether the fields answer at all. Absent: follow the router's own introspection setting
    /// (`supergraph.introspection`, on in `--dev`); `true` or `false` overrides it.
    pub introspection: Option<bool>,
    /// Which contract each request sees. Absent: every request sees the whole API schema.
    pub tenants: Option<Tenants>,
    /// Limits applied to the new fields (the router's own limits do not see them).
    pub limits: Limits,
    /// Where the embedding model, its runtime and the vector cache live.
    pub index: Index,
    /// How `__search` cursors are signed.
    pub cursors: Cursors,
    /// The MCP endpoint: `search`, `introspect`, `validate` and `execute` tools for agents,
    /// under the same tenant contracts, introspection setting and limits as `__search`.
    pub mcp: Mcp,
    /// The `examples` of definitions: made from the schema for every member, and, when
    /// `from_traffic` is on, learned from the operations the router runs.
    pub examples: LearnedConfig,
    /// A folder of prompt templates (`*.md`: a YAML front matter naming the prompt, its
    /// description, its arguments and the tenants it is for, then its text), served by
    /// `__prompts` and the MCP endpoint's `prompts/list` and `prompts/get`; relative to the
    /// router's working directory, read at start and on every reload. Default: none.
    pub prompts: Option<PathBuf>,
    /// What agents could not find: per opted-in tenant, the questions whose best hit scored
    /// low, that found nothing, or that the same client followed with another search before
    /// running an operation, counted over a sliding window (`wayfinder.insights.questions`).
    pub insights: InsightsConfig,
}

/// The MCP endpoint (streamable HTTP, stateless: any replica answers any call).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Mcp {
    /// Serve the endpoint. Default false.
    pub enabled: bool,
    /// Its path on `listen`; not `/`, the router's GraphQL path by default. Default `/mcp`.
    pub path: String,
    /// The address it is served on. To share the router's port it must be `supergraph.listen`
    /// itself: the router refuses to start when one port is given two addresses (say
    /// `0.0.0.0:4000` there and this default, `127.0.0.1:4000`, the router's own default).
    /// Another port opens a listener of its own; set `graphql_url` then.
    pub listen: std::net::SocketAddr,
    /// The router's GraphQL endpoint, which every tool reaches with the caller's headers, so
    /// that the router's authentication, limits, telemetry and coprocessors apply. Default:
    /// `http://` + `listen` (its loopback address when `listen` is unspecified, `0.0.0.0`) +
    /// `/`; set it when `listen` is not the router's address, `supergraph.path` is not `/`, or
    /// the router serves TLS.
    pub graphql_url: Option<String>,
    /// Let `execute` run mutations. Subscriptions are always refused. Default false.
    pub allow_mutations: bool,
    /// `Host` header values accepted, with or without a port, against DNS rebinding. Default:
    /// the loopback names; list the names clients reach the router by.
    pub allowed_hosts: Vec<String>,
    /// Largest request body, in bytes; a larger one is answered `413`. Default 2 MiB.
    pub max_request_bytes: usize,
    /// Longest answer a tool returns, in characters: an SDL slice stops at a definition
    /// before it and says how many it left out; a longer GraphQL answer is refused with
    /// `MCP_ANSWER_TOO_LARGE`. Default 100000 (about 25000 tokens).
    pub max_text_chars: usize,
    /// Longest a tool waits for the router's answer, e.g. `30s`. Default 30 s.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub execute_timeout: Duration,
}

impl Default for Mcp {
    fn default() -> Self {
        Mcp {
            enabled: false,
            path: "/mcp".into(),
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 4000)),
            graphql_url: None,
            allow_mutations: false,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            max_request_bytes: 2 * 1024 * 1024,
            max_text_chars: 100_000,
            execute_timeout: Duration::from_secs(30),
        }
    }
}

impl Mcp {
    /// The URL `execute` posts to.
    pub fn graphql_url(&self) -> String {
        if let Some(url) = &self.graphql_url {
            return url.clone();
        }
        let mut address = self.listen;
        if address.ip().is_unspecified() {
            address.set_ip(match address {
                std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        format!("http://{address}/")
    }
}

/// `__search` cursors.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Cursors {
    /// The key cursors are signed with (HMAC-SHA256): every replica given the same one accepts
    /// the others' cursors. Write `${env.NAME}` to keep it out of the file (the router expands
    /// it). Absent: a random key of this process, which other replicas refuse, so pagination
    /// behind a load balancer then needs sticky sessions.
    pub secret: Option<String>,
    /// Secrets whose cursors are still accepted, though no longer signed with: to change
    /// `secret` without breaking pagination, deploy the new one with the old one here, and
    /// drop it once every replica runs the new one.
    pub previous_secrets: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            enabled: true,
            introspection: None,
            tenants: None,
            limits: Limits::default(),
            index: Index::default(),
            cursors: Cursors::default(),
            mcp: Mcp::default(),
            examples: LearnedConfig::default(),
            prompts: None,
            insights: InsightsConfig::default(),
        }
    }
}

/// Tenants and their `@tag` contracts.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tenants {
    /// Request header that names the tenant (ignored when `jwt` is set: the token decides).
    #[serde(default = "default_tenant_header")]
    pub header: String,
    /// Contract for requests that name no tenant. Absent: such requests are refused.
    #[serde(default)]
    pub default: Option<String>,
    /// Contracts by tenant name.
    pub contracts: BTreeMap<String, ContractConfig>,
    /// Take the tenant from a claim of a JSON Web Token the plugin verifies itself.
    #[serde(default)]
    pub jwt: Option<Jwt>,
    /// Where contracts hold. `all`: a restricted tenant's standard introspection is answered
    /// from its contract and its operations are validated against it (and, when some contract
    /// hides something, a request naming an unknown tenant is refused). `search_only`:
    /// contracts filter `__search` and `__definitions` alone, and every other request reaches
    /// the whole API.
    #[serde(default)]
    pub enforce: Enforce,
}

/// Where tenants' contracts are enforced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enforce {
    /// Search, definitions, standard introspection and every operation.
    #[default]
    All,
    /// `__search` and `__definitions` only.
    SearchOnly,
}

fn default_tenant_header() -> String {
    "x-wayfinder-tenant".into()
}

/// A tenant's view: members tagged with an excluded tag are hidden (exclusion wins); with
/// include tags, only fields and unions carrying one of them (or whose type does) are shown.
/// Both empty: the whole API schema.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContractConfig {
    #[serde(default)]
    pub include_tags: BTreeSet<String>,
    #[serde(default)]
    pub exclude_tags: BTreeSet<String>,
    /// This tenant's quota of `__search` and `__definitions` fields. Absent: no quota.
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
}

/// A token bucket: it holds up to `capacity` tokens and gains `refill` tokens every `interval`;
/// each `__search` or `__definitions` field of an operation takes one. An operation that finds
/// too few tokens is refused with `SEARCH_RATE_LIMITED` and `extensions.retryAfterMs`, and takes
/// none. Each tenant has its own bucket, kept across reloads while its settings stay the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Most tokens the bucket holds: the largest burst.
    pub capacity: u32,
    /// Tokens added every `interval`.
    pub refill: u32,
    /// How often `refill` tokens are added, e.g. `1s` or `500ms`.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub interval: Duration,
}

impl ContractConfig {
    pub fn filter(&self) -> ContractFilter {
        ContractFilter {
            include_tags: self.include_tags.clone(),
            exclude_tags: self.exclude_tags.clone(),
        }
    }
}

/// JWT verification: the token is read from `header`, checked against `jwks_file` or `secret`
/// (with `issuer` and `audience` when given, and always its expiry), and `claim` names the
/// tenant. A request without a token gets the default tenant; a bad token is refused.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Jwt {
    /// Header carrying the token, as `Bearer <token>` or the bare token.
    #[serde(default = "default_jwt_header")]
    pub header: String,
    /// Claim whose string value names the tenant.
    #[serde(default = "default_jwt_claim")]
    pub claim: String,
    /// A JWKS file (`{"keys": [...]}`) with the keys that may sign tokens (RSA, EC, Ed25519).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// A shared secret for HMAC-signed tokens (HS256/384/512). Write `${env.NAME}` to keep it
    /// out of the file.
    #[serde(default)]
    pub secret: Option<String>,
    /// Required `iss` claim.
    #[serde(default)]
    pub issuer: Option<String>,
    /// Required `aud` claim.
    #[serde(default)]
    pub audience: Option<String>,
}

fn default_jwt_header() -> String {
    "authorization".into()
}

fn default_jwt_claim() -> String {
    "tenant".into()
}

/// Limits on the new fields; a request over one gets an error naming it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest `first` of a `__search` (1 to 100).
    pub max_first: usize,
    /// Longest `query` string of a `__search`, in characters (1 to 1000).
    pub max_query_chars: usize,
    /// Most operations in one batched request the plugin answers (one that uses the new
    /// fields, or a restricted tenant's that holds a refused or introspection operation).
    pub max_batch: usize,
    /// Most coordinates one `__definitions` resolves.
    pub max_coordinates: usize,
    /// Most `__search` and `__definitions` fields in one operation.
    pub max_fields: usize,
    /// Searches that may wait for a search thread at once (`index.query_sessions` run at
    /// once); one more is overloaded at once. Waiting is never unbounded.
    pub max_pending_searches: usize,
    /// Longest a search waits before it is overloaded, e.g. `500ms`: for one of the engine's
    /// threads to take its request, then for a search thread.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub max_search_wait: Duration,
    /// What an overloaded search does: `lexical` answers it from the lexical index alone (no
    /// model), with `extensions.wayfinder.overloaded` in the response; `refuse` fails the field
    /// with `SEARCH_OVERLOADED`.
    pub overload: Overload,
    /// Most lexical tokens in an operation the plugin parses (its own, and every restricted
    /// tenant's); the router's `limits.parser_max_tokens` by default. Set both together.
    pub parser_max_tokens: usize,
    /// Deepest nesting in an operation the plugin parses; the router's
    /// `limits.parser_max_recursion` by default. Set both together.
    pub parser_max_recursion: usize,
}

impl Limits {
    /// The engine's admission settings these limits describe.
    pub fn admission(&self) -> Admission {
        Admission {
            max_pending: self.max_pending_searches,
            max_wait: self.max_search_wait,
            overload: self.overload,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_first: 50,
            max_query_chars: 500,
            max_batch: 16,
            max_coordinates: 100,
            max_fields: 8,
            max_pending_searches: 32,
            max_search_wait: Duration::from_millis(500),
            overload: Overload::Lexical,
            parser_max_tokens: 15_000,
            parser_max_recursion: 500,
        }
    }
}

/// The embedding model, its runtime and the vector cache.
// Not the engine's `EngineConfig`: these keys describe it at a user's level (paths default
// from `home`, `no_cache`, defaults that depend on the machine), and [`Config::engine`]
// resolves them. `model` and `redis` are the engine's own types.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Index {
    /// Where `scripts/setup` put the ONNX Runtime and the default model, relative to the
    /// router's working directory. Default `$WAYFINDER_HOME`, else `.wayfinder`.
    pub home: PathBuf,
    /// Folder of the persistent vector cache and of the saved vector graphs (the two newest
    /// per subgraph), so a restart neither embeds nor builds again. Default `<home>/cache`.
    pub cache_dir: Option<PathBuf>,
    /// Keep vectors in memory only (every start embeds the whole schema again).
    pub no_cache: bool,
    /// Most bytes of pages the vector cache's store (`<cache_dir>/vectors.lmdb`, on a local
    /// file system) has in use; past it, the entries used longest ago are removed, none used
    /// in the last hour or by this router. Default 2 GiB.
    pub cache_max_bytes: Option<u64>,
    /// Embedding threads (at most the machine's cores). Default: the machine's cores.
    pub workers: Option<usize>,
    /// Search threads, each with its own query-embedding session, loaded on first need; a
    /// search waits for one as `limits` say. They run below the router's own threads in CPU
    /// priority. Default: one fewer than the machine's cores (at least one), so that a flood of
    /// searches always leaves a core to ordinary requests.
    pub query_sessions: Option<usize>,
    /// Another ONNX sentence-embedding model. Default: all-MiniLM-L6-v2 from `home`.
    pub model: Option<ModelConfig>,
    /// The fleet's shared vector store: replicas take from it what another replica embedded,
    /// write what they embed, and split the texts no replica has embedded yet. The local cache
    /// stays the first level; without Redis (down, slow, flushed), indexing goes on from it and
    /// the model, and no request depends on Redis. Default: none.
    pub redis: Option<RedisConfig>,
    /// How `__search` ranks: every tunable number and which ranking stages run, in the order
    /// listed (docs/RANKING.md describes each). A field left out takes the default model's
    /// value. Default: the params measured for the model.
    pub ranking: Option<Params>,
}

impl Default for Index {
    fn default() -> Self {
        Index {
            home: std::env::var_os("WAYFINDER_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(".wayfinder")),
            cache_dir: None,
            no_cache: false,
            cache_max_bytes: None,
            workers: None,
            query_sessions: None,
            model: None,
            redis: None,
            ranking: None,
        }
    }
}

/// A configuration value the JSON schema accepts but that cannot work, with its key.
#[derive(Debug, thiserror::Error)]
#[error("wayfinder.search.{key}: {problem}")]
pub struct ConfigError {
    pub key: String,
    pub problem: String,
}

fn invalid(key: &str, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        problem: problem.into(),
    }
}

impl Config {
    /// Checks what the JSON schema cannot express.
    pub fn check(&self) -> Result<(), ConfigError> {
        let limits = &self.limits;
        for (key, value, max) in [
            (
                "limits.max_first",
                limits.max_first,
                wayfinder_workers::engine::MAX_FIRST,
            ),
            (
                "limits.max_query_chars",
                limits.max_query_chars,
                wayfinder_workers::engine::MAX_QUERY_CHARS,
            ),
            ("limits.max_batch", limits.max_batch, usize::MAX),
            ("limits.max_coordinates", limits.max_coordinates, usize::MAX),
            ("limits.max_fields", limits.max_fields, usize::MAX),
            (
                "limits.parser_max_tokens",
                limits.parser_max_tokens,
                usize::MAX,
            ),
            (
                "limits.parser_max_recursion",
                limits.parser_max_recursion,
                usize::MAX,
            ),
        ] {
            if value == 0 || value > max {
                let range = if max == usize::MAX {
                    "at least 1".to_string()
                } else {
                    format!("between 1 and {max}")
                };
                return Err(invalid(key, format!("must be {range}, got {value}")));
            }
        }
        if self.index.workers == Some(0) {
            return Err(invalid("index.workers", "must be at least 1"));
        }
        if self.index.cache_max_bytes.is_some_and(|max| max < 1 << 20) {
            return Err(invalid(
                "index.cache_max_bytes",
                "must be at least 1 MiB (1048576)",
            ));
        }
        if let Some(redis) = &self.index.redis {
            if redis.urls.is_empty() {
                return Err(invalid("index.redis.urls", "must name at least one Redis"));
            }
            if redis.timeout.is_zero() {
                return Err(invalid("index.redis.timeout", "must be longer than 0"));
            }
            if redis.ttl.is_some_and(|ttl| ttl < Duration::from_secs(1)) {
                return Err(invalid("index.redis.ttl", "must be at least 1s"));
            }
        }
        // Memory: at most 100,000 shapes of 64 KiB, well under the process's other caches at
        // their defaults (2,000 of 4 KiB).
        if !(1..=100_000).contains(&self.examples.max_operations) {
            return Err(invalid("examples.max_operations", "must be 1 to 100000"));
        }
        if self.examples.max_operation_bytes > 65_536 {
            return Err(invalid(
                "examples.max_operation_bytes",
                "must be at most 65536",
            ));
        }
        if let Err(InsightsConfigError::Invalid { setting, problem }) = self.insights.validate() {
            return Err(invalid(&format!("insights.{setting}"), problem));
        }
        for tenant in &self.insights.tenants {
            let known = match &self.tenants {
                Some(tenants) => tenants.contracts.contains_key(tenant),
                None => tenant.is_empty(),
            };
            if !known {
                return Err(invalid(
                    "insights.tenants",
                    format!(
                        "`{tenant}` is not a tenant of tenants.contracts (without tenants, \
                         list \"\" for every request)"
                    ),
                ));
            }
        }
        if self.index.query_sessions == Some(0) {
            return Err(invalid("index.query_sessions", "must be at least 1"));
        }
        if self.cursors.secret.is_none() && !self.cursors.previous_secrets.is_empty() {
            return Err(invalid(
                "cursors.previous_secrets",
                "needs cursors.secret, the secret that replaces them",
            ));
        }
        if self.cursors.secret.as_ref().is_some_and(|s| s.len() < 16) {
            return Err(invalid(
                "cursors.secret",
                "must be at least 16 bytes long (a guessable key lets anyone forge cursors)",
            ));
        }
        if self.limits.max_search_wait.is_zero() {
            return Err(invalid("limits.max_search_wait", "must be longer than 0"));
        }
        if let Some(model) = &self.index.model {
            if model.dimension == 0 {
                return Err(invalid("index.model.dimension", "must be at least 1"));
            }
        }
        self.check_mcp()?;
        let Some(tenants) = &self.tenants else {
            return Ok(());
        };
        if http::HeaderName::from_bytes(tenants.header.as_bytes()).is_err() {
            return Err(invalid(
                "tenants.header",
                format!("`{}` is not a valid header name", tenants.header),
            ));
        }
        if tenants.contracts.is_empty() {
            return Err(invalid("tenants.contracts", "name at least one contract"));
        }
        for (name, contract) in &tenants.contracts {
            let Some(limit) = &contract.rate_limit else {
                continue;
            };
            let key = |field: &str| format!("tenants.contracts.{name}.rate_limit.{field}");
            if limit.capacity == 0 {
                return Err(invalid(&key("capacity"), "must be at least 1"));
            }
            if limit.refill == 0 {
                return Err(invalid(&key("refill"), "must be at least 1"));
            }
            if limit.interval.is_zero() {
                return Err(invalid(&key("interval"), "must be longer than 0"));
            }
            // An operation the bucket can never hold would be told to retry forever.
            if (limit.capacity as usize) < self.limits.max_fields {
                return Err(invalid(
                    &key("capacity"),
                    format!(
                        "must be at least limits.max_fields ({}), the most fields one operation \
                         may take, got {}",
                        self.limits.max_fields, limit.capacity
                    ),
                ));
            }
        }
        if let Some(default) = &tenants.default {
            if !tenants.contracts.contains_key(default) {
                return Err(invalid(
                    "tenants.default",
                    format!(
                        "`{default}` is not one of the contracts ({})",
                        tenants
                            .contracts
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        if let Some(ranking) = &self.index.ranking {
            ranking
                .validate()
                .map_err(|e| invalid("index.ranking", e.to_string()))?;
        }
        if let Some(jwt) = &tenants.jwt {
            if http::HeaderName::from_bytes(jwt.header.as_bytes()).is_err() {
                return Err(invalid(
                    "tenants.jwt.header",
                    format!("`{}` is not a valid header name", jwt.header),
                ));
            }
            match (&jwt.jwks_file, &jwt.secret) {
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        "tenants.jwt",
                        "set `jwks_file` or `secret`, not both",
                    ))
                }
                (None, None) => return Err(invalid("tenants.jwt", "set `jwks_file` or `secret`")),
                (None, Some(secret)) if secret.is_empty() => {
                    return Err(invalid("tenants.jwt.secret", "must not be empty"))
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_mcp(&self) -> Result<(), ConfigError> {
        let mcp = &self.mcp;
        if mcp.path == "/" {
            return Err(invalid(
                "mcp.path",
                "must not be `/`, the router's GraphQL path by default",
            ));
        }
        if !mcp.path.starts_with('/') || mcp.path.contains(['?', '#', '*', ':']) {
            return Err(invalid(
                "mcp.path",
                format!("`{}` must be a plain path starting with `/`", mcp.path),
            ));
        }
        if mcp.max_request_bytes < 1024 {
            return Err(invalid("mcp.max_request_bytes", "must be at least 1024"));
        }
        if mcp.max_text_chars < 1000 {
            return Err(invalid("mcp.max_text_chars", "must be at least 1000"));
        }
        if mcp.allowed_hosts.is_empty() {
            return Err(invalid(
                "mcp.allowed_hosts",
                "list at least one host (none would let any Host header through)",
            ));
        }
        if mcp.execute_timeout.is_zero() {
            return Err(invalid("mcp.execute_timeout", "must be longer than 0"));
        }
        let url = mcp.graphql_url();
        match reqwest::Url::parse(&url) {
            Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => Ok(()),
            _ => Err(invalid(
                "mcp.graphql_url",
                format!("`{url}` is not an http(s) URL"),
            )),
        }
    }

    /// The engine settings these keys describe.
    pub fn engine(&self) -> EngineConfig {
        let index = &self.index;
        let mut config = EngineConfig::default_in(&index.home);
        if let Some(model) = &index.model {
            config.model = ModelConfig {
                runtime: model.runtime.clone().or(config.model.runtime),
                ..model.clone()
            };
        }
        config.cache_dir = match (&index.cache_dir, index.no_cache) {
            (_, true) => None,
            (Some(dir), false) => Some(dir.clone()),
            (None, false) => config.cache_dir,
        };
        if let Some(workers) = index.workers {
            config.workers = workers;
        }
        if let Some(max) = index.cache_max_bytes {
            config.cache_max_bytes = max;
        }
        config.query_sessions = index
            .query_sessions
            .unwrap_or_else(wayfinder_workers::config::gateway_search_threads);
        config.cursor_secret = self.cursors.secret.clone().map(CursorSecret::new);
        config.previous_cursor_secrets = self
            .cursors
            .previous_secrets
            .iter()
            .cloned()
            .map(CursorSecret::new)
            .collect();
        config.redis = index.redis.clone();
        config.ranking = index.ranking.clone();
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wayfinder_workers::ModelTuning;

    fn checked(yaml: serde_json::Value) -> Result<(), String> {
        let config: Config = serde_json::from_value(yaml).map_err(|e| e.to_string())?;
        config.check().map_err(|e| e.to_string())
    }

    #[test]
    fn checks_name_the_bad_key() {
        assert!(checked(serde_json::json!({})).is_ok());
        for (config, key) in [
            (
                serde_json::json!({ "cursors": { "secret": "short" } }),
                "cursors.secret",
            ),
            (
                serde_json::json!({ "cursors": { "previous_secrets": ["an-older-fleet-secret"] } }),
                "cursors.previous_secrets",
            ),
            (
                serde_json::json!({ "limits": { "parser_max_tokens": 0 } }),
                "limits.parser_max_tokens",
            ),
            (
                serde_json::json!({ "tenants": { "default": "nobody", "contracts": { "public": {} } } }),
                "tenants.default",
            ),
            (
                serde_json::json!({ "index": { "redis": { "urls": [] } } }),
                "index.redis.urls",
            ),
            (
                serde_json::json!({ "index": { "redis": { "urls": ["redis://r:6379"], "timeout": "0s" } } }),
                "index.redis.timeout",
            ),
            (serde_json::json!({ "mcp": { "path": "/" } }), "mcp.path"),
            (serde_json::json!({ "mcp": { "path": "mcp" } }), "mcp.path"),
            (
                serde_json::json!({ "mcp": { "graphql_url": "ftp://router" } }),
                "mcp.graphql_url",
            ),
            (
                serde_json::json!({ "mcp": { "execute_timeout": "0s" } }),
                "mcp.execute_timeout",
            ),
        ] {
            let error = checked(config).expect_err("refused");
            assert!(error.contains(key), "{error}");
        }
        let redis: Config = serde_json::from_value(serde_json::json!({
            "index": { "redis": { "urls": ["redis://r:6379"] } }
        }))
        .unwrap();
        let engine = redis
            .engine()
            .redis
            .expect("index.redis reaches the engine");
        assert_eq!(engine.namespace, "wayfinder");
        let mcp: Config = serde_json::from_value(serde_json::json!({
            "mcp": { "enabled": true, "listen": "0.0.0.0:4000" }
        }))
        .unwrap();
        assert_eq!(mcp.mcp.graphql_url(), "http://127.0.0.1:4000/");
        assert_eq!(engine.timeout, Duration::from_millis(500));
        assert!(!engine.required_to_start);
        assert!(checked(serde_json::json!({
            "cursors": { "secret": "long-enough-for-a-key" },
            "tenants": { "enforce": "search_only", "contracts": { "public": { "exclude_tags": ["internal"] } } },
        }))
        .is_ok());
    }

    #[test]
    fn a_model_tuning_is_built_in_a_file_or_none() {
        let tuning = |tuning: serde_json::Value| {
            let config: Config = serde_json::from_value(serde_json::json!({
                "index": { "model": {
                    "onnx": "m.onnx", "tokenizer": "t.json", "dimension": 384, "tuning": tuning
                } }
            }))
            .unwrap();
            config.engine().model.tuning
        };
        assert_eq!(tuning(serde_json::Value::Null), ModelTuning::BuiltIn);
        assert_eq!(tuning("none".into()), ModelTuning::Untuned);
        assert_eq!(
            tuning("fitted.safetensors".into()),
            ModelTuning::File("fitted.safetensors".into())
        );
    }
}
