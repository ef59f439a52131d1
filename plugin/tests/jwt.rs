//! Tenants from verified JWTs, through the real router on the example supergraph: the plugin
//! checks the token itself (shared secret or JWKS file), reads the tenant claim, and answers a
//! bad token with `UNAUTHENTICATED` (HTTP 401). `Query.customer` is tagged `internal`: only
//! `staff` sees it.

mod support;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use support::Router;

const SECRET: &str = "a-shared-secret-for-tests-only";
const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "wayfinder";

/// RFC 8032, section 7.1, test 1: a published Ed25519 key pair (seed and public key).
const ED25519_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
const ED25519_PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

const CONTRACTS: &str = "  default: public
  contracts:
    public: { exclude_tags: [internal] }
    staff: {}";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs()
}

fn claims(tenant: &str) -> Value {
    json!({ "tenant": tenant, "iss": ISSUER, "aud": AUDIENCE, "exp": now() + 600 })
}

fn hs256(claims: &Value, secret: &str, kid: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(
        &header,
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .expect("signs")
}

fn eddsa(claims: &Value, kid: &str) -> String {
    // PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410).
    let mut der = hex::decode("302e020100300506032b657004220420").expect("hex");
    der.extend(hex::decode(ED25519_SEED).expect("hex"));
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_ed_der(&der)).expect("signs")
}

/// Whether the tenant behind `token` sees `Query.customer`; the response for other checks.
async fn sees_customer(router: &Router, token: Option<&str>) -> (bool, support::Response) {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("x-wayfinder-tenant", "staff")];
    if let Some(bearer) = &bearer {
        headers.push(("authorization", bearer.as_str()));
    }
    let response = router
        .query(
            r#"{ __definitions(coordinates: ["Query.customer"]) { ... on __Field { name } } }"#,
            json!({}),
            &headers,
        )
        .await;
    let seen = response.data()["__definitions"][0]["name"] == "customer";
    (seen, response)
}

