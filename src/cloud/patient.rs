//! Patience with a cloud that is not there yet: every call whose failure is [`Unreachable`] (no
//! connection, no credentials yet, a metadata service not answering) is tried again with
//! backoff until the run's deadline (`--timeout`), then reported "not ready" (exit 75) saying
//! what was waited for.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;
use async_trait::async_trait;

use super::{InstanceMetadata, MetadataItem};
use crate::error::{NotReady, Unreachable};
use crate::wait::{retry_until, Backoff, Deadline, Retry};

/// The pauses between calls to a cloud not there yet: from 1 s, doubling, up to 20 s.
pub(crate) fn backoff() -> Backoff {
    Backoff::new(Duration::from_secs(1), Duration::from_secs(20))
}

/// Runs `call` until it succeeds, fails for another reason than [`Unreachable`], or `deadline`
/// comes (an attempt still running then is cut short), pausing by `backoff`; `what` names what
/// is waited for in the "not ready" error, with the last failure seen.
pub(crate) async fn until_reachable<T, F, Fut>(
    what: &str,
    deadline: Deadline,
    backoff: Backoff,
    mut call: F,
) -> Result<T>
where
    F: FnMut() -> Fut + Send,
    Fut: Future<Output = Result<T>> + Send,
{
    let answered = retry_until(deadline, backoff, u32::MAX, |_| {
        // On the heap: an SDK call's future is large, and every caller would carry it.
        let attempt = Box::pin(deadline.run(call()));
        async move {
            match attempt.await {
                Ok(Err(err)) if crate::error::caused_by::<Unreachable>(&err) => {
                    tracing::info!("{what}: not there yet ({err:#}); trying again");
                    Ok(Retry::Again(Some(err)))
                }
                Ok(Ok(value)) => Ok(Retry::Done(value)),
                Ok(Err(err)) => Err(err),
                Err(_cut_short) => Ok(Retry::Again(None)),
            }
        }
    })
    .await?;
    answered.map_err(|gave_up| {
        NotReady(format!(
            "{what}: not there within --timeout ({}, {} attempts): {}; retry later",
            deadline.timeout_text(),
            gave_up.attempts,
            gave_up.why("no answer")
        ))
        .into()
    })
}

/// A metadata service waited for, until the run's deadline, while it is not there yet.
pub(crate) struct Patient<T> {
    inner: T,
    deadline: Deadline,
    backoff: Backoff,
}

impl<T> Patient<T> {
    pub(crate) fn new(inner: T, deadline: Deadline) -> Self {
        Self {
            inner,
            deadline,
            backoff: backoff(),
        }
    }
}

#[async_trait]
impl<T: InstanceMetadata> InstanceMetadata for Patient<T> {
    fn service(&self) -> &'static str {
        self.inner.service()
    }

    fn path(&self, item: MetadataItem) -> &'static str {
        self.inner.path(item)
    }

    async fn get(&self, item: MetadataItem) -> Result<Option<String>> {
        let what = format!("{} (`{}`)", self.inner.service(), self.inner.path(item));
        until_reachable(&what, self.deadline, self.backoff.clone(), || {
            self.inner.get(item)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::error::ExitCode;

    /// A metadata service that is unreachable for its first `down` calls.
    struct LateMetadata {
        down: u32,
        calls: AtomicU32,
        failure: fn() -> anyhow::Error,
    }

    #[async_trait]
    impl InstanceMetadata for LateMetadata {
        fn service(&self) -> &'static str {
            "the instance metadata service"
        }

        fn path(&self, _item: MetadataItem) -> &'static str {
            "instance-id"
        }

        async fn get(&self, _item: MetadataItem) -> Result<Option<String>> {
            if self.calls.fetch_add(1, Ordering::SeqCst) < self.down {
                return Err((self.failure)());
            }
            Ok(Some("i-0abc".to_owned()))
        }
    }

    /// `inner` waited for up to `timeout_ms`, with pauses of a few milliseconds.
    fn quick<T>(inner: T, timeout_ms: u64) -> Patient<T> {
        Patient {
            inner,
            deadline: Deadline::after(Duration::from_millis(timeout_ms)),
            backoff: Backoff::new(Duration::from_millis(1), Duration::from_millis(4)),
        }
    }

    fn unreachable() -> anyhow::Error {
        anyhow::Error::new(Unreachable("connection refused".into())).context("IMDS")
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn what_is_not_there_yet_is_waited_for() {
        let metadata = quick(
            LateMetadata {
                down: 3,
                calls: AtomicU32::new(0),
                failure: unreachable,
            },
            10_000,
        );
        let got = block_on(metadata.get(MetadataItem::InstanceId)).unwrap();
        assert_eq!(got.as_deref(), Some("i-0abc"));
        assert_eq!(metadata.inner.calls.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn what_never_comes_is_not_ready_naming_what_was_waited_for() {
        let metadata = quick(
            LateMetadata {
                down: u32::MAX,
                calls: AtomicU32::new(0),
                failure: unreachable,
            },
            30,
        );
        let err = block_on(metadata.get(MetadataItem::InstanceId)).unwrap_err();
        assert_eq!(ExitCode::for_error(&err), ExitCode::NotReady);
        let message = format!("{err:#}");
        assert!(message.contains("within --timeout"), "{message}");
        assert!(
            message.contains("metadata service (`instance-id`)"),
            "{message}"
        );
        assert!(message.contains("connection refused"), "{message}");
        assert!(metadata.inner.calls.load(Ordering::SeqCst) > 1);
    }

    #[test]
    fn other_failures_are_not_retried() {
        let metadata = quick(
            LateMetadata {
                down: u32::MAX,
                calls: AtomicU32::new(0),
                failure: || anyhow::anyhow!("AccessDenied"),
            },
            10_000,
        );
        let err = block_on(metadata.get(MetadataItem::InstanceId)).unwrap_err();
        assert_eq!(ExitCode::for_error(&err), ExitCode::Failed);
        assert_eq!(metadata.inner.calls.load(Ordering::SeqCst), 1);
    }
}
