//! Per-tenant quotas: one token bucket per tenant contract that sets a `rate_limit`, taken from
//! by every operation that uses `__search` or `__definitions`, one token per such field.
//!
//! Buckets are keyed by tenant, so one tenant's agents running in a loop empty only their own
//! bucket. The router builds a new plugin instance on every reload, and a bucket refilled by
//! each reload would be no quota: a process-wide registry finds the bucket a live instance
//! holds for the same tenant and settings, and the new instance shares it. A bucket no instance
//! holds any more (its settings changed, or its tenant is gone) goes with the last one.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::{RateLimit, Tenants};
use crate::error::{Code, RequestError};

type Bucket = Arc<DefaultDirectRateLimiter>;

/// The buckets plugin instances hold, by tenant and settings.
type Held = HashMap<(String, RateLimit), Weak<DefaultDirectRateLimiter>>;
static BUCKETS: Mutex<Option<Held>> = Mutex::new(None);

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
        let registry = registry.get_or_insert_with(HashMap::new);
        registry.retain(|_, bucket| bucket.strong_count() > 0);
        let mut buckets = HashMap::new();
        let limited = tenants
            .into_iter()
            .flat_map(|t| &t.contracts)
            .filter_map(|(name, contract)| Some((name, contract.rate_limit?)));
        for (name, limit) in limited {
            let key = (name.clone(), limit);
            let bucket = registry
                .get(&key)
                .and_then(Weak::upgrade)
                .unwrap_or_else(|| Arc::new(RateLimiter::direct(quota(&limit))));
            registry.insert(key, Arc::downgrade(&bucket));
            buckets.insert(name.clone(), (limit, bucket));
        }
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
            enforce: Default::default(),
        }
    }

    #[test]
    fn a_tenant_over_its_bucket_is_refused_and_others_are_not() {
        // Refills far slower than the test runs, however loaded the machine.
        let hourly = RateLimit {
            capacity: 3,
            refill: 1,
            interval: Duration::from_secs(3600),
        };
        let quotas = Quotas::new(Some(&tenants(hourly)));
        quotas.take("noisy", 2).unwrap();
        quotas.take("noisy", 1).unwrap();
        let refused = quotas.take("noisy", 1).unwrap_err();
        assert_eq!(refused.code, Code::RateLimited);
        let wait = refused.retry_after.unwrap();
        assert!(
            wait > Duration::from_secs(3000) && wait <= Duration::from_secs(3601),
            "{wait:?}"
        );
        for _ in 0..100 {
            quotas.take("quiet", 8).unwrap();
        }

        // A reload with the same settings shares the (empty) bucket; new settings start full.
        let reloaded = Quotas::new(Some(&tenants(hourly)));
        assert!(reloaded.take("noisy", 1).is_err());
        let changed = Quotas::new(Some(&tenants(RateLimit {
            capacity: 4,
            ..hourly
        })));
        changed.take("noisy", 4).unwrap();
        // Once no instance holds a bucket, it is gone.
        drop((quotas, reloaded));
        let again = Quotas::new(Some(&tenants(hourly)));
        again.take("noisy", 3).unwrap();
    }

    #[test]
    fn a_bucket_refills_as_configured() {
        let fast = RateLimit {
            capacity: 1,
            refill: 1,
            interval: Duration::from_millis(100),
        };
        let quotas = Quotas::new(Some(&tenants(fast)));
        quotas.take("noisy", 1).unwrap();
        let wait = quotas.take("noisy", 1).unwrap_err().retry_after.unwrap();
        assert!(wait <= Duration::from_millis(101), "{wait:?}");
        std::thread::sleep(wait);
        quotas.take("noisy", 1).unwrap();
    }
}
