//! A pool's allocation rules: the prefix lengths a reserve may ask for (and
//! the one it gets when it names none), the blocks it may and may not take,
//! and the labels it must carry. A child has its parent's rules and may only
//! narrow them; a pool keeps its effective rules, fixed when it is created,
//! so a reserve reads them from its own pool alone.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::InvalidInput;
use super::allocator::{Want, subtract};
use super::cidr::Block;

/// The most blocks `allowed` or `disallowed` may list, and names
/// `required_labels` may list.
pub const MAX_RULE_ITEMS: usize = 64;

/// A rule, as requests and problems name it.
pub type RuleName = &'static str;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    pub min_prefix_len: Option<u8>,
    pub max_prefix_len: Option<u8>,
    pub default_prefix_len: Option<u8>,
    /// When not empty, every reservation lies inside one of these.
    pub allowed: Vec<Block>,
    /// No reservation overlaps any of these.
    pub disallowed: Vec<Block>,
    /// Label names every reservation carries.
    pub required_labels: BTreeSet<String>,
}

/// A rule broken: which, and how, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    pub rule: RuleName,
    pub detail: String,
}

fn breach(rule: RuleName, detail: String) -> Breach {
    Breach { rule, detail }
}

impl Rules {
    /// Checks the rules among themselves and against the pool's block
    /// (the fields named as `rules.…`).
    pub fn check(&self, pool: Block) -> Result<(), InvalidInput> {
        let lens = [
            ("min_prefix_len", self.min_prefix_len),
            ("max_prefix_len", self.max_prefix_len),
            ("default_prefix_len", self.default_prefix_len),
        ];
        let width = pool.family().width();
        for (name, len) in lens {
            if let Some(len) = len.filter(|l| *l < pool.prefix_len() || *l > width) {
                let range = format!("{} to {width}", pool.prefix_len());
                let message = format!("is {len}; a prefix length of {pool} is {range}");
                return Err(InvalidInput::new(format!("rules.{name}"), message));
            }
        }
        if let (Some(min), Some(max)) = (self.min_prefix_len, self.max_prefix_len)
            && min > max
        {
            let message = format!("is {min}, above max_prefix_len {max}");
            return Err(InvalidInput::new("rules.min_prefix_len", message));
        }
        if let Some(len) = self.default_prefix_len
            && !self.fits(len)
        {
            let message = format!("is {len}, outside min_prefix_len and max_prefix_len");
            return Err(InvalidInput::new("rules.default_prefix_len", message));
        }
        for (name, blocks) in [("allowed", &self.allowed), ("disallowed", &self.disallowed)] {
            if let Some(i) = blocks.iter().position(|b| b.family() != pool.family()) {
                let message = format!("{} is not of the family of {pool}", blocks[i]);
                return Err(InvalidInput::new(format!("rules.{name}[{i}]"), message));
            }
        }
        Ok(())
    }

    fn fits(&self, len: u8) -> bool {
        self.min_prefix_len.is_none_or(|m| len >= m) && self.max_prefix_len.is_none_or(|m| len <= m)
    }

    /// The effective rules of a child whose own are `own`, under its
    /// parent's (`self`): a rule that would widen the parent's is refused.
    pub fn narrow(&self, own: &Rules) -> Result<Rules, Breach> {
        let mut rules = self.clone();
        if let Some(min) = own.min_prefix_len {
            if self.min_prefix_len.is_some_and(|m| min < m) || !self.fits(min) {
                return Err(breach(
                    "min_prefix_len",
                    format!("{min} widens the parent's"),
                ));
            }
            rules.min_prefix_len = Some(min);
        }
        if let Some(max) = own.max_prefix_len {
            if self.max_prefix_len.is_some_and(|m| max > m) || !self.fits(max) {
                return Err(breach(
                    "max_prefix_len",
                    format!("{max} widens the parent's"),
                ));
            }
            rules.max_prefix_len = Some(max);
        }
        if let Some(len) = own.default_prefix_len {
            if !rules.fits(len) {
                let detail = format!("{len} is outside the prefix lengths the pool allows");
                return Err(breach("default_prefix_len", detail));
            }
            rules.default_prefix_len = Some(len);
        }
        rules.default_prefix_len = rules.default_prefix_len.filter(|l| rules.fits(*l));
        if !own.allowed.is_empty() {
            let outside = own.allowed.iter().find(|b| {
                !self.allowed.is_empty() && !self.allowed.iter().any(|a| a.contains(**b))
            });
            if let Some(b) = outside {
                return Err(breach(
                    "allowed",
                    format!("{b} lies outside the parent's allowed blocks"),
                ));
            }
            rules.allowed = own.allowed.clone();
        }
        rules.disallowed.extend(own.disallowed.iter().copied());
        rules.disallowed.sort();
        rules.disallowed.dedup();
        rules
            .required_labels
            .extend(own.required_labels.iter().cloned());
        Ok(rules)
    }

