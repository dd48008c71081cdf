//! Error kinds that carry their own exit code, and the mapping from a run's outcome to the code.

use std::fmt;

/// Exit codes of the contract (docs/commands.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    /// Done: nothing left to do.
    Done = 0,
    /// Failed, including unreadable or invalid input files.
    Failed = 1,
    /// Something was changed (or would be, with `--dry-run`); only with `--detailed-exitcode`.
    Changed = 2,
    /// Done, but this node looks like a master and `--master` is not set; only with
    /// `--detailed-exitcode` (the units do not count it as success).
    MasterFlagMissing = 3,
    /// Usage error: bad flags or flag values.
    Usage = 64,
    /// Not ready yet, retry later: a wait timed out, the lock is held, a device has not appeared.
    NotReady = 75,
}

impl ExitCode {
    /// The code to exit the process with.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The exit code for a failed run: the first typed cause in the chain decides, else 1.
    pub fn for_error(err: &anyhow::Error) -> Self {
        for cause in err.chain() {
            if cause.is::<NotReady>() || cause.is::<Unreachable>() {
                return Self::NotReady;
            }
            if cause.is::<UsageError>() {
                return Self::Usage;
            }
        }
        Self::Failed
    }
}

/// Whether `err` has a cause of type `T` (a typed error anywhere in its chain of contexts).
pub(crate) fn caused_by<T: std::error::Error + Send + Sync + 'static>(err: &anyhow::Error) -> bool {
    err.chain().any(<dyn std::error::Error>::is::<T>)
}

/// Something this run waited for did not happen in time; a later run may succeed (exit 75).
#[derive(Debug)]
pub struct NotReady(pub String);

impl fmt::Display for NotReady {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotReady {}

/// Something the run must reach did not answer: the metadata service, credentials, an AWS
/// endpoint. Waited for with backoff up to `--timeout` (`cloud/patient.rs`); still not
/// there then, it is "not ready" (exit 75), never a failure judged on one attempt.
#[derive(Debug)]
pub(crate) struct Unreachable(pub String);

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

/// The cloud rejected the node's credential (a token from the environment): the node's
/// settings are wrong, not the moment, so nothing waits for it to change (exit 1).
#[derive(Debug)]
pub(crate) struct CredentialRejected(pub String);

impl fmt::Display for CredentialRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CredentialRejected {}

/// A flag or flag value is wrong in a way clap could not see (exit 64).
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The error and its causes in one line, each said once: a library error that repeats its
/// source in its own text (kube-rs', the SDK's) does not say it twice.
pub(crate) fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        let said = parts.iter().any(|part| part.contains(text.trim()));
        if !text.trim().is_empty() && !said {
            parts.push(text);
        }
    }
    let text = parts.join(": ");
    let mut line = String::with_capacity(text.len());
    for (i, part) in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        if i > 0 {
            line.push_str("; ");
        }
        line.push_str(part);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn typed_causes_map_to_their_codes_through_context() {
        let err = anyhow::Error::new(NotReady("waited for `vol-1`".into())).context("mounting");
        assert_eq!(ExitCode::for_error(&err), ExitCode::NotReady);
        let err: anyhow::Result<()> = Err(UsageError("bad --zone".into()).into());
        let err = err.context("choosing zone").unwrap_err();
        assert_eq!(ExitCode::for_error(&err), ExitCode::Usage);
        assert_eq!(
            ExitCode::for_error(&anyhow::anyhow!("boom")),
            ExitCode::Failed
        );
    }

    #[derive(Debug)]
    struct Repeats(&'static str, Option<Box<Repeats>>);

    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn an_error_says_each_cause_once_on_one_line() {
        // A library error whose text already holds its source's.
        let inner = Repeats("certificate expired", None);
        let outer = Repeats(
            "invalid peer certificate: certificate expired",
            Some(Box::new(inner)),
        );
        let err = anyhow::Error::new(outer).context("connecting to `https://127.0.0.1`");
        assert_eq!(
            one_line(&err),
            "connecting to `https://127.0.0.1`: invalid peer certificate: certificate expired"
        );
        let err = anyhow::anyhow!("line one\nline two").context("reading `x`");
        assert_eq!(one_line(&err), "reading `x`: line one; line two");
    }
}
