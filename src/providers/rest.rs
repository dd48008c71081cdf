//! JSON over HTTPS for the clouds where protokube is the gossip member only: one request at a time on `providers::http`, every request counted by its
//! operation, waited for while the cloud cannot be reached (up to the run's deadline), busy
//! answers (5xx) retried with backoff, a rate limit waited out until the moment the cloud names
//! (`Retry-After`, `RateLimit-Reset`), never in a burst, and refusals said in the cloud's words:
//! a rejected credential names where it comes from, a refused permission what it lacks.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context as _, Result};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde::de::DeserializeOwned;

use crate::cloud::{patient, AccessDenied};
use crate::error::{CredentialRejected, NotReady, Unreachable};
use crate::providers::http::{http_client, HttpClient};
use crate::proxy::EgressProxies;
use crate::wait::{retry_until, Backoff, Deadline, Retry};

/// Attempts per request (the first included) while the cloud answers busy or rate-limited.
const MAX_ATTEMPTS: u32 = 6;
/// The longest one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read (a page of servers is far smaller).
const MAX_ANSWER_BYTES: usize = 16 << 20;
/// The pause after a rate limit that names no moment to come back.
const RATE_LIMIT_PAUSE: Duration = Duration::from_secs(5);

/// What is true of one cloud's API for its messages.
#[derive(Debug)]
pub(crate) struct RestCloud {
    /// Its name, for messages.
    pub(crate) name: &'static str,
    /// The credential a request carries and where it comes from (``the token in `X_TOKEN` ``):
    /// a 401 names it.
    pub(crate) credential: &'static str,
    /// What a 401 asks the operator to do.
    pub(crate) fix: &'static str,
    /// What a 403 says the credential lacks.
    pub(crate) permission: &'static str,
    /// The cloud's error body read into its code and message.
    pub(crate) read_error: fn(&serde_json::Value) -> Option<(String, String)>,
}

/// The error body many clouds give, `{"error": {"code", "message"}}`: its code and message.
pub(crate) fn error_code_and_message(body: &serde_json::Value) -> Option<(String, String)> {
    let error = body.get("error")?;
    Some((
        error.get("code")?.as_str()?.to_owned(),
        error.get("message")?.as_str()?.to_owned(),
    ))
}

/// The cloud's error answer, in its words.
#[derive(Debug)]
pub(crate) struct RestError {
    pub(crate) cloud: &'static str,
    pub(crate) operation: String,
    pub(crate) status: u16,
    pub(crate) code: String,
    pub(crate) message: String,
}

impl std::fmt::Display for RestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} answered `{}` with HTTP {} {}: {}",
            self.cloud, self.operation, self.status, self.code, self.message
        )
    }
}

impl std::error::Error for RestError {}

/// The requests sent so far, by operation, retries included; shared by a cloud's clients.
#[derive(Clone, Debug, Default)]
pub(crate) struct Calls(Arc<Mutex<BTreeMap<String, u64>>>);

impl Calls {
    fn count(&self, operation: &str) {
        if let Ok(mut calls) = self.0.lock() {
            *calls.entry(operation.to_owned()).or_default() += 1;
        }
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// One request: its operation (counted, named in messages), method, path under the root and
/// body.
pub(crate) struct Call<'a> {
    pub(crate) operation: &'a str,
    pub(crate) method: Method,
    pub(crate) path: &'a str,
    pub(crate) body: Option<serde_json::Value>,
}

impl<'a> Call<'a> {
    /// `GET path`.
    pub(crate) fn get(operation: &'a str, path: &'a str) -> Self {
        Self {
            operation,
            method: Method::GET,
            path,
            body: None,
        }
    }
}

/// A successful answer: its headers and body.
pub(crate) struct Answer {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

/// One cloud API (or metadata service) at one root, for one run.
pub(crate) struct Rest {
    cloud: &'static RestCloud,
    root: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    http: HttpClient,
    deadline: Deadline,
    calls: Calls,
}

impl Rest {
    /// `cloud`'s API at `root` (an `http(s)://` URL ending in `/`), every request with
    /// `headers`, counted in `calls`, for a run that ends by `deadline`; through the node's
    /// egress proxy unless `root` is a metadata service (`metadata`: link-local, never proxied).
    pub(crate) fn new(
        cloud: &'static RestCloud,
        root: &str,
        headers: &[(&'static str, String)],
        deadline: Deadline,
        calls: Calls,
        metadata: bool,
    ) -> Result<Self> {
        let proxies = if metadata {
            EgressProxies::none()
        } else {
            EgressProxies::from_env(&[])
        };
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let value = HeaderValue::from_str(value)
                    .map_err(|_| anyhow!("{}: the `{name}` header is not valid", cloud.name))?;
                Ok((HeaderName::from_static(name), value))
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            cloud,
            root: root.to_owned(),
            headers,
            http: http_client(Duration::from_secs(5), Arc::new(proxies))?,
            deadline,
            calls,
        })
    }

