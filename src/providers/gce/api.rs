//! Google's REST APIs as protokube calls them (Compute Engine here, Cloud DNS from
//! `clouddns.rs`): JSON over HTTPS on the HTTP stack protokube already has (hyper, rustls with
//! the node's trusted roots), an access token from the metadata server, every request counted
//! by its method, busy answers retried with backoff, each call bounded by the run's deadline,
//! and Google's error bodies read into [`GoogleError`] or [`AccessDenied`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context as _, Result};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use serde::de::DeserializeOwned;

use super::metadata::MetadataServer;
use crate::cloud::patient;
use crate::cloud::AccessDenied;
use crate::error::{NotReady, Unreachable};
use crate::providers::http::{http_client, url, HttpClient};
use crate::proxy::EgressProxies;
use crate::wait::{retry_until, Backoff, Deadline, Retry};

/// Attempts per call (the first included) while Google answers busy (429, 5xx).
const MAX_ATTEMPTS: u32 = 6;
/// The pause of a method a rate quota refused: Google's quotas count per minute, so the method
/// is asked again about half a minute later at the earliest, and so at most twice in the minute
/// after the refusal (Google: "wait a minute, then try again").
const QUOTA_PAUSE: Duration = Duration::from_secs(30);
/// The random part added to [`QUOTA_PAUSE`], so that a fleet refused together comes back apart.
const QUOTA_JITTER: Duration = Duration::from_secs(10);
/// The longest one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest one attempt at an operation's `wait` may take: Google holds it up to two minutes
/// (`zoneOperations.wait`: "waits for no more than the 2 minutes"), which is an answer, not a
/// stalled call.
const WAIT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(150);
/// The largest answer read (a page of disks or instances is far smaller).
const MAX_ANSWER_BYTES: usize = 16 << 20;

/// Where the Google APIs of a run are: Compute Engine's and Cloud DNS' roots, each an
/// `http(s)://` URL ending in `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GceEndpoints {
    pub(crate) compute: String,
    pub(crate) dns: String,
}

/// A Google API's error answer, as its JSON body says it.
#[derive(Debug)]
pub(crate) struct GoogleError {
    /// The API method, e.g. `compute.disks.setLabels`.
    pub(crate) method: String,
    pub(crate) status: u16,
    /// The first error's `reason` (`resourceInUseByAnotherResource`, `conditionNotMet`, …), else
    /// the body's `status`.
    pub(crate) reason: String,
    pub(crate) message: String,
    /// Every reason the body gives (`errors[].reason`, `details[].reason`, `status`).
    pub(crate) reasons: Vec<String>,
}

impl std::fmt::Display for GoogleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Google Cloud answered `{}` with HTTP {} {}: {}",
            self.method, self.status, self.reason, self.message
        )
    }
}

impl std::error::Error for GoogleError {}

impl GoogleError {
    /// The Google error among `err`'s causes, if any.
    pub(crate) fn in_chain(err: &anyhow::Error) -> Option<&Self> {
        err.chain().find_map(|cause| cause.downcast_ref::<Self>())
    }
}

/// Which of Google's APIs a call goes to (each at its own root, `GceEndpoints`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum GoogleService {
    Compute,
    Dns,
}

/// One call: the API method (what is counted, named, and tells the IAM permission) and the
/// request.
struct Call<'a> {
    method_id: &'a str,
    http_method: Method,
    url: String,
    body: Option<serde_json::Value>,
}

/// The "not ready" error of `call` that Google answered busy (`said`) through every retry the
/// run had time for.
fn busy_to_the_end(call: &Call<'_>, said: &str) -> anyhow::Error {
    NotReady(format!(
        "Google Cloud kept answering `{}` with {said} through its retries; retry later",
        call.method_id
    ))
    .into()
}

/// The IAM permission API method `method_id` needs: its own id, but for the methods Google
/// checks under another one's.
pub(crate) fn permission(method_id: &str) -> &str {
    match method_id {
        "compute.disks.aggregatedList" => "compute.disks.list",
        "compute.instances.aggregatedList" => "compute.instances.list",
        "compute.zoneOperations.wait" => "compute.zoneOperations.get",
        other => other,
    }
}

