//! Path parameters as their domain types: each type says the name it has in
//! a route (`{key}`) and how its text is parsed, so that a handler takes a
//! `LockKey` or a `PoolName`, never a `String` it must remember to check,
//! and a bad value is a problem naming the parameter (`extract::AppPath`).

use crate::api::problems::{Problem, Subject, missing_problem};
use crate::domain::Missing;
use crate::domain::fencing::FencingToken;
use crate::domain::inputs::ReservationId;
use crate::domain::names::{GroupName, LimitName, LockKey, MemberName, PoolName, SessionId};

/// One path parameter: its name in the route, and its parse.
pub trait PathParam: Sized {
    /// The parameter's name in the route, as its refusal names it.
    const NAME: &'static str;

    fn parse(text: String) -> Result<Self, Problem>;
}

/// What a handler takes from its path: one parameter, or several, each
/// found by its name among the route's (percent-decoded) parameters.
pub trait PathParams: Sized {
    fn from_params(params: Vec<(String, String)>) -> Result<Self, Problem>;
}

/// The text of the parameter `name`; a route without it is a bug.
fn text(params: &mut Vec<(String, String)>, name: &str) -> Result<String, Problem> {
    let at = params
        .iter()
        .position(|(n, _)| n == name)
        .ok_or_else(|| Problem::internal(format!("the route has no path parameter {name}")))?;
    Ok(params.swap_remove(at).1)
}

impl<T: PathParam> PathParams for T {
    fn from_params(mut params: Vec<(String, String)>) -> Result<Self, Problem> {
        T::parse(text(&mut params, T::NAME)?)
    }
}

impl<A: PathParam, B: PathParam> PathParams for (A, B) {
    fn from_params(mut params: Vec<(String, String)>) -> Result<Self, Problem> {
        let a = A::parse(text(&mut params, A::NAME)?)?;
        Ok((a, B::parse(text(&mut params, B::NAME)?)?))
    }
}

/// A text type whose own parse names the parameter.
macro_rules! path_param {
    ($type:ty, $name:literal) => {
        impl PathParam for $type {
            const NAME: &'static str = $name;

            fn parse(text: String) -> Result<Self, Problem> {
                Ok(<$type>::parse(text)?)
            }
        }
    };
}

path_param!(LockKey, "key");
path_param!(PoolName, "pool");
path_param!(SessionId, "id");
path_param!(GroupName, "group");
path_param!(MemberName, "member");
path_param!(LimitName, "name");

impl PathParam for FencingToken {
    const NAME: &'static str = "fencing_token";

    fn parse(text: String) -> Result<Self, Problem> {
        Ok(FencingToken::parse(&text)?)
    }
}

/// A reservation of a pool. An id of a shape this server never issues
/// names no reservation at all: not found, where a lapsed or released one
/// is a lost lease.
impl PathParams for (PoolName, ReservationId) {
    fn from_params(mut params: Vec<(String, String)>) -> Result<Self, Problem> {
        let pool = PoolName::parse(text(&mut params, PoolName::NAME)?)?;
        let id = text(&mut params, "id")?;
        match ReservationId::parse(&id) {
            Some(issued) => Ok((pool, issued)),
            None => Err(missing_problem(
                Subject::reservation(&pool, &id),
                Missing::Reservation,
            )),
        }
    }
}
