//! Posts: `/api/posts*` (part 2, "Posts" and "Post rules"). A post starts private and is
//! published by `data.public: true` (and not `data.private: true`); who reads an
//! unpublished one is `domain::posts::may_read`. `markdown` becomes TipTap/ProseMirror
//! nodes in `data.editorContent` and its text `data.body`. Threads are posts of type
//! `THREAD`; a reply is a post created with the `thread_id` of one (docs/api.md).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::db::cache::CachedPost;
use crate::db::posts::{self as store, Filter, OwnedPost, PostFields, PostRow};
use crate::domain::posts::{self as rules, Readable};
use crate::domain::{records, richtext};
use crate::http::auth::{Caller, MaybeCaller, Viewer};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{IdBody, JsonBody};
use crate::http::reply::{prebuild, Answer, Prebuilt, PrivateAnswer};
use crate::http::request::{Limit, NonBlank, Offset};
use crate::state::AppState;
use crate::wire::posts::{AdminStats, Backlink, Post, Reception, ReceptionData, Referrer, Thread};
use crate::wire::{Data, Deleted, Page, Saved, True};

/// The type of a thread's opening post.
const THREAD: &str = "THREAD";

fn not_found() -> ApiError {
    ApiError::not_found("post not found")
}

fn readable(p: &PostRow) -> Readable<'_> {
    Readable {
        owner_id: &p.user_id,
        organization_id: p.organization_id.as_deref(),
        data: &p.data.0,
    }
}

/// The row's flag columns from its `data`.
fn fields<'a>(slug: Option<&'a str>, src: Option<&'a str>, data: &'a Value) -> PostFields<'a> {
    PostFields {
        slug,
        src,
        data,
        published: rules::published(data),
        private: rules::flag(data, "private"),
        team_post: rules::flag(data, "teamPost"),
    }
}

fn post_type(raw: &str) -> ApiResult<String> {
    let t = raw.trim();
    if t.is_empty() || t.chars().count() > 100 {
        return Err(ApiError::bad_request(
            "`type` must be a string of 1 to 100 characters",
        ));
    }
    Ok(t.to_owned())
}

/// Sets `body` and `editorContent` from markdown (rule 1). Markdown that could not be
/// stored (`body` alone would pass `MAX_DATA_BYTES`) is refused before it is parsed, so
/// the document built from it stays a bounded multiple of a storable input.
fn apply_markdown(data: &mut Map<String, Value>, markdown: &str) -> ApiResult<()> {
    if markdown.len() > records::MAX_DATA_BYTES {
        return Err(records::RecordError::TooLarge.into());
    }
    data.insert("body".into(), json!(markdown));
    data.insert("editorContent".into(), richtext::markdown_to_doc(markdown));
    Ok(())
}

