//! Request schemas for the OpenAPI document, read off the handlers' own argument types
//! (as aide and utoipa-axum do): every extractor says what it adds to an operation — a
//! `JsonBody<T>` its body schema, a `Query<T>` its parameters, `State` or `Viewer`
//! nothing. The route table asks [`document`] for each handler, so the document cannot
//! drift from the types the handlers really parse, and a handler with an extractor that
//! does not say what it takes does not compile.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, Uri};
use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::http::auth::{InOrg, MaybeCaller, Viewer};
use crate::http::error::ApiError;
use crate::http::extract::JsonBody;
use crate::http::reply::{Answer, PrivateAnswer, Reply};

/// What the route table knows about a handler's request.
#[derive(Default)]
pub struct Operation {
    /// The JSON object the body must be.
    pub body: Option<Schema>,
    /// The query string's parameters, as one object schema.
    pub query: Option<Schema>,
    /// The body names an organization (`domain`, `organizationId`, `organization_id` or
    /// `id`): the OrgMember and OrgAdmin guards.
    pub names_org: bool,
    /// The body is not JSON (the payment webhook's signed bytes).
    pub raw_body: bool,
    /// The success body, for handlers that return an [`Answer`].
    pub response: Option<Schema>,
    /// The success status when it is not 200 (`Accepted`: 202).
    pub success_status: Option<u16>,
    /// The success body is a stream of server-sent events whose `data` are `response`.
    pub event_stream: bool,
    /// Success is a redirect (`Location`), with no body.
    pub redirect: bool,
    /// There is no success answer.
    pub never_succeeds: bool,
    /// The route honours the `Idempotency-Key` header.
    pub idempotency_key: bool,
    /// The body is a file, not JSON (`application/octet-stream`); what the text says of
    /// the types it may be.
    pub binary_body: Option<&'static str>,
}

/// One handler argument's part of the operation.
pub trait DocArg {
    fn document(_op: &mut Operation, _gen: &mut SchemaGenerator) {}
}

impl<S> DocArg for State<S> {}
impl DocArg for Viewer {}
impl DocArg for MaybeCaller {}
impl DocArg for crate::http::auth::Guest {}
impl DocArg for crate::http::auth::Purchaser {}
impl<T> DocArg for Path<T> {}
impl DocArg for HeaderMap {}
impl DocArg for Method {}
impl DocArg for Uri {}
impl<T> DocArg for axum::extract::ConnectInfo<T> {}
impl DocArg for crate::http::extract::ClientAddr {}

impl DocArg for crate::http::extract::IdempotencyKey {
    fn document(op: &mut Operation, _: &mut SchemaGenerator) {
        op.idempotency_key = true;
    }
}

impl DocArg for Bytes {
    fn document(op: &mut Operation, _: &mut SchemaGenerator) {
        op.raw_body = true;
    }
}

impl<T: JsonSchema> DocArg for JsonBody<T> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        // Inline: request bodies are the operation's own (many are named `CreateBody`),
        // so they take no name that could be numbered and move between releases.
        op.body = Some(T::json_schema(gen));
    }
}

impl<T: JsonSchema> DocArg for Query<T> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        // Inline, so the parameters can be listed one by one.
        op.query = Some(T::json_schema(gen));
    }
}

impl<T: JsonSchema, const ADMIN: bool> DocArg for InOrg<T, ADMIN> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.body = Some(T::json_schema(gen));
        op.names_org = true;
    }
}

/// What a handler's return type says about its success body.
pub trait DocReturn {
    fn document(_op: &mut Operation, _gen: &mut SchemaGenerator) {}
}

impl DocReturn for Reply {}
/// Redirects and other answers that are not a JSON body.
impl DocReturn for axum::response::Response {}
/// A handler that only ever answers an error (the spec's `POST /api/404`).
impl DocReturn for ApiError {
    fn document(op: &mut Operation, _: &mut SchemaGenerator) {
        op.never_succeeds = true;
    }
}
impl DocReturn for Result<Reply, ApiError> {}
impl DocReturn for Result<axum::response::Response, ApiError> {}

impl<E> DocReturn for Result<crate::http::reply::SignedRedirect, E> {
    fn document(op: &mut Operation, _: &mut SchemaGenerator) {
        op.success_status = Some(302);
        op.redirect = true;
    }
}

impl<T: JsonSchema> DocReturn for Result<Answer<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::Accepted<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
        op.success_status = Some(202);
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::HeadedAnswer<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::EventStream<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
        op.event_stream = true;
    }
}

impl<T: JsonSchema> DocReturn for Result<PrivateAnswer<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::Recorded<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::OrPage<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

impl<T: JsonSchema> DocReturn for Result<crate::http::reply::Prebuilt<T>, ApiError> {
    fn document(op: &mut Operation, gen: &mut SchemaGenerator) {
        op.response = Some(gen.subschema_for::<T>());
    }
}

/// Implemented for every handler whose arguments all implement [`DocArg`] and whose
/// result implements [`DocReturn`].
pub trait DocHandler<Args> {
    fn operation(gen: &mut SchemaGenerator) -> Operation;
}

macro_rules! doc_handler {
    ($($arg:ident),*) => {
        impl<F, Fut, $($arg: DocArg),*> DocHandler<($($arg,)*)> for F
        where
            F: Fn($($arg),*) -> Fut,
            Fut: std::future::Future,
            Fut::Output: DocReturn,
        {
            #[allow(unused_variables, unused_mut)]
            fn operation(gen: &mut SchemaGenerator) -> Operation {
                let mut op = Operation::default();
                $($arg::document(&mut op, gen);)*
                <Fut::Output as DocReturn>::document(&mut op, gen);
                op
            }
        }
    };
}

doc_handler!();
doc_handler!(A);
doc_handler!(A, B);
doc_handler!(A, B, C);
doc_handler!(A, B, C, D);
doc_handler!(A, B, C, D, E);

/// The request side of `handler`'s operation.
pub fn document<H: DocHandler<Args>, Args>(_handler: H, gen: &mut SchemaGenerator) -> Operation {
    H::operation(gen)
}
