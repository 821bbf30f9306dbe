//! A pool's allocation rules as requests send them and answers show them
//! (`rules` of `PUT /v1/pools/{pool}` and of a pool's answer).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::InvalidInput;
use crate::domain::cidr::Block;
use crate::domain::pool_rules::{MAX_RULE_ITEMS, Rules};
use crate::domain::subnet;

/// Allocation rules. A child pool has its parent's and may only narrow
/// them; a reserve that breaks one is refused naming it.
#[derive(Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "min_prefix_len": 20, "max_prefix_len": 28, "default_prefix_len": 24,
    "allowed": ["10.0.0.0/9"], "disallowed": ["10.0.1.0/24"], "required_labels": ["env"]
}))]
pub struct RulesBody {
    /// The shortest prefix a reservation may have.
    pub min_prefix_len: Option<u8>,
    /// The longest prefix a reservation may have.
    pub max_prefix_len: Option<u8>,
    /// The prefix length of a reserve that names neither `prefix_len` nor `subnet`.
    pub default_prefix_len: Option<u8>,
    /// When not empty, every reservation lies inside one of these blocks.
    #[serde(default)]
    pub allowed: Vec<String>,
    /// No reservation overlaps any of these blocks.
    #[serde(default)]
    pub disallowed: Vec<String>,
    /// Label names every reservation must carry.
    #[serde(default)]
    pub required_labels: Vec<String>,
}

fn blocks(name: &str, texts: &[String]) -> Result<Vec<Block>, InvalidInput> {
    if texts.len() > MAX_RULE_ITEMS {
        let message = format!("lists {}; the limit is {MAX_RULE_ITEMS}", texts.len());
        return Err(InvalidInput::new(format!("rules.{name}"), message));
    }
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| subnet::cidr(&format!("rules.{name}[{i}]"), t))
        .collect()
}

impl RulesBody {
    /// The rules, checked among themselves and against the pool's `cidr`.
    pub fn parse(self, cidr: Block) -> Result<Rules, InvalidInput> {
        if self.required_labels.len() > MAX_RULE_ITEMS
            || self.required_labels.iter().any(String::is_empty)
        {
            let message = format!("lists at most {MAX_RULE_ITEMS} names, none empty");
            return Err(InvalidInput::new("rules.required_labels", message));
        }
        let rules = Rules {
            min_prefix_len: self.min_prefix_len,
            max_prefix_len: self.max_prefix_len,
            default_prefix_len: self.default_prefix_len,
            allowed: blocks("allowed", &self.allowed)?,
            disallowed: blocks("disallowed", &self.disallowed)?,
            required_labels: self.required_labels.into_iter().collect(),
        };
        rules.check(cidr)?;
        Ok(rules)
    }
}

impl From<Rules> for RulesBody {
    fn from(rules: Rules) -> Self {
        let texts = |blocks: Vec<Block>| blocks.iter().map(Block::to_string).collect();
        Self {
            min_prefix_len: rules.min_prefix_len,
            max_prefix_len: rules.max_prefix_len,
            default_prefix_len: rules.default_prefix_len,
            allowed: texts(rules.allowed),
            disallowed: texts(rules.disallowed),
            required_labels: rules.required_labels.into_iter().collect(),
        }
    }
}
