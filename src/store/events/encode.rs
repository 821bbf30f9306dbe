//! An event as the change log's columns: bound as the arguments of one
//! insert (`Texts::insert_event`), or as one object of the JSON array that
//! records many in one statement (`Texts::insert_events`).

use crate::domain::At;
use crate::domain::events::{Event, Reason, Resource};
use crate::domain::fencing::FencingToken;

/// An event's columns, by the names `Texts::insert_events` reads them from
/// JSON, in the order of `Texts::insert_event`'s arguments.
#[derive(serde::Serialize)]
pub struct Fields<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub at: At,
    pub key: Option<&'a str>,
    pub pool: Option<&'a str>,
    pub reservation: Option<&'a str>,
    pub subnet: Option<&'a str>,
    pub holder: &'a str,
    pub fencing_token: Option<FencingToken>,
    pub session_id: Option<&'a str>,
    pub owner: Option<&'a str>,
    pub reason: Option<&'static str>,
    pub group_name: Option<&'a str>,
    pub member: Option<&'a str>,
}

impl<'a> Fields<'a> {
    pub fn of(event: &'a Event) -> Self {
        let (key, pool, reservation, subnet) = columns_of(&event.resource);
        let (group_name, member) = group_of(&event.resource);
        Self {
            kind: event.kind.as_str(),
            at: event.at,
            key,
            pool,
            reservation,
            subnet,
            holder: &event.holder,
            fencing_token: event.fencing_token,
            session_id: event.session.as_deref(),
            owner: event.owner.as_deref(),
            reason: event.reason.map(Reason::as_str),
            group_name,
            member,
        }
    }
}

/// The `group_name` and `member` columns of a resource.
fn group_of(resource: &Resource) -> (Option<&str>, Option<&str>) {
    match resource {
        Resource::Group { name, member } => (Some(name.as_str()), member.as_deref()),
        _ => (None, None),
    }
}

/// The `key`, `pool`, `reservation` and `subnet` columns of a resource.
fn columns_of(resource: &Resource) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    match resource {
        // A rate limit's name is kept as a key is: scoped, filtered and
        // read by the same index; its event's type tells the two apart.
        Resource::Lock { key: name } | Resource::Limit { name } => {
            (Some(name.as_str()), None, None, None)
        }
        Resource::Reservation { pool, id, subnet } => (
            None,
            Some(pool.as_str()),
            Some(id.as_str()),
            Some(subnet.as_str()),
        ),
        Resource::Session | Resource::Group { .. } => (None, None, None, None),
    }
}