    /// What a reserve asks for once the pool's default fills in a missing
    /// prefix length; `None` when nothing says.
    pub fn want(&self, asked: Option<Want>) -> Option<Want> {
        asked.or(self.default_prefix_len.map(Want::PrefixLen))
    }

    /// Whether a reserve of `want` carrying `labels` keeps the rules.
    pub fn admit<'a>(
        &self,
        want: Want,
        mut labels: impl Iterator<Item = &'a String>,
    ) -> Result<(), Breach> {
        let len = want.prefix_len();
        if let Some(min) = self.min_prefix_len.filter(|m| len < *m) {
            return Err(breach(
                "min_prefix_len",
                format!("/{len} is shorter than /{min}"),
            ));
        }
        if let Some(max) = self.max_prefix_len.filter(|m| len > *m) {
            return Err(breach(
                "max_prefix_len",
                format!("/{len} is longer than /{max}"),
            ));
        }
        if let Want::Subnet(subnet) = want {
            if !self.allowed.is_empty() && !self.allowed.iter().any(|a| a.contains(subnet)) {
                return Err(breach(
                    "allowed",
                    format!("{subnet} lies outside the allowed blocks"),
                ));
            }
            if let Some(d) = self.disallowed.iter().find(|d| d.overlaps(subnet)) {
                return Err(breach(
                    "disallowed",
                    format!("{subnet} overlaps {d}, disallowed"),
                ));
            }
        }
        let carried: BTreeSet<&String> = labels.by_ref().collect();
        if let Some(missing) = self.required_labels.iter().find(|l| !carried.contains(l)) {
            return Err(breach(
                "required_labels",
                format!("the label {missing:?} is required"),
            ));
        }
        Ok(())
    }

    /// The blocks of `pool` a reserve never takes: the disallowed ones and
    /// what lies outside the allowed ones.
    pub fn excludes(&self, pool: Block) -> Vec<Block> {
        let mut out = self.disallowed.clone();
        if !self.allowed.is_empty() {
            out.extend(subtract(pool, &self.allowed));
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let texts = |blocks: &[Block]| blocks.iter().map(Block::to_string).collect::<Vec<_>>();
        json!({
            "min_prefix_len": self.min_prefix_len,
            "max_prefix_len": self.max_prefix_len,
            "default_prefix_len": self.default_prefix_len,
            "allowed": texts(&self.allowed),
            "disallowed": texts(&self.disallowed),
            "required_labels": self.required_labels,
        })
    }

    /// The rules `to_json` wrote; `None` for any other value.
    pub fn from_json(value: &Value) -> Option<Rules> {
        let len = |name: &str| match &value[name] {
            Value::Null => Some(None),
            v => v.as_u64().and_then(|n| u8::try_from(n).ok()).map(Some),
        };
        let blocks = |name: &str| -> Option<Vec<Block>> {
            let items = value[name].as_array()?;
            items
                .iter()
                .map(|b| Block::parse(b.as_str()?).ok())
                .collect()
        };
        let labels = value["required_labels"].as_array()?;
        Some(Rules {
            min_prefix_len: len("min_prefix_len")?,
            max_prefix_len: len("max_prefix_len")?,
            default_prefix_len: len("default_prefix_len")?,
            allowed: blocks("allowed")?,
            disallowed: blocks("disallowed")?,
            required_labels: labels
                .iter()
                .map(|l| l.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
        })
    }
}

#[cfg(test)]
#[path = "pool_rules_tests.rs"]
mod tests;
