//! Black-box tests: each starts the real server and speaks HTTP to it.

mod common;

mod accounts;
mod analytics;
mod appstore;
mod architecture;
mod authz;
mod billing;
mod browser;
mod checkout;
mod cli;
mod credits;
mod data;
mod downloads;
mod envelope;
mod fuzz;
mod identity;
mod inproc;
mod inventory;
mod jobs;
mod kv;
mod licenses;
mod limits;
mod marketplace;
mod organizations;
mod posts;
mod records;
mod route_table;
mod security;
mod slide_helpers;
mod slides;
mod slides_findings;
mod storage;
mod stripe;
mod telemetry;
mod users;