/// Google's APIs for one run.
pub(crate) struct GoogleApi {
    http: HttpClient,
    metadata: Arc<MetadataServer>,
    deadline: Deadline,
    calls: Mutex<BTreeMap<String, u64>>,
    /// Methods a rate quota refused, and when they may be asked again.
    held: Mutex<BTreeMap<String, tokio::time::Instant>>,
    project: tokio::sync::OnceCell<String>,
    pub(crate) endpoints: GceEndpoints,
}

impl GoogleApi {
    /// The APIs at `endpoints`, with tokens from `metadata`, for a run that ends by `deadline`.
    pub(crate) fn new(
        endpoints: GceEndpoints,
        metadata: Arc<MetadataServer>,
        deadline: Deadline,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(Self {
            http: http_client(
                Duration::from_secs(5),
                Arc::new(EgressProxies::from_env(&[super::metadata::DEFAULT_HOST])),
            )?,
            metadata,
            deadline,
            calls: Mutex::new(BTreeMap::new()),
            held: Mutex::new(BTreeMap::new()),
            project: tokio::sync::OnceCell::new(),
            endpoints,
        }))
    }

    /// The metadata server the tokens come from.
    pub(crate) fn metadata(&self) -> &Arc<MetadataServer> {
        &self.metadata
    }

    /// The run's deadline.
    pub(crate) fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// The project this instance runs in (from the metadata server, asked once).
    pub(crate) async fn project(&self) -> Result<String> {
        let metadata = &self.metadata;
        self.project
            .get_or_try_init(|| async {
                patient::until_reachable(
                    "the GCE metadata server (`project/project-id`)",
                    self.deadline,
                    patient::backoff(),
                    || metadata.project_id(),
                )
                .await
            })
            .await
            .cloned()
    }

    /// The requests sent so far, by API method, retries included.
    pub(crate) fn calls(&self) -> BTreeMap<String, u64> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Calls API method `method_id` (`http_method` on `path` under `service`'s root, with
    /// `query` and `body`) and reads its answer: waited for while Google or the token cannot
    /// be reached (up to the run's deadline), retried while Google answers busy.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        service: GoogleService,
        method_id: &str,
        http_method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<serde_json::Value>,
    ) -> Result<T> {
        let root = match service {
            GoogleService::Compute => &self.endpoints.compute,
            GoogleService::Dns => &self.endpoints.dns,
        };
        let call = Call {
            method_id,
            http_method,
            url: url(root, path, query),
            body,
        };
        let call = &call;
        let what = format!(
            "Google Cloud (`{}`: endpoint and credentials)",
            call.method_id
        );
        let bytes = patient::until_reachable(&what, self.deadline, patient::backoff(), || {
            self.attempts(call)
        })
        .await?;
        serde_json::from_slice(&bytes)
            .with_context(|| format!("reading the answer of `{}`", call.method_id))
    }

    /// Up to [`MAX_ATTEMPTS`] attempts while Google answers busy; a token Google rejects (401:
    /// revoked, or the node's clock off) fetched again once; a refused rate quota waited out
    /// (the method held until its window turns).
    async fn attempts(&self, call: &Call<'_>) -> Result<Vec<u8>> {
        let backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
        let token_refetched = std::sync::atomic::AtomicBool::new(false);
        let answered = retry_until(self.deadline, backoff, MAX_ATTEMPTS + 1, |_| async {
            match self.attempt(call).await? {
                Answer::Body(bytes) => Ok(Retry::Done(bytes)),
                Answer::TokenRejected(error)
                    if !token_refetched.swap(true, std::sync::atomic::Ordering::Relaxed) =>
                {
                    tracing::info!(
                        "Google Cloud rejected the access token ({}: {}); fetching a new one",
                        error.reason,
                        error.message
                    );
                    self.metadata.forget_token().await;
                    Ok(Retry::Again(None))
                }
                Answer::TokenRejected(error) => {
                    // Waited for like credentials not there yet: the next attempt fetches
                    // another token.
                    self.metadata.forget_token().await;
                    Err(Unreachable(format!(
                        "Google Cloud rejects the access tokens of the metadata server's default \
                         service account (`{}`: HTTP 401 {}: {}); check the instance's service \
                         account and the node's clock",
                        call.method_id, error.reason, error.message
                    ))
                    .into())
                }
                Answer::Busy(said) => {
                    tracing::debug!("`{}` answered {said}; trying again", call.method_id);
                    Ok(Retry::Again(Some(busy_to_the_end(call, &said))))
                }
                Answer::RateLimited(said) => {
                    // Asked again once the quota's window has turned, never in a burst
                    // inside the refused minute: at most two calls of the method in it.
                    let hold = QUOTA_PAUSE + QUOTA_JITTER.mul_f64(fastrand::f64());
                    if hold >= self.deadline.remaining() {
                        return Err(busy_to_the_end(call, &said));
                    }
                    tracing::info!(
                        "`{}` answered {said} (a per-minute rate quota); asking again in {:.0}s",
                        call.method_id,
                        hold.as_secs_f64()
                    );
                    self.hold(call.method_id, hold);
                    Ok(Retry::Again(Some(busy_to_the_end(call, &said))))
                }
            }
        })
        .await?;
        answered.map_err(|gave_up| {
            gave_up
                .last
                .unwrap_or_else(|| busy_to_the_end(call, "busy answers"))
        })
    }

    /// Holds every call of `method_id` for `pause` (a rate quota refused it).
    fn hold(&self, method_id: &str, pause: Duration) {
        if let Ok(mut held) = self.held.lock() {
            held.insert(method_id.to_owned(), tokio::time::Instant::now() + pause);
        }
    }

    /// One request: its answer, or the call's failure. A method a rate quota refused waits
    /// until its hold ends (busy to the end where the run's deadline comes first).
    async fn attempt(&self, call: &Call<'_>) -> Result<Answer> {
        let until = self
            .held
            .lock()
            .ok()
            .and_then(|held| held.get(call.method_id).copied());
        if let Some(until) = until {
            let now = tokio::time::Instant::now();
            if until > now {
                if until - now >= self.deadline.remaining() {
                    return Err(busy_to_the_end(call, "a per-minute rate quota"));
                }
                tokio::time::sleep_until(until).await;
            }
        }
        let token = self.metadata.token().await?;
        let body = match &call.body {
            Some(value) => Bytes::from(serde_json::to_vec(value)?),
            None => Bytes::new(),
        };
        let request = Request::builder()
            .method(call.http_method.clone())
            .uri(&call.url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header(
                "user-agent",
                concat!("protokube/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(body))
            .with_context(|| format!("building the request `{}`", call.url))?;
        if let Ok(mut calls) = self.calls.lock() {
            *calls.entry(call.method_id.to_owned()).or_default() += 1;
        }
        let longest = if call.method_id.ends_with("Operations.wait") {
            WAIT_ATTEMPT_TIMEOUT
        } else {
            ATTEMPT_TIMEOUT
        };
        let limit = longest.min(self.deadline.remaining());
        let (status, bytes) = match tokio::time::timeout(limit, self.send(request)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(err)) => {
                return Err(Unreachable(format!(
                    "cannot reach Google Cloud for `{}`: {}",
                    call.method_id,
                    crate::error::one_line(&err)
                ))
                .into())
            }
            Err(_) => {
                return Err(Unreachable(format!(
                    "Google Cloud did not answer `{}` within {}",
                    call.method_id,
                    humantime::format_duration(limit)
                ))
                .into())
            }
        };
        if status.is_success() {
            return Ok(Answer::Body(bytes));
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Ok(Answer::RateLimited(format!("HTTP {status}")));
        }
        if status.is_server_error() {
            return Ok(Answer::Busy(format!("HTTP {status}")));
        }
        let error = read_error(call.method_id, status.as_u16(), &bytes);
        match classify(&error) {
            Kind::Busy => Ok(Answer::Busy(format!(
                "HTTP {} {}",
                error.status, error.reason
            ))),
            Kind::RateLimited => Ok(Answer::RateLimited(format!(
                "HTTP {} {}",
                error.status, error.reason
            ))),
            Kind::TokenRejected => Ok(Answer::TokenRejected(error)),
            Kind::Denied => Err(AccessDenied {
                cloud: "Google Cloud",
                // Google names the permission it checked (attaching a disk needs
                // `compute.disks.use` on the disk beside the method's own).
                permission: named_permission(&error.message)
                    .unwrap_or_else(|| permission(call.method_id).to_owned()),
                detail: format!("HTTP {} {}: {}", error.status, error.reason, error.message),
            }
            .into()),
            Kind::Other => Err(error.into()),
        }
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Result<(StatusCode, Vec<u8>)> {
        let answer = self.http.request(request).await?;
        let status = answer.status();
        let body = http_body_util::Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|err| anyhow!("reading the answer: {err}"))?
            .to_bytes();
        Ok((status, body.to_vec()))
    }
}

/// The permission a refusal names (`Required 'compute.disks.use' permission for '…'`).
fn named_permission(message: &str) -> Option<String> {
    let rest = message.split("Required '").nth(1)?;
    let (name, tail) = rest.split_once('\'')?;
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_');
    (tail.starts_with(" permission") && plain && !name.is_empty()).then(|| name.to_owned())
}

/// What one answer of Google's was.
enum Answer {
    /// Success: the body.
    Body(Vec<u8>),
    /// Busy (429, 5xx, a rate limit), as said: try again after a while.
    Busy(String),
    /// The access token was not accepted (401).
    TokenRejected(GoogleError),
    /// A rate quota refused the method (429, 403 `rateLimitExceeded` …): its window is a
    /// minute, so the method waits for it to turn.
    RateLimited(String),
}

/// How an error answer of Google's is taken.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A resource not ready for the request yet (400 `resourceNotReady`: a disk still
    /// detaching from a replaced master): tried again with backoff, then "not ready".
    Busy,
    /// A rate limit or quota per time (403 `rateLimitExceeded`, `userRateLimitExceeded`,
    /// `RESOURCE_OPERATION_RATE_EXCEEDED`; Compute Engine's "wait a minute, then try again"):
    /// the method waits for the quota's minute to turn, then "not ready".
    RateLimited,
    /// 401: the token was not accepted (expired early, revoked, the clock off).
    TokenRejected,
    /// 403 for any other reason: a permission the credentials lack.
    Denied,
    /// Anything else: the caller decides (404, 409, 412, 400 …).
    Other,
}

