//! Per-tenant quotas: one token bucket per tenant contract that sets a `rate_limit`, taken from
//! by every operation that uses `__search` or `__definitions`, one token per such field.
//!
//! Buckets are keyed by tenant, so one tenant's agents running in a loop empty only their own
//! bucket. They live in a process-wide registry, not in the plugin instance: the router builds
//! a new instance on every reload, and a bucket refilled by each reload would be no quota. A
//! reload keeps the buckets whose settings it keeps and drops the others.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::{RateLimit, Tenants};
use crate::error::{Code, RequestError};

type Bucket = Arc<DefaultDirectRateLimiter>;

/// The buckets of the latest configuration, by tenant and settings.
static BUCKETS: Mutex<Option<HashMap<(String, RateLimit), Bucket>>> = Mutex::new(None);

/// The quotas of one plugin instance.
#[derive(Default)]
pub struct Quotas {
    buckets: HashMap<String, (RateLimit, Bucket)>,
}

impl Quotas {
    /// The buckets `tenants` asks for, the same ones a previous configuration made when their
    /// settings did not change.
    pub fn new(tenants: Option<&Tenants>) -> Self {
        let mut registry = BUCKETS.lock().unwrap_or_else(|p| p.into_inner());
        let previous = registry.take().unwrap_or_default();
        let mut kept = HashMap::new();
        let mut buckets = HashMap::new();
        let limited = tenants
            .into_iter()
            .flat_map(|t| &t.contracts)
            .filter_map(|(name, contract)| Some((name, contract.rate_limit?)));
        for (name, limit) in limited {
            let key = (name.clone(), limit);
            let bucket = previous
                .get(&key)
                .cloned()
                .unwrap_or_else(|| Arc::new(RateLimiter::direct(quota(&limit))));
            buckets.insert(name.clone(), (limit, Arc::clone(&bucket)));
            kept.insert(key, bucket);
        }
        *registry = Some(kept);
        Quotas { buckets }
    }

    /// Takes `fields` tokens from `tenant`'s bucket, or says when to retry.
    pub fn take(&self, tenant: &str, fields: usize) -> Result<(), RequestError> {
        let Some((limit, bucket)) = self.buckets.get(tenant) else {
            return Ok(());
        };
        let wanted = NonZeroU32::new(u32::try_from(fields).unwrap_or(u32::MAX));
        let Some(wanted) = wanted else {
            return Ok(());
        };
        match bucket.check_n(wanted) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(limited(tenant, limit, wait))
            }
            Err(_) => Err(RequestError::new(
                Code::RateLimited,
                format!(
                    "the operation uses {fields} __search and __definitions fields, more than \
                     tenant `{tenant}`'s quota ever holds ({}); split it",
                    limit.capacity
                ),
            )),
        }
    }
}

fn limited(tenant: &str, limit: &RateLimit, wait: Duration) -> RequestError {
    // Rounded up, so a client that waits exactly this long finds its tokens.
    let retry_after = Duration::from_millis(wait.as_millis() as u64 + 1);
    let mut error = RequestError::new(
        Code::RateLimited,
        format!(
            "tenant `{tenant}` is over its quota of {} fields (refilled by {} every {}); retry in \
             {} ms",
            limit.capacity,
            limit.refill,
            humantime::format_duration(limit.interval),
            retry_after.as_millis()
        ),
    );
    error.retry_after = Some(retry_after);
    error
}

/// A bucket of `capacity` that gains one token every `interval / refill`.
fn quota(limit: &RateLimit) -> Quota {
    let capacity = NonZeroU32::new(limit.capacity).unwrap_or(NonZeroU32::MIN);
    let period = limit.interval / limit.refill.max(1);
    Quota::with_period(period.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ContractConfig;

    fn tenants(limit: RateLimit) -> Tenants {
        Tenants {
            header: "x-tenant".into(),
            default: None,
            contracts: [
                (
                    "noisy".to_string(),
                    ContractConfig {
                        rate_limit: Some(limit),
                        ..Default::default()
                    },
                ),
                ("quiet".to_string(), ContractConfig::default()),
            ]
            .into(),
            jwt: None,
        }
    }

    #[test]
    fn a_tenant_over_its_bucket_waits_and_others_do_not() {
        let limit = RateLimit {
            capacity: 3,
            refill: 1,
            interval: Duration::from_millis(200),
        };
        let quotas = Quotas::new(Some(&tenants(limit)));
        quotas.take("noisy", 2).unwrap();
        quotas.take("noisy", 1).unwrap();
        let refused = quotas.take("noisy", 1).unwrap_err();
        assert_eq!(refused.code, Code::RateLimited);
        let wait = refused.retry_after.unwrap();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_millis(201),
            "{wait:?}"
        );
        for _ in 0..100 {
            quotas.take("quiet", 8).unwrap();
        }
        std::thread::sleep(wait);
        quotas.take("noisy", 1).unwrap();
        assert!(quotas.take("noisy", 4).unwrap_err().retry_after.is_none());

        // A reload with the same settings keeps the (empty) bucket; new settings start full.
        let reloaded = Quotas::new(Some(&tenants(limit)));
        assert!(reloaded.take("noisy", 1).is_err());
        let changed = Quotas::new(Some(&tenants(RateLimit {
            capacity: 4,
            ..limit
        })));
        changed.take("noisy", 4).unwrap();
    }
}
