//! How the steps that talk to the Kubernetes API wait for it: asked every 5 s, as kOps'
//! protokube polled, within the run's deadline and, in the old daemon's loop, within the minute
//! before the loop comes back. Shared by the API steps ([`super::kubernetes`]) and the label
//! step ([`super::labels`]), which import it, never each other.

use std::time::Duration;

use crate::settings::Settings;
use crate::wait::Deadline;

/// How often an API not there yet is asked again (kOps' protokube: every 5 s).
pub(crate) const API_POLL: Duration = Duration::from_secs(5);

/// The deadline of the run's Kubernetes API steps: the run's, and in a loop (the old daemon's)
/// no later than when the loop comes back.
pub(crate) fn api_deadline(settings: &Settings) -> Deadline {
    let deadline = settings.deadline;
    match settings.repeat {
        Some(every) => deadline.earliest(Deadline::after(every)),
        None => deadline,
    }
}
