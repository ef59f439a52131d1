//! Who is asking: the tenant a request names, through a trusted header or a claim of a JWT the
//! plugin verifies itself (the router's own JWT authentication needs a licence), and the
//! `@tag` contract configured for it.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use http::header::InvalidHeaderName;
use http::HeaderMap;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use lru::LruCache;
use wayfinder_supergraph::ContractFilter;

use crate::config::{Jwt, Tenants};
use crate::error::{Code, RequestError};

/// The configured tenants, ready to resolve requests.
pub struct TenantResolver {
    header: http::HeaderName,
    default: Option<String>,
    contracts: BTreeMap<String, ContractFilter>,
    jwt: Option<JwtVerifier>,
}

/// The tenant a request resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// `None` when no tenants are configured: the whole API schema.
    pub name: Option<String>,
    pub filter: ContractFilter,
}

/// Why the configured tenants cannot resolve requests: a header name, or the JWT keys.
#[derive(Debug, thiserror::Error)]
pub enum TenantsError {
    #[error("wayfinder.search.tenants.header: {source}")]
    Header {
        name: String,
        #[source]
        source: InvalidHeaderName,
    },
    #[error("wayfinder.search.tenants.jwt.header: {source}")]
    JwtHeader {
        name: String,
        #[source]
        source: InvalidHeaderName,
    },
    #[error("wayfinder.search.tenants.jwt.jwks_file: cannot read {}: {source}", path.display())]
    ReadJwks {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("wayfinder.search.tenants.jwt.jwks_file: {} is not a JWKS: {source}", path.display())]
    NotJwks {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("wayfinder.search.tenants.jwt.jwks_file: a key of {} is unusable: {source}", path.display())]
    UnusableKey {
        path: PathBuf,
        #[source]
        source: jsonwebtoken::errors::Error,
    },
    #[error("wayfinder.search.tenants.jwt.jwks_file: a key of {} names no usable `alg`", path.display())]
    NoAlgorithm { path: PathBuf },
    #[error("wayfinder.search.tenants.jwt.jwks_file: {} has no keys", path.display())]
    NoKeys { path: PathBuf },
    #[error("wayfinder.search.tenants.jwt: set `jwks_file` or `secret`")]
    NoKeySource,
}

impl TenantResolver {
    /// `tenants` must have passed [`crate::config::Config::check`].
    pub fn new(tenants: &Tenants) -> Result<Self, TenantsError> {
        let header = http::HeaderName::from_bytes(tenants.header.as_bytes()).map_err(|source| {
            TenantsError::Header {
                name: tenants.header.clone(),
                source,
            }
        })?;
        let jwt = tenants.jwt.as_ref().map(JwtVerifier::new).transpose()?;
        Ok(TenantResolver {
            header,
            default: tenants.default.clone(),
            contracts: tenants
                .contracts
                .iter()
                .map(|(name, contract)| (name.clone(), contract.filter()))
                .collect(),
            jwt,
        })
    }

    pub fn contract_names(&self) -> impl Iterator<Item = &str> {
        self.contracts.keys().map(String::as_str)
    }

    pub fn filter(&self, name: &str) -> Option<&ContractFilter> {
        self.contracts.get(name)
    }

    /// The tenant `headers` name, or the error to answer with.
    pub fn resolve(&self, headers: &HeaderMap) -> Result<Tenant, RequestError> {
        let named = match &self.jwt {
            Some(jwt) => jwt.tenant(headers)?,
            None => match single(headers, &self.header, Code::UnknownTenant)? {
                None => None,
                Some(value) => Some(
                    value
                        .to_str()
                        .map_err(|_| {
                            RequestError::new(
                                Code::UnknownTenant,
                                format!("the `{}` header is not valid text", self.header),
                            )
                        })?
                        .trim()
                        .to_string(),
                ),
            },
        };
        let name = match named.filter(|n| !n.is_empty()) {
            Some(name) => name,
            None => self.default.clone().ok_or_else(|| {
                RequestError::new(
                    Code::TenantRequired,
                    match &self.jwt {
                        Some(jwt) => format!(
                            "a tenant is required: send a token with a `{}` claim in the `{}` header",
                            jwt.claim, jwt.header
                        ),
                        None => format!("a tenant is required: name it in the `{}` header", self.header),
                    },
                )
            })?,
        };
        match self.contracts.get(&name) {
            Some(filter) => Ok(Tenant {
                name: Some(name),
                filter: filter.clone(),
            }),
            None => Err(RequestError::new(
                Code::UnknownTenant,
                format!("unknown tenant `{name}`"),
            )),
        }
    }
}

/// Tokens whose verification is remembered. With enforced contracts every request resolves its
/// tenant, and a client sends the same token many times.
const TOKENS_KEPT: usize = 1024;

/// Longer tokens are verified every time (the memory for remembered ones stays bounded).
const TOKEN_MAX_BYTES: usize = 4096;

/// Verifies tokens against a JWKS file or a shared secret.
struct JwtVerifier {
    header: http::HeaderName,
    claim: String,
    keys: Keys,
    issuer: Option<String>,
    audience: Option<String>,
    /// Verified tokens: the tenant they name and until when (Unix seconds) they stay valid.
    verified: Mutex<LruCache<String, (Option<String>, u64)>>,
}

enum Keys {
    Secret(DecodingKey),
    Set(Vec<(Option<String>, Algorithm, DecodingKey)>),
}

