//! What a provider's `connect` makes for a run: its cloud and its DNS service's zones, made
//! together (one configuration, one credential, one deadline). Apart from the registry, so that
//! a provider's folder and the registry that names it import this, never each other.

use crate::cloud::Cloud;
use crate::dns::zoned::api::ZoneService;

/// A provider's clients for one run.
pub(crate) struct Connected {
    pub(crate) cloud: Box<dyn Cloud>,
    pub(crate) zones: Box<dyn ZoneService>,
}