#[tokio::test]
async fn tenant_from_a_token_signed_with_a_shared_secret() {
    let plugin = format!(
        "tenants:\n  jwt:\n    secret: {SECRET}\n    issuer: {ISSUER}\n    audience: {AUDIENCE}\n{CONTRACTS}\n{}",
        support::MCP_ON
    );
    let router = Router::start(&support::example_supergraph(), &plugin, "").await;

    let staff = hs256(&claims("staff"), SECRET, None);
    assert!(sees_customer(&router, Some(&staff)).await.0);

    // MCP clients send the same token: the same tenant, the same refusals.
    let introspect = json!({ "coordinates": ["Query.customer"], "depth": 0 });
    for (token, code) in [
        (staff.clone(), None),
        (
            hs256(&claims("public"), SECRET, None),
            Some("UNKNOWN_COORDINATE"),
        ),
        (
            hs256(&claims("staff"), "not-the-secret", None),
            Some("UNAUTHENTICATED"),
        ),
    ] {
        let bearer = format!("Bearer {token}");
        let answer = router
            .mcp_call(
                "introspect",
                introspect.clone(),
                &[("authorization", &bearer)],
            )
            .await;
        match code {
            None => assert!(
                support::mcp_text(&answer).1.contains("customer("),
                "{answer}"
            ),
            Some(code) => assert_eq!(support::mcp_code(&answer), code, "{answer}"),
        }
    }

    let public = hs256(&claims("public"), SECRET, None);
    let (seen, response) = sees_customer(&router, Some(&public)).await;
    assert!(!seen);
    assert_eq!(
        response.codes(),
        ["UNKNOWN_COORDINATE"],
        "{:?}",
        response.body
    );

    // No token: the default tenant. The tenant header does not count when tokens are configured.
    let (seen, response) = sees_customer(&router, None).await;
    assert!(!seen, "{:?}", response.body);

    let unknown = hs256(&claims("nobody"), SECRET, None);
    let (_, response) = sees_customer(&router, Some(&unknown)).await;
    assert_eq!(response.codes(), ["UNKNOWN_TENANT"], "{:?}", response.body);

    let mut expired = claims("staff");
    expired["exp"] = json!(now() - 3600);
    let mut wrong_audience = claims("staff");
    wrong_audience["aud"] = json!("someone-else");
    let mut wrong_issuer = claims("staff");
    wrong_issuer["iss"] = json!("https://elsewhere.test");
    let bad = [
        ("expired", hs256(&expired, SECRET, None)),
        (
            "another secret",
            hs256(&claims("staff"), "not-the-secret", None),
        ),
        ("another audience", hs256(&wrong_audience, SECRET, None)),
        ("another issuer", hs256(&wrong_issuer, SECRET, None)),
        ("not a token", "garbage".to_string()),
        ("an asymmetric token", eddsa(&claims("staff"), "ed")),
    ];
    for (why, token) in bad {
        let (seen, response) = sees_customer(&router, Some(&token)).await;
        assert!(!seen, "{why}");
        assert_eq!(response.status, 401, "{why}: {:?}", response.body);
        assert_eq!(
            response.codes(),
            ["UNAUTHENTICATED"],
            "{why}: {:?}",
            response.body
        );
    }

    // The contract holds for every request: introspection and operations too.
    let fields_of_query = json!({ "query": "{ __type(name: \"Query\") { fields { name } } }" });
    let hidden_field = json!({ "query": "{ customer(id: \"c1\") { id } }" });
    let as_token = |token: &str| [("authorization", format!("Bearer {token}"))];
    let send = |body: &Value, token: &str| {
        let headers = as_token(token);
        let router = &router;
        let body = body.clone();
        async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            router.post(&body, &headers).await
        }
    };
    let listed = send(&fields_of_query, &public).await.body.to_string();
    assert!(
        !listed.contains("customer") && listed.contains("book"),
        "{listed}"
    );
    let listed = send(&fields_of_query, &staff).await.body.to_string();
    assert!(listed.contains("customer"), "{listed}");
    let refused = send(&hidden_field, &public).await;
    assert_eq!(
        refused.codes(),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{:?}",
        refused.body
    );
    // A bad token cannot pass as the whole API: ordinary requests are refused too.
    let plain = send(&json!({ "query": "{ __typename }" }), "garbage").await;
    assert_eq!(plain.status, 401, "{:?}", plain.body);
    assert_eq!(plain.codes(), ["UNAUTHENTICATED"], "{:?}", plain.body);
    // The same token again (its verification is remembered): the same tenant.
    let again = send(&hidden_field, &public).await;
    assert_eq!(
        again.codes(),
        ["GRAPHQL_VALIDATION_FAILED"],
        "{:?}",
        again.body
    );
}

#[tokio::test]
async fn tenant_from_a_token_verified_against_a_jwks_file() {
    let jwks = json!({ "keys": [
        {
            "kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA",
            "x": URL_SAFE_NO_PAD.encode(hex::decode(ED25519_PUBLIC).expect("hex")),
        },
        { "kty": "oct", "kid": "hs", "alg": "HS256", "k": URL_SAFE_NO_PAD.encode(SECRET) },
    ]});
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks.to_string()).expect("writes the JWKS");
    let plugin = format!(
        "tenants:\n  jwt:\n    jwks_file: {}\n{CONTRACTS}",
        path.display()
    );
    let router = Router::start(&support::example_supergraph(), &plugin, "").await;

    let claims = json!({ "tenant": "staff", "exp": now() + 600 });
    assert!(sees_customer(&router, Some(&eddsa(&claims, "ed"))).await.0);
    assert!(
        sees_customer(&router, Some(&hs256(&claims, SECRET, Some("hs"))))
            .await
            .0
    );

    for (why, token) in [
        ("an unknown kid", eddsa(&claims, "rotated-away")),
        (
            "a key the set does not hold",
            hs256(&claims, "not-the-secret", Some("hs")),
        ),
    ] {
        let (seen, response) = sees_customer(&router, Some(&token)).await;
        assert!(!seen, "{why}");
        assert_eq!(
            response.codes(),
            ["UNAUTHENTICATED"],
            "{why}: {:?}",
            response.body
        );
    }
}
