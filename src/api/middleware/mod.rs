//! What every route runs under (`stack`, one layer): the request id and its
//! log span, CORS, the count and log line of each request, the host it
//! names, the caller's token, the route's query parameters and the token's
//! write rate, the load bounds and the body deadline; and the headers that
//! tell a browser how to treat each answer.

pub mod auth;
pub mod cors;
pub mod headers;
pub mod hosts;
pub mod load;
pub mod rates;
pub mod request_id;
pub mod requests;
pub mod screen;
pub(super) mod stack;