fn post_list(rows: Vec<PostRow>, total: i64, limit: i64, offset: i64) -> Answer<Page<Post>> {
    Answer(Page::new(
        rows.iter().map(Post::from).collect(),
        total,
        limit,
        offset,
    ))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct ListBody {
    /// The post type to list.
    r#type: NonBlank<100>,
    organization_id: Option<String>,
    /// The author, by id, username or email.
    user_id: Option<String>,
    username: Option<String>,
    email: Option<String>,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `POST /api/posts` (Public): posts of a type, newest first, never `data.private: true`.
/// For `NOTE`, `DIAGRAM_PAGE` and `TEAM_POST` only published posts are listed; other
/// types list personal posts always (the spec), and organization posts and replies only
/// when the caller could read them, or their thread, one by one (`rules::may_read`;
/// security round 2, H5; docs/api.md "Posts").
pub async fn list(
    State(app): State<AppState>,
    caller: MaybeCaller,
    JsonBody(body): JsonBody<ListBody>,
) -> ApiResult<Answer<Page<Post>>> {
    let caller = caller.0.as_deref();
    let (limit, offset) = (body.limit.get(), body.offset.get());
    let post_type = post_type(&body.r#type)?;
    let author = match (&body.user_id, &body.username, &body.email) {
        (Some(id), _, _) => Some(id.clone()),
        (None, Some(name), _) => crate::db::users::by_username(&app.db, name)
            .await?
            .map(|u| u.id)
            .or_else(|| Some(String::new())),
        (None, None, Some(email)) => crate::db::users::by_email(&app.db, email)
            .await?
            .map(|u| u.id)
            .or_else(|| Some(String::new())),
        _ => None,
    };
    let published_only = rules::PUBLISHED_ONLY_TYPES.contains(&post_type.as_str());
    let filter = Filter {
        r#type: Some(&post_type),
        organization_id: body.organization_id.as_deref(),
        user_id: author.as_deref(),
        published_only,
        no_private: true,
        reader: app.domain.readers.list_reader(caller).await?,
        ..Filter::default()
    };
    let (rows, total) = store::list(&app.db, &filter, limit, offset).await?;
    Ok(post_list(rows, total, limit, offset))
}

/// A single-post read: the privacy rule (consulting the public-access table each time),
/// reception tracking, and `Cache-Control: private, no-store` on what is not published.
async fn read(
    app: &AppState,
    caller: Option<&Caller>,
    headers: &HeaderMap,
    cached: Option<Arc<CachedPost>>,
) -> ApiResult<Prebuilt<Data<Post>>> {
    let cached = cached.ok_or_else(not_found)?;
    let post = &cached.row;
    if !app.domain.readers.may_read(caller, &readable(post)).await? {
        return Err(not_found());
    }
    if rules::flag(&post.data.0, "reception_tracking") {
        let referrer = headers
            .get("x-referrer")
            .and_then(|v| v.to_str().ok())
            .and_then(|url| {
                Some((
                    rules::url_domain(url)?,
                    url.chars().take(2000).collect::<String>(),
                ))
            });
        let (db, id) = (app.db.clone(), post.id.clone());
        let day = chrono::Utc::now().format("%Y-%m-%d").to_string();
        // The read does not wait for its own count.
        tokio::spawn(async move {
            let r = referrer.as_ref().map(|(d, u)| (d.as_str(), u.as_str()));
            if let Err(e) = store::record_visit(&db, &id, &day, r).await {
                tracing::warn!(error = %e, post = id, "post visit not recorded");
            }
        });
    }
    let answer = match cached.answer.get() {
        Some(bytes) => bytes.clone(),
        None => {
            let bytes = prebuild(&Data {
                data: Post::from(post),
            })
            .ok_or_else(|| ApiError::internal("a post answer that is not an object"))?;
            cached.answer.get_or_init(|| bytes).clone()
        }
    };
    Ok(if post.published {
        Prebuilt::public(answer)
    } else {
        Prebuilt::private(answer)
    })
}

/// `GET /api/posts/{id}` (Public or an authorized reader).
pub async fn get(
    State(app): State<AppState>,
    caller: MaybeCaller,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult<Prebuilt<Data<Post>>> {
    let post = store::get(&app.db, &id).await?.map(CachedPost::new);
    read(&app, caller.0.as_deref(), &headers, post).await
}

/// `GET /api/posts/public/{slug}`: as by id. The row comes from the read cache
/// (`crate::db::cache`: post changes are announced to every process) or one query; who may
/// read it is decided on every request.
pub async fn by_slug(
    State(app): State<AppState>,
    caller: MaybeCaller,
    headers: HeaderMap,
    Path(slug): Path<String>,
) -> ApiResult<Prebuilt<Data<Post>>> {
    let slug = slug.to_lowercase();
    let cache = &app.caches.posts;
    let post = match cache.get(&slug) {
        Some(post) => Some(post),
        None => {
            let ticket = cache.ticket(&slug);
            let post = store::by_slug(&app.db, &slug).await?.map(CachedPost::new);
            if let Some(p) = &post {
                cache.fill(ticket, slug, p.clone());
            }
            post
        }
    };
    read(&app, caller.0.as_deref(), &headers, post).await
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct CreateBody {
    /// `GENERAL`, `DIAGRAM_PAGE`, `NOTE`, `TEAM_POST`, `THREAD` or any other string.
    r#type: NonBlank<100>,
    /// Becomes `data`.
    fields: Option<Map<String, Value>>,
    /// Publishes under this organization (the caller must be a member).
    domain: Option<String>,
    /// A unique source identifier.
    src: Option<NonBlank<500>>,
    /// A unique slug (`/api/posts/public/{slug}`).
    #[schemars(regex(pattern = r"^\s*[A-Za-z0-9][A-Za-z0-9._-]{0,199}\s*$"))]
    slug: Option<String>,
    /// Parsed into `data.editorContent` and kept as `data.body` (wins over `fields.body`).
    markdown: Option<String>,
    /// Makes this post a reply to that thread.
    thread_id: Option<String>,
}

/// `POST /api/posts/create` (V10): a private post; 409 when `slug` or `src` is taken.
pub async fn create(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<CreateBody>,
) -> ApiResult<Answer<Saved<Post>>> {
    let post_type = post_type(&body.r#type)?;
    let org_id = app
        .domain
        .orgs
        .member_org(&caller, body.domain.as_deref())
        .await?;
    if let Some(thread) = &body.thread_id {
        let t = store::get(&app.db, thread).await?.ok_or_else(not_found)?;
        if !app
            .domain
            .readers
            .may_read(Some(&caller), &readable(&t))
            .await?
        {
            return Err(not_found());
        }
        if t.r#type != THREAD || t.thread_id.is_some() {
            return Err(ApiError::bad_request(
                "`thread_id` must name a post of type THREAD",
            ));
        }
    }
    let mut data = body.fields.unwrap_or_default();
    match &body.markdown {
        Some(md) => apply_markdown(&mut data, md)?,
        None => {
            if !data.get("editorContent").is_some_and(Value::is_object) {
                data.insert("editorContent".into(), richtext::empty_doc());
            }
        }
    }
    let data = Value::Object(data);
    records::check_data(&data)?;
    let slug = body.slug.as_deref().map(rules::slug).transpose()?;
    let src = body.src.as_deref().map(rules::src).transpose()?;
    let f = fields(slug.as_deref(), src.as_deref(), &data);
    let (published, private, team_post) = (f.published, f.private, f.team_post);
    let post = app
        .posts
        .create(OwnedPost {
            r#type: post_type,
            user_id: caller.id.clone(),
            organization_id: org_id,
            thread_id: body.thread_id,
            slug,
            src,
            data,
            published,
            private,
            team_post,
        })
        .await?;
    Ok(Answer(Saved::new(Post::from(&post))))
}

/// The post if the caller may change it: its owner or a platform administrator. A post
/// the caller cannot even read is a 404; one they read but do not own, a 403.
async fn owned(app: &AppState, caller: &Arc<Caller>, id: &str) -> ApiResult<PostRow> {
    let post = store::get(&app.db, id).await?.ok_or_else(not_found)?;
    if post.user_id == caller.id || caller.is_admin() {
        return Ok(post);
    }
    if app
        .domain
        .readers
        .may_read(Some(caller), &readable(&post))
        .await?
    {
        Err(ApiError::forbidden(
            "only the post's author or an administrator may change it",
        ))
    } else {
        Err(not_found())
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
#[schemars(rename = "PostUpdates")]
pub struct Updates {
    /// Deep-merged into `data` (objects merge at every depth, `null` removes a key).
    data: Option<Map<String, Value>>,
    /// A new slug, or `null` to clear it.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<String>")]
    slug: Option<Option<String>>,
    /// A new src, or `null` to clear it.
    #[serde(default, deserialize_with = "crate::http::extract::present")]
    #[schemars(with = "Option<String>")]
    src: Option<Option<String>>,
    /// Replaces `data.editorContent` and `data.body`.
    markdown: Option<String>,
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct UpdateBody {
    id: String,
    updates: Updates,
}

/// `POST /api/posts/update` (V10, the author or an administrator).
pub async fn update(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<UpdateBody>,
) -> ApiResult<Answer<Saved<Post>>> {
    let mut post = owned(&app, &caller, &body.id).await?;
    let u = &body.updates;
    let slug = match &u.slug {
        Some(Some(s)) => Some(Some(rules::slug(s)?)),
        Some(None) => Some(None),
        None => None,
    };
    let src = match &u.src {
        Some(Some(s)) => Some(Some(rules::src(s)?)),
        Some(None) => Some(None),
        None => None,
    };
    for _ in 0..records::WRITE_TRIES {
        let mut data = post.data.0.as_object().cloned().unwrap_or_default();
        if let Some(changes) = &u.data {
            rules::deep_merge(&mut data, changes);
        }
        if let Some(md) = &u.markdown {
            apply_markdown(&mut data, md)?;
        }
        let data = Value::Object(data);
        records::check_data(&data)?;
        let slug = slug.clone().unwrap_or_else(|| post.slug.clone());
        let src = src.clone().unwrap_or_else(|| post.src.clone());
        let next = fields(slug.as_deref(), src.as_deref(), &data);
        if let Some(done) = store::write(&app.db, &post.id, post.version, &next).await? {
            let done = app.caches.announce(done).await;
            return Ok(Answer(Saved::new(Post::from(&done))));
        }
        post = store::get(&app.db, &post.id).await?.ok_or_else(not_found)?;
    }
    Err(records::RecordError::Busy.into())
}

/// `POST /api/posts/delete` (the author or an administrator): the post, its replies and
/// its reception.
pub async fn delete(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    JsonBody(body): JsonBody<IdBody>,
) -> ApiResult<Answer<Deleted>> {
    let post = owned(&app, &caller, &body.id).await?;
    let deleted = store::delete(&app.db, &post.id).await?;
    app.caches.announce(deleted).await;
    Ok(Answer(Deleted::new(post.id)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct StatsBody {
    /// One type; all types (with a count per type) when omitted.
    r#type: Option<NonBlank<100>>,
}

/// `POST /api/posts/admin-stats` (Admin100): platform-wide counts.
pub async fn admin_stats(
    State(app): State<AppState>,
    JsonBody(body): JsonBody<StatsBody>,
) -> ApiResult<Answer<AdminStats>> {
    let post_type = body.r#type.as_deref().map(post_type).transpose()?;
    let stats = store::stats(&app.db, post_type.as_deref()).await?;
    let by_type = match post_type {
        Some(_) => None,
        None => Some(store::counts_by_type(&app.db).await?.into_iter().collect()),
    };
    Ok(Answer(AdminStats {
        r#type: post_type,
        data: stats.into(),
        by_type,
    }))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct PageBody {
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `POST /api/posts/all-threads` (Public): published threads (and the caller's own),
/// newest first, each with `reply_count` (its published replies).
pub async fn all_threads(
    State(app): State<AppState>,
    caller: MaybeCaller,
    JsonBody(body): JsonBody<PageBody>,
) -> ApiResult<Answer<Page<Thread>>> {
    let (limit, offset) = (body.limit.get(), body.offset.get());
    let filter = Filter {
        r#type: Some(THREAD),
        top_level: true,
        published_only: true,
        or_owner: caller.0.as_ref().map(|c| c.id.as_str()),
        ..Filter::default()
    };
    let (rows, total) = store::list(&app.db, &filter, limit, offset).await?;
    let counts = store::reply_counts(&app.db, filter.or_owner, limit, offset).await?;
    let data = rows
        .iter()
        .map(|r| Thread {
            post: Post::from(r),
            reply_count: counts.get(&r.id).copied().unwrap_or(0),
        })
        .collect();
    Ok(Answer(Page::new(data, total, limit, offset)))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct RepliesBody {
    /// The thread.
    id: String,
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `POST /api/posts/all-thread-replies` (Public): a thread's published replies (and the
/// caller's own), newest first; 404 when the caller cannot read the thread.
pub async fn all_thread_replies(
    State(app): State<AppState>,
    caller: MaybeCaller,
    JsonBody(body): JsonBody<RepliesBody>,
) -> ApiResult<Answer<Page<Post>>> {
    let (limit, offset) = (body.limit.get(), body.offset.get());
    let thread = store::get(&app.db, &body.id).await?.ok_or_else(not_found)?;
    if !app
        .domain
        .readers
        .may_read(caller.0.as_deref(), &readable(&thread))
        .await?
    {
        return Err(not_found());
    }
    let filter = Filter {
        thread_id: Some(&thread.id),
        published_only: true,
        or_owner: caller.0.as_ref().map(|c| c.id.as_str()),
        ..Filter::default()
    };
    let (rows, total) = store::list(&app.db, &filter, limit, offset).await?;
    Ok(post_list(rows, total, limit, offset))
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct OrgPostsBody {
    /// 1 to 200, default 50.
    #[serde(default)]
    limit: Limit<50, 200>,
    /// 0 or more (default 0).
    #[serde(default)]
    offset: Offset,
}

/// `POST /api/posts/public/organizations/{id}` (Public): the organization's published
/// posts, newest first.
pub async fn organization_posts(
    State(app): State<AppState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<OrgPostsBody>,
) -> ApiResult<Answer<Page<Post>>> {
    let (limit, offset) = (body.limit.get(), body.offset.get());
    let org = crate::db::organizations::by_id(&app.db, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
    let filter = Filter {
        organization_id: Some(&org.id),
        published_only: true,
        ..Filter::default()
    };
    let (rows, total) = store::list(&app.db, &filter, limit, offset).await?;
    Ok(post_list(rows, total, limit, offset))
}

/// `GET /api/posts/reception/{id}` (V10, the author or an administrator):
/// `{success, data: {post_id, visits, referrers, backlinks}}`; `visits` maps the day
/// (its UTC midnight, RFC 3339) to a count.
pub async fn reception(
    State(app): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> ApiResult<PrivateAnswer<Reception>> {
    let post = owned(&app, &caller, &id).await?;
    let (visits, referrers, backlinks) = store::reception(&app.db, &post.id).await?;
    Ok(PrivateAnswer(Reception {
        success: True,
        data: ReceptionData {
            post_id: post.id,
            visits: visits
                .into_iter()
                .map(|(day, n)| (format!("{day}T00:00:00Z"), n))
                .collect(),
            referrers: referrers
                .into_iter()
                .map(|(domain, visits, seen_at)| (domain, Referrer { visits, seen_at }))
                .collect(),
            backlinks: backlinks
                .into_iter()
                .map(|(url, domain, seen_at)| (url, Backlink { domain, seen_at }))
                .collect(),
        },
    }))
}
