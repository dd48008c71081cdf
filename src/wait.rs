//! Bounded waits: the run's one deadline (`--timeout` from its start), and polls with
//! exponential backoff and jitter until a condition holds or the deadline passes (then exit 75),
//! with a progress spinner on a terminal and log lines otherwise.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::error::NotReady;

/// Exponential backoff with "equal jitter": each delay is half the exponential step plus a random
/// part of the other half, so nodes that started together spread out.
#[derive(Clone, Debug)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    attempt: u32,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            attempt: 0,
        }
    }

    /// The next delay; `jitter` in `[0, 1)` picks the random part (pure, for tests).
    pub(crate) fn next_delay_with(&mut self, jitter: f64) -> Duration {
        let factor = 2u32.saturating_pow(self.attempt.min(20));
        let step = self.initial.saturating_mul(factor).min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let half = step / 2;
        half + half.mul_f64(jitter.clamp(0.0, 1.0))
    }

    pub(crate) fn next_delay(&mut self) -> Duration {
        self.next_delay_with(fastrand::f64())
    }
}

/// The run's deadline: `--timeout` after the run started, the one type that carries it through
/// every seam. Every wait, cloud call, Kubernetes API request, credential plugin and child tool
/// of the run ends by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    /// `--timeout`, as given (for messages).
    timeout: Duration,
}

impl Deadline {
    /// `timeout` from now.
    pub(crate) fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now() + timeout,
            timeout,
        }
    }

    /// The time left (zero once it passed).
    pub(crate) fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// `--timeout` as given, for messages (`within --timeout (5m)`).
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `--timeout` in words (`5m`).
    pub(crate) fn timeout_text(&self) -> String {
        humantime::format_duration(self.timeout).to_string()
    }

    /// When it is.
    pub(crate) fn instant(&self) -> Instant {
        self.at
    }

    /// The earlier of this deadline and `other` (said with this one's `--timeout`).
    pub(crate) fn earliest(self, other: Self) -> Self {
        Self {
            at: self.at.min(other.at),
            timeout: self.timeout,
        }
    }

    /// Runs `future` until the deadline; `Err(())` when the deadline came first (the future is
    /// dropped there).
    pub(crate) async fn run<T>(&self, future: impl Future<Output = T>) -> Result<T, ()> {
        tokio::time::timeout_at(self.at.into(), future)
            .await
            .map_err(|_| ())
    }
}

/// The shortest `--timeout`: below it a run cannot ask the cloud anything and would only ever
/// be "not ready".
pub(crate) const MIN_TIMEOUT: Duration = Duration::from_secs(1);

/// How to show a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// A spinner on stderr (a terminal, progress not turned off).
    Spinner,
    /// Log lines only.
    Log,
}

impl Progress {
    /// A spinner when stderr is a terminal and `--no-progress` was not given.
    pub(crate) fn detect(no_progress: bool) -> Self {
        if !no_progress && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            Progress::Spinner
        } else {
            Progress::Log
        }
    }
}