/// The reasons Google gives for a rate limit (`error.errors[].reason`, or `error.status` /
/// `error.details[].reason` in the newer shape).
const RATE_LIMIT_REASONS: [&str; 4] = [
    "rateLimitExceeded",
    "userRateLimitExceeded",
    "RESOURCE_OPERATION_RATE_EXCEEDED",
    "RATE_LIMIT_EXCEEDED",
];

fn classify(error: &GoogleError) -> Kind {
    let said = |reasons: &[&str]| error.reasons.iter().any(|r| reasons.contains(&r.as_str()));
    match error.status {
        401 => Kind::TokenRejected,
        403 if said(&RATE_LIMIT_REASONS) => Kind::RateLimited,
        403 => Kind::Denied,
        400 if said(&["resourceNotReady"]) => Kind::Busy,
        _ => Kind::Other,
    }
}

/// Google's error body (`{"error": {"code", "message", "status", "errors": [{"reason"}]}}`),
/// read as far as it goes.
fn read_error(method_id: &str, status: u16, body: &[u8]) -> GoogleError {
    let value: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let error = &value["error"];
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    let listed = |field: &str| -> Vec<String> {
        error[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| text(&item["reason"]))
            .collect()
    };
    let reasons: Vec<String> = listed("errors")
        .into_iter()
        .chain(listed("details"))
        .chain(text(&error["status"]))
        .collect();
    GoogleError {
        method: method_id.to_owned(),
        status,
        reason: reasons
            .first()
            .cloned()
            .unwrap_or_else(|| "unknown".to_owned()),
        reasons,
        message: text(&error["message"])
            .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()),
    }
}

