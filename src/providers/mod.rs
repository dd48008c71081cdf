//! The providers protokube runs on, each in a folder of its own ([`aws`], [`gce`]): its value,
//! its cloud, its zone service, its device naming, its `connect`. This file holds the one list
//! of them ([`all`]), which `--cloud` takes its words and default from, and picks one by
//! `--cloud`'s word: adding a cloud adds its folder and one line here.

pub(crate) mod aws;
pub(crate) mod azure;
pub(crate) mod connected;
pub(crate) mod digitalocean;
pub(crate) mod gce;
pub(crate) mod hetzner;
pub(crate) mod http;
pub(crate) mod member_only;
pub(crate) mod openstack;
pub(crate) mod rest;
pub(crate) mod scaleway;

use anyhow::Result;

use crate::cloud::provider::Provider;
use crate::host::Files;
use crate::settings::Settings;
pub(crate) use connected::Connected;

/// A provider as the registry holds it: what is true of it, and how its cloud and zone service
/// are made for a run — given the node's files (a cloud whose credentials live in a file on
/// the node reads them there, under `--root`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Registered {
    pub(crate) provider: &'static Provider,
    pub(crate) connect: fn(&Settings, &dyn Files) -> Result<Connected>,
}

/// The registry: every provider, the first one `--cloud`'s default.
static REGISTRY: [Registered; 7] = [
    Registered {
        provider: &aws::PROVIDER,
        connect: aws::connect,
    },
    Registered {
        provider: &gce::PROVIDER,
        connect: gce::connect,
    },
    Registered {
        provider: &digitalocean::PROVIDER,
        connect: digitalocean::connect,
    },
    Registered {
        provider: &hetzner::PROVIDER,
        connect: hetzner::connect,
    },
    Registered {
        provider: &openstack::PROVIDER,
        connect: openstack::connect,
    },
    Registered {
        provider: &azure::PROVIDER,
        connect: azure::connect,
    },
    Registered {
        provider: &scaleway::PROVIDER,
        connect: scaleway::connect,
    },
];

/// Every provider, `--cloud`'s default first.
pub(crate) fn all() -> &'static [Registered] {
    &REGISTRY
}

/// The provider `--cloud`'s `word` names, if any.
#[cfg(test)]
pub(crate) fn registry(word: &str) -> Option<Registered> {
    all().iter().find(|r| r.provider.name == word).copied()
}

/// `--cloud`'s default: the registry's first.
impl Default for Registered {
    fn default() -> Self {
        all()[0]
    }
}

/// Its `--cloud` word.
impl std::fmt::Display for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.provider.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::testing::Bench;

    #[test]
    fn every_provider_is_registered_under_its_own_name_once() {
        let names: std::collections::BTreeSet<&str> =
            all().iter().map(|r| r.provider.name).collect();
        assert_eq!(names.len(), all().len());
        for name in names {
            assert_eq!(registry(name).unwrap().provider.name, name);
        }
        assert!(registry("openshift").is_none());
    }

    /// Each provider's `connect` against the in-memory node: its cloud and zone service made
    /// without a call (nothing is asked before the run needs it), counted under its name.
    #[test]
    fn each_providers_connect_makes_its_cloud_and_zones_without_a_call() {
        for registered in all() {
            let word = registered.provider.name;
            let bench = Bench::with_flags(&[], |flags| flags.provider = Some(registered.provider));
            let connected = (registered.connect)(&bench.settings, &bench.host).unwrap();
            assert!(connected.cloud.calls().values().all(|n| *n == 0), "{word}");
            assert!(
                !connected.cloud.devices().names().is_empty(),
                "{word}: its device naming"
            );
            assert!(bench.take_effects().is_empty(), "{word}: touched the node");
        }
    }
}