/// Calls `check` until it returns `Some`, sleeping with `backoff` in between, until `until`.
/// `what` completes "waiting for …" in messages. Errors from `check` end the wait.
pub(crate) async fn poll_until<T, F, Fut>(
    what: &str,
    until: Deadline,
    progress: Progress,
    mut backoff: Backoff,
    mut check: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let started = Instant::now();
    let deadline = until.instant();
    let bar = match progress {
        Progress::Spinner => {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) =
                ProgressStyle::with_template("{spinner} waiting for {msg} ({elapsed})")
            {
                bar.set_style(style);
            }
            bar.set_message(what.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            Some(bar)
        }
        Progress::Log => None,
    };
    let mut announced = false;
    let result = loop {
        match check().await {
            Ok(Some(value)) => break Ok(value),
            Ok(None) => {}
            // A look cut short by the run's deadline (a call it made was still waiting then):
            // the wait itself ran out.
            Err(err) if Instant::now() >= deadline && crate::error::caused_by::<NotReady>(&err) => {
                break Err(timed_out(what, started.elapsed()));
            }
            Err(err) => break Err(err),
        }
        let now = Instant::now();
        if now >= deadline {
            break Err(timed_out(what, started.elapsed()));
        }
        if bar.is_none() && !announced {
            tracing::info!(
                "waiting for {what} (up to {})",
                humantime::format_duration(Duration::from_secs(
                    deadline.saturating_duration_since(started).as_secs()
                ))
            );
            announced = true;
        }
        tokio::time::sleep(backoff.next_delay().min(deadline - now)).await;
        // The run's deadline is everyone's: a check made at it would only be cut short.
        if Instant::now() >= deadline {
            break Err(timed_out(what, started.elapsed()));
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if result.is_ok() && announced {
        tracing::info!("{what}: done after {:.1}s", started.elapsed().as_secs_f64());
    }
    result
}

/// What one attempt of [`retry_until`] found.
#[derive(Debug)]
pub(crate) enum Retry<T> {
    /// Done, with this.
    Done(T),
    /// Not yet (and why, when the attempt can say): pause, then try again.
    Again(Option<anyhow::Error>),
    /// Not before this pause, which the other side named (a rate limit's reset), and why.
    After(Duration, anyhow::Error),
}

/// Why [`retry_until`] stopped trying: how many attempts it made, and the last reason given.
#[derive(Debug)]
pub(crate) struct GaveUp {
    pub(crate) attempts: u32,
    pub(crate) last: Option<anyhow::Error>,
}

impl GaveUp {
    /// The last reason in one line, or `otherwise`.
    pub(crate) fn why(&self, otherwise: &str) -> String {
        self.last
            .as_ref()
            .map_or_else(|| otherwise.to_owned(), crate::error::one_line)
    }
}

/// Calls `attempt` (given its number, from 1) until it is done, pausing with `backoff` between
/// attempts, at most `attempts` times and never past `deadline` (a pause that would end past it
/// is not taken). The attempt classifies its own outcome: an error ends the retries at once,
/// [`Retry::Again`] asks for another. `Ok(Err(GaveUp))` when the attempts or the time ran out.
pub(crate) async fn retry_until<T, Fut>(
    deadline: Deadline,
    mut backoff: Backoff,
    attempts: u32,
    mut attempt: impl FnMut(u32) -> Fut,
) -> Result<Result<T, GaveUp>>
where
    Fut: Future<Output = Result<Retry<T>>>,
{
    let mut last = None;
    for number in 1..=attempts {
        let named = match attempt(number).await? {
            Retry::Done(value) => return Ok(Ok(value)),
            Retry::Again(why) => {
                last = why.or(last);
                None
            }
            Retry::After(pause, why) => {
                last = Some(why);
                Some(pause)
            }
        };
        let pause = named.unwrap_or_else(|| backoff.next_delay());
        if number == attempts || pause >= deadline.remaining() {
            return Ok(Err(GaveUp {
                attempts: number,
                last,
            }));
        }
        tokio::time::sleep(pause).await;
    }
    Ok(Err(GaveUp { attempts, last }))
}

/// The "not ready" error of a wait for `what` that lasted `waited`.
fn timed_out(what: &str, waited: Duration) -> anyhow::Error {
    NotReady(format!(
        "timed out after {} waiting for {what}; retry later",
        humantime::format_duration(Duration::from_secs(waited.as_secs().max(1)))
    ))
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_with_bounded_jitter() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        let low: Vec<u128> = (0..6).map(|_| b.next_delay_with(0.0).as_millis()).collect();
        assert_eq!(low, [50, 100, 200, 400, 400, 400]);
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        let high: Vec<u128> = (0..5)
            .map(|_| b.next_delay_with(0.999_999).as_millis())
            .collect();
        assert_eq!(high, [99, 199, 399, 799, 799]);
    }

    #[test]
    fn poll_times_out_as_not_ready_and_returns_values() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let fast = || Backoff::new(Duration::from_millis(1), Duration::from_millis(5));
        let err = rt
            .block_on(poll_until(
                "`vol-1` to attach",
                Deadline::after(Duration::from_millis(50)),
                Progress::Log,
                fast(),
                || async { Ok(None::<()>) },
            ))
            .unwrap_err();
        assert!(err.is::<NotReady>());
        assert!(
            err.to_string().contains("waiting for `vol-1` to attach"),
            "{err}"
        );
        let mut calls = 0;
        let value = rt
            .block_on(poll_until(
                "x",
                Deadline::after(Duration::from_secs(5)),
                Progress::Log,
                fast(),
                || {
                    calls += 1;
                    let done = calls >= 3;
                    async move { Ok(done.then_some(7)) }
                },
            ))
            .unwrap();
        assert_eq!((value, calls), (7, 3));
    }

    #[tokio::test]
    async fn retries_stop_at_done_an_error_the_count_or_the_deadline() {
        let backoff = || Backoff::new(Duration::from_millis(10), Duration::from_millis(40));
        let calls = std::cell::Cell::new(0);
        let done = retry_until(
            Deadline::after(Duration::from_secs(5)),
            backoff(),
            10,
            |n| {
                calls.set(calls.get() + 1);
                async move {
                    Ok(if n == 3 {
                        Retry::Done(n)
                    } else {
                        Retry::Again(None)
                    })
                }
            },
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!((done, calls.get()), (3, 3));
        let counted = retry_until(
            Deadline::after(Duration::from_secs(5)),
            backoff(),
            4,
            |n| async move { Ok(Retry::<()>::Again(Some(anyhow::anyhow!("busy {n}")))) },
        )
        .await
        .unwrap()
        .unwrap_err();
        assert_eq!(
            (counted.attempts, counted.why("none").as_str()),
            (4, "busy 4")
        );
        let timed = retry_until(
            Deadline::after(Duration::from_millis(100)),
            backoff(),
            1000,
            |_| async { Ok(Retry::<()>::Again(None)) },
        )
        .await
        .unwrap()
        .unwrap_err();
        assert!(
            timed.attempts < 20,
            "the deadline ended it, not the count: {}",
            timed.attempts
        );
        assert_eq!(timed.why("no answer"), "no answer");
        let failed = retry_until(
            Deadline::after(Duration::from_secs(5)),
            backoff(),
            10,
            |_| async { Err::<Retry<()>, _>(anyhow::anyhow!("refused")) },
        )
        .await;
        assert_eq!(failed.unwrap_err().to_string(), "refused");
    }

    #[test]
    fn a_look_cut_short_by_the_deadline_is_the_wait_timing_out() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let until = Deadline::after(Duration::from_millis(30));
        // The look's own call runs into the run's deadline and says so.
        let err = rt
            .block_on(poll_until(
                "`vol-1` to attach",
                until,
                Progress::Log,
                Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
                || async move {
                    tokio::time::sleep_until(until.instant().into()).await;
                    Err::<Option<()>, _>(NotReady("the call was cut short".into()).into())
                },
            ))
            .unwrap_err();
        assert!(
            err.to_string().contains("waiting for `vol-1` to attach"),
            "{err}"
        );
        // Any other failure of a look is its own.
        let err = rt
            .block_on(poll_until(
                "x",
                Deadline::after(Duration::from_secs(5)),
                Progress::Log,
                Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
                || async { Err::<Option<()>, _>(NotReady("busy".into()).into()) },
            ))
            .unwrap_err();
        assert_eq!(err.to_string(), "busy");
    }
}