    /// `GET path` read as JSON.
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        operation: &str,
        path: &str,
    ) -> Result<T> {
        let answer = self.send(&Call::get(operation, path)).await?;
        serde_json::from_slice(&answer.body)
            .with_context(|| format!("reading {}'s answer to `{operation}`", self.cloud.name))
    }

    /// `GET path` read as text.
    pub(crate) async fn get_text(&self, operation: &str, path: &str) -> Result<String> {
        let answer = self.send(&Call::get(operation, path)).await?;
        String::from_utf8(answer.body.to_vec())
            .map_err(|_| anyhow!("{}'s answer to `{operation}` is not text", self.cloud.name))
    }

    /// Sends `call`: waited for while the cloud cannot be reached (up to the run's deadline),
    /// retried while it answers busy or rate-limited.
    pub(crate) async fn send(&self, call: &Call<'_>) -> Result<Answer> {
        let what = format!("{} (`{}`)", self.cloud.name, call.operation);
        patient::until_reachable(&what, self.deadline, patient::backoff(), || {
            self.attempts(call)
        })
        .await
    }

    async fn attempts(&self, call: &Call<'_>) -> Result<Answer> {
        let backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
        let answered = retry_until(self.deadline, backoff, MAX_ATTEMPTS, |_| async {
            match self.attempt(call).await? {
                Outcome::Done(answer) => Ok(Retry::Done(answer)),
                Outcome::Busy(said) => {
                    tracing::debug!("`{}` answered {said}; trying again", call.operation);
                    Ok(Retry::Again(Some(self.busy_to_the_end(call, &said))))
                }
                Outcome::RateLimited { said, wait } => {
                    let wait = wait.unwrap_or(RATE_LIMIT_PAUSE);
                    if wait >= self.deadline.remaining() {
                        return Err(self.busy_to_the_end(call, &said));
                    }
                    tracing::info!(
                        "{} answered `{}` with {said}; asking again in {:.1}s, when its limit \
                         resets",
                        self.cloud.name,
                        call.operation,
                        wait.as_secs_f64()
                    );
                    Ok(Retry::After(wait, self.busy_to_the_end(call, &said)))
                }
            }
        })
        .await?;
        answered.map_err(|gave_up| {
            gave_up
                .last
                .unwrap_or_else(|| self.busy_to_the_end(call, "busy answers"))
        })
    }

    fn busy_to_the_end(&self, call: &Call<'_>, said: &str) -> anyhow::Error {
        NotReady(format!(
            "{} kept answering `{}` with {said} through the run's retries; retry later",
            self.cloud.name, call.operation
        ))
        .into()
    }

