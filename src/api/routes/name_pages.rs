//! The page a listing by name asks for (groups, rate limits): its size,
//! where it starts, and the key prefixes the caller may read under the one
//! it names.

use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::Problem;
use crate::domain::inputs::{self, PageLimit};
use crate::domain::names::KeyPrefix;

pub struct NamePageAsked {
    pub limit: PageLimit,
    pub after: Option<String>,
    pub prefixes: Vec<KeyPrefix>,
}

impl NamePageAsked {
    /// The query's page, each bad parameter named.
    pub fn parse(
        caller: &Caller,
        state: &AppState,
        prefix: Option<String>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Self, Problem> {
        let limit = PageLimit::parse(limit, state.leases.limits.max_page)?;
        let after = inputs::name_cursor(cursor)?;
        let prefixes = caller
            .lock_prefixes(prefix.unwrap_or_default())
            .into_iter()
            .map(KeyPrefix::parse)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            limit,
            after,
            prefixes,
        })
    }
}