/// A field Google must send: its absence is an error naming it and the answer.
pub(crate) fn required<T>(value: Option<T>, field: &str, answer: &str) -> Result<T> {
    value.ok_or_else(|| anyhow!("the `{answer}` answer has no `{field}`"))
}

/// A new id for one mutating request (Compute Engine's `requestId`, Cloud DNS'
/// `clientOperationId`): sent again with each retry of that request, so a request whose answer
/// was lost is not carried out twice.
pub(crate) fn request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_needs_its_own_permission_but_where_google_checks_another() {
        assert_eq!(
            permission("compute.disks.setLabels"),
            "compute.disks.setLabels"
        );
        assert_eq!(
            permission("compute.instances.aggregatedList"),
            "compute.instances.list"
        );
        assert_eq!(
            permission("compute.zoneOperations.wait"),
            "compute.zoneOperations.get"
        );
        assert_eq!(permission("dns.changes.create"), "dns.changes.create");
    }

    #[test]
    fn google_error_bodies_are_read() {
        let body = br#"{"error": {"code": 400, "message": "The disk resource is already being used by 'i-2'", "errors": [{"message": "in use", "domain": "global", "reason": "resourceInUseByAnotherResource"}]}}"#;
        let error = read_error("compute.instances.attachDisk", 400, body);
        assert_eq!(error.reason, "resourceInUseByAnotherResource");
        assert!(error.message.contains("already being used"));
        let error = read_error(
            "dns.changes.create",
            412,
            br#"{"error": {"code": 412, "message": "m", "status": "FAILED_PRECONDITION"}}"#,
        );
        assert_eq!(error.reason, "FAILED_PRECONDITION");
        let error = read_error("x", 502, b"<html>bad gateway</html>");
        assert_eq!(error.reason, "unknown");
        assert!(error.message.contains("bad gateway"));
    }

    #[test]
    fn a_refusal_names_the_permission_google_checked() {
        assert_eq!(
            named_permission(
                "Required 'compute.disks.use' permission for 'projects/p/zones/z/disks/d'"
            )
            .as_deref(),
            Some("compute.disks.use")
        );
        assert_eq!(named_permission("Forbidden"), None);
        assert_eq!(named_permission("Required 'a b' permission"), None);
    }

    #[test]
    fn google_answers_are_taken_as_google_documents_them() {
        let kind = |status: u16, body: &str| classify(&read_error("m", status, body.as_bytes()));
        // Compute Engine's rate quotas (the answer a fleet booting together gets).
        assert_eq!(
            kind(
                403,
                r#"{"error": {"code": 403, "message": "Rate Limit Exceeded", "errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded"}]}}"#
            ),
            Kind::RateLimited
        );
        assert_eq!(
            kind(
                403,
                r#"{"error": {"code": 403, "message": "m", "status": "PERMISSION_DENIED", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RESOURCE_OPERATION_RATE_EXCEEDED"}]}}"#
            ),
            Kind::RateLimited
        );
        assert_eq!(
            kind(
                403,
                r#"{"error": {"code": 403, "message": "Required 'compute.disks.list' permission", "errors": [{"reason": "forbidden"}]}}"#
            ),
            Kind::Denied
        );
        assert_eq!(
            kind(
                400,
                r#"{"error": {"code": 400, "message": "The resource is not ready", "errors": [{"reason": "resourceNotReady"}]}}"#
            ),
            Kind::Busy
        );
        assert_eq!(
            kind(
                401,
                r#"{"error": {"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED"}}"#
            ),
            Kind::TokenRejected
        );
        assert_eq!(
            kind(
                400,
                r#"{"error": {"errors": [{"reason": "resourceInUseByAnotherResource"}]}}"#
            ),
            Kind::Other
        );
    }
}
