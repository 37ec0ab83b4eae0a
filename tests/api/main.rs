//! Black-box tests: each starts the real server and speaks HTTP to it.

mod common;

mod cli;
mod envelope;
mod limits;
mod route_table;
mod users;