    /// One request and what its answer was.
    async fn attempt(&self, call: &Call<'_>) -> Result<Outcome> {
        let url = format!("{}{}", self.root, call.path.trim_start_matches('/'));
        let mut request = Request::builder()
            .method(call.method.clone())
            .uri(&url)
            .header(
                "user-agent",
                concat!("protokube/", env!("CARGO_PKG_VERSION")),
            );
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let body = match &call.body {
            Some(value) => {
                request = request.header("content-type", "application/json");
                Bytes::from(serde_json::to_vec(value)?)
            }
            None => Bytes::new(),
        };
        let request = request
            .body(Full::new(body))
            .with_context(|| format!("building the request `{url}`"))?;
        self.calls.count(call.operation);
        let limit = ATTEMPT_TIMEOUT.min(self.deadline.remaining());
        let (status, headers, body) =
            match tokio::time::timeout(limit, self.exchange(request)).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(err)) => {
                    return Err(Unreachable(format!(
                        "cannot reach {} at `{url}` for `{}`: {}",
                        self.cloud.name,
                        call.operation,
                        crate::error::one_line(&err)
                    ))
                    .into())
                }
                Err(_) => {
                    return Err(Unreachable(format!(
                        "{} did not answer `{}` within {}",
                        self.cloud.name,
                        call.operation,
                        humantime::format_duration(limit)
                    ))
                    .into())
                }
            };
        self.judge(call, status, headers, body)
    }

    /// What an answer was: done, busy, rate-limited, or the error it says.
    fn judge(
        &self,
        call: &Call<'_>,
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Outcome> {
        if status.is_success() {
            return Ok(Outcome::Done(Answer { headers, body }));
        }
        let error = self.read_error(call, status, &body);
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Ok(Outcome::RateLimited {
                said: format!("HTTP 429 {}", error.code),
                wait: rate_limit_wait(&headers, SystemTime::now()),
            });
        }
        if status.is_server_error() {
            return Ok(Outcome::Busy(format!(
                "HTTP {} {}",
                error.status, error.code
            )));
        }
        match status {
            StatusCode::UNAUTHORIZED => Err(CredentialRejected(format!(
                "{} rejected {} (`{}`: HTTP 401 {}: {}); {}",
                self.cloud.name,
                self.cloud.credential,
                call.operation,
                error.code,
                error.message,
                self.cloud.fix
            ))
            .into()),
            StatusCode::FORBIDDEN => Err(AccessDenied {
                cloud: self.cloud.name,
                permission: format!("{} ({})", call.operation, self.cloud.permission),
                detail: format!("HTTP 403 {}: {}", error.code, error.message),
            }
            .into()),
            _ => Err(error.into()),
        }
    }

    fn read_error(&self, call: &Call<'_>, status: StatusCode, body: &[u8]) -> RestError {
        let value: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let (code, message) = (self.cloud.read_error)(&value).unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text: String = text.trim().chars().take(200).collect();
            (
                status.canonical_reason().unwrap_or("error").to_owned(),
                text.escape_debug().to_string(),
            )
        });
        RestError {
            cloud: self.cloud.name,
            operation: call.operation.to_owned(),
            status: status.as_u16(),
            code: code.escape_debug().to_string(),
            message: message.escape_debug().to_string(),
        }
    }

    async fn exchange(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, HeaderMap, Bytes)> {
        let answer = self.http.request(request).await?;
        let (parts, body) = answer.into_parts();
        let body = http_body_util::Limited::new(body, MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|err| anyhow!("reading the answer: {err}"))?
            .to_bytes();
        Ok((parts.status, parts.headers, body))
    }
}

/// What one answer was.
enum Outcome {
    Done(Answer),
    /// 5xx: try again after a while.
    Busy(String),
    /// 429: try again once the limit resets (`wait`, when the cloud says).
    RateLimited {
        said: String,
        wait: Option<Duration>,
    },
}

/// How long a rate limit asks to wait, from its headers at `now`: `Retry-After` (seconds), else
/// `RateLimit-Reset` / `X-RateLimit-Reset` (the Unix time the limit resets, as most clouds
/// say it; a small number is seconds from now, as the IETF draft has it). An unreadable header
/// is no answer.
pub(crate) fn rate_limit_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let number = |name: &str| -> Option<u64> {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    };
    if let Some(seconds) = number("retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    let reset = number("ratelimit-reset").or_else(|| number("x-ratelimit-reset"))?;
    let now_secs = now.duration_since(UNIX_EPOCH).ok()?;
    if reset > 1_000_000_000 {
        // A moment: wait until then, and a little past its second.
        let at = Duration::from_secs(reset);
        Some(at.saturating_sub(now_secs) + Duration::from_millis(100))
    } else {
        Some(Duration::from_secs(reset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_static(k),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_rate_limit_is_waited_until_the_moment_the_cloud_names() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            rate_limit_wait(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        // The Unix time the limit resets.
        assert_eq!(
            rate_limit_wait(&headers(&[("ratelimit-reset", "1700000003")]), now),
            Some(Duration::from_millis(3100))
        );
        // Already past: only the margin.
        assert_eq!(
            rate_limit_wait(&headers(&[("ratelimit-reset", "1699999990")]), now),
            Some(Duration::from_millis(100))
        );
        // Seconds from now (the IETF draft), and Retry-After first.
        assert_eq!(
            rate_limit_wait(&headers(&[("x-ratelimit-reset", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            rate_limit_wait(
                &headers(&[("retry-after", "1"), ("ratelimit-reset", "9")]),
                now
            ),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            rate_limit_wait(&headers(&[("retry-after", "soon")]), now),
            None
        );
        assert_eq!(rate_limit_wait(&HeaderMap::new(), now), None);
    }
}