impl JwtVerifier {
    fn new(config: &Jwt) -> Result<Self, TenantsError> {
        let header = http::HeaderName::from_bytes(config.header.as_bytes()).map_err(|source| {
            TenantsError::JwtHeader {
                name: config.header.clone(),
                source,
            }
        })?;
        let keys = match (&config.secret, &config.jwks_file) {
            (Some(secret), _) => Keys::Secret(DecodingKey::from_secret(secret.as_bytes())),
            (None, Some(path)) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| TenantsError::ReadJwks {
                        path: path.clone(),
                        source,
                    })?;
                let set: JwkSet =
                    serde_json::from_str(&text).map_err(|source| TenantsError::NotJwks {
                        path: path.clone(),
                        source,
                    })?;
                let mut keys = Vec::new();
                for jwk in &set.keys {
                    let key =
                        DecodingKey::from_jwk(jwk).map_err(|source| TenantsError::UnusableKey {
                            path: path.clone(),
                            source,
                        })?;
                    let algorithm = jwk
                        .common
                        .key_algorithm
                        .and_then(|a| a.to_string().parse::<Algorithm>().ok())
                        .or_else(|| default_algorithm(jwk))
                        .ok_or_else(|| TenantsError::NoAlgorithm { path: path.clone() })?;
                    keys.push((jwk.common.key_id.clone(), algorithm, key));
                }
                if keys.is_empty() {
                    return Err(TenantsError::NoKeys { path: path.clone() });
                }
                Keys::Set(keys)
            }
            (None, None) => return Err(TenantsError::NoKeySource),
        };
        Ok(JwtVerifier {
            header,
            claim: config.claim.clone(),
            keys,
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            verified: Mutex::new(LruCache::new(
                NonZeroUsize::new(TOKENS_KEPT).unwrap_or(NonZeroUsize::MIN),
            )),
        })
    }

    /// The tenant claim of the request's token; `None` without a token.
    fn tenant(&self, headers: &HeaderMap) -> Result<Option<String>, RequestError> {
        let Some(value) = single(headers, &self.header, Code::Unauthenticated)? else {
            return Ok(None);
        };
        let unauthenticated =
            |why: String| RequestError::new(Code::Unauthenticated, format!("invalid token: {why}"));
        let value = value
            .to_str()
            .map_err(|_| {
                unauthenticated(format!("the `{}` header is not valid text", self.header))
            })?
            .trim();
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .unwrap_or(value)
            .trim();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let remembered = self.verified.lock().ok().and_then(|mut verified| {
            verified
                .get(token)
                .filter(|(_, until)| now <= *until)
                .map(|(tenant, _)| tenant.clone())
        });
        if let Some(tenant) = remembered {
            return Ok(tenant);
        }
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| unauthenticated(e.to_string()))?;
        let (algorithm, key) = match &self.keys {
            Keys::Secret(key) => match header.alg {
                Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => (header.alg, key),
                other => {
                    return Err(unauthenticated(format!(
                        "algorithm {other:?} is not accepted with a shared secret"
                    )))
                }
            },
            Keys::Set(keys) => keys
                .iter()
                .find(|(kid, algorithm, _)| {
                    *algorithm == header.alg
                        && (header.kid.is_none() || kid.is_none() || *kid == header.kid)
                })
                .map(|(_, algorithm, key)| (*algorithm, key))
                .ok_or_else(|| {
                    unauthenticated(format!(
                        "no key in the JWKS matches kid {:?} and algorithm {:?}",
                        header.kid, header.alg
                    ))
                })?,
        };
        let mut validation = Validation::new(algorithm);
        match &self.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        let claims = jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
            token,
            key,
            &validation,
        )
        .map_err(|e| unauthenticated(e.to_string()))?
        .claims;
        let tenant = match claims.get(&self.claim) {
            Some(serde_json::Value::String(tenant)) => Some(tenant.clone()),
            Some(_) => {
                return Err(unauthenticated(format!(
                    "claim `{}` is not a string",
                    self.claim
                )))
            }
            None => None,
        };
        // Valid as long as `decode` would accept it: until its expiry plus the leeway.
        let until = claims
            .get("exp")
            .and_then(serde_json::Value::as_u64)
            .map(|exp| exp.saturating_add(validation.leeway));
        if let (Some(until), true) = (until, token.len() <= TOKEN_MAX_BYTES) {
            if let Ok(mut verified) = self.verified.lock() {
                verified.put(token.to_string(), (tenant.clone(), until));
            }
        }
        Ok(tenant)
    }
}

/// The one value of `name`: a header sent twice is refused, since a proxy that appends its
/// value to a client's instead of replacing it would otherwise let the client's win.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &http::HeaderName,
    code: Code,
) -> Result<Option<&'h http::HeaderValue>, RequestError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (first, None) => Ok(first),
        (Some(_), Some(_)) | (None, Some(_)) => Err(RequestError::new(
            code,
            format!("the `{name}` header is sent more than once"),
        )),
    }
}

/// The usual algorithm of a key that does not name one.
fn default_algorithm(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Algorithm> {
    use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve};
    match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Some(Algorithm::RS256),
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Some(Algorithm::ES256),
            EllipticCurve::P384 => Some(Algorithm::ES384),
            _ => None,
        },
        AlgorithmParameters::OctetKeyPair(_) => Some(Algorithm::EdDSA),
        AlgorithmParameters::OctetKey(_) => Some(Algorithm::HS256),
    }
}
