//! The bodies of the rate limit routes: requests as clients send them,
//! parsed in the order the API documents their fields, and answers as the
//! server shows a limit and a take.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::domain::limit::LimitView;
use crate::domain::rate::RateLimit;
use crate::domain::time::Ms;
use crate::domain::{InvalidInput, Revision, validate};

/// Defines a rate limit, or changes its numbers.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"rate": 100, "period_ms": 1000, "burst": 20}))]
pub struct PutLimitRequest {
    /// Tokens added per `period_ms`.
    pub rate: i64,
    /// The period of `rate`, in milliseconds (at most a year).
    pub period_ms: i64,
    /// The most tokens the bucket holds at once (default `rate`); an empty
    /// bucket may take at most ten years to fill.
    pub burst: Option<i64>,
}

impl PutLimitRequest {
    /// The numbers, the first bad field named in the order documented.
    pub fn parse(&self) -> Result<RateLimit, InvalidInput> {
        // A negative number is refused as 0 is, with the field's bounds.
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        RateLimit::new(
            count(self.rate),
            count(self.period_ms),
            self.burst.map(count),
        )
    }
}

/// Takes tokens from a limit.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"cost": 1, "wait_ms": 500}))]
pub struct TakeRequest {
    /// Tokens to take (default 1), at most the limit's `burst`.
    pub cost: Option<i64>,
    /// How long to wait on the server until `cost` can be taken (default 0:
    /// answer at once), up to the server's `--max-wait`.
    #[schema(minimum = 0)]
    pub wait_ms: Option<i64>,
}

impl TakeRequest {
    /// The cost and the wait, the first bad field named.
    pub fn parse(&self, max_wait_ms: Ms) -> Result<(u64, Ms), InvalidInput> {
        let cost = crate::domain::limit::cost("cost", self.cost)?;
        let wait_ms = Ms::new(self.wait_ms.unwrap_or(0));
        validate::duration_up_to("wait_ms", wait_ms, max_wait_ms)?;
        Ok((cost, wait_ms))
    }
}

/// Gives tokens back to a limit.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"cost": 1}))]
pub struct RefundRequest {
    /// Tokens to give back; the bucket never holds more than `burst`.
    pub cost: i64,
}

/// A rate limit and what it holds now.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"name": "api/search", "rate": 100, "period_ms": 1000,
    "burst": 20, "available": 17, "full_in_ms": 30}))]
pub struct LimitBody {
    pub name: String,
    pub rate: u64,
    pub period_ms: u64,
    pub burst: u64,
    /// Whole tokens that may be taken now.
    pub available: u64,
    /// Milliseconds until the bucket is full (0 when it is).
    pub full_in_ms: u64,
}

impl LimitBody {
    pub fn new(name: String, view: LimitView) -> Self {
        Self {
            name,
            rate: view.numbers.rate(),
            period_ms: view.numbers.period_ms(),
            burst: view.numbers.burst(),
            available: view.level.available,
            full_in_ms: view.level.full_in_ms,
        }
    }
}

/// What a take took, and what the limit holds after it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"cost": 1, "available": 16, "retry_after_ms": 0, "full_in_ms": 40}))]
pub struct TakeBody {
    pub cost: u64,
    /// Whole tokens that may be taken now.
    pub available: u64,
    /// Always 0 on a take that took (a denial answers 429 with its own).
    pub retry_after_ms: u64,
    /// Milliseconds until the bucket is full again.
    pub full_in_ms: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LimitPageBody {
    pub items: Vec<LimitBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LimitListQuery {
    /// Only limits whose names start with this text.
    pub prefix: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}
