//! Where this node's names go, chosen once per run from the settings and the cluster
//! ([`choose`]): a DNS service's zones ([`zoned`], each service's client in its own folder), the
//! hosts file ([`hosts_file`]), or nowhere ([`none`]) with the reason said once.
//! The steps ask the chosen [`target::DnsTarget`]; none of them matches on the provider.

pub(crate) mod hosts_file;
#[cfg(test)]
pub(crate) mod memory;
pub(crate) mod none;
pub(crate) mod target;
pub(crate) mod zoned;

use crate::gossip::Handle;
use crate::host::Files;
use crate::settings::{Cluster, DnsKind, Settings};
use hosts_file::HostsFile;
use none::Nowhere;
use target::DnsTarget;
use zoned::api::ZoneService;
use zoned::ZonedNames;

/// Where a run's names may go besides the node's files: the cloud's DNS service, and the gossip
/// member running beside the run (the old daemon's unit on a gossip cluster), if any.
#[derive(Clone, Copy)]
pub(crate) struct Places<'a> {
    pub(crate) zones: &'a dyn ZoneService,
    pub(crate) member: Option<&'a Handle>,
}

/// The target for this run: a DNS service's zones only from control-plane nodes, the hosts file
/// on every node of a gossip cluster, nowhere for `--dns none` (or a cluster without DNS).
/// `places` holds the run's client source for the cluster's DNS service and the member beside
/// the run, `files` the node's (where the hosts file is).
pub(crate) fn choose<'a>(
    settings: &'a Settings,
    cluster: &Cluster,
    places: Places<'a>,
    files: &'a dyn Files,
) -> Box<dyn DnsTarget + 'a> {
    match cluster.dns {
        DnsKind::None => Box::new(Nowhere {
            why: cluster
                .dns_note
                .clone()
                .unwrap_or_else(|| "--dns none: nothing to publish".into()),
        }),
        DnsKind::Zones if !settings.master => Box::new(Nowhere {
            why: format!(
                "only control-plane nodes publish to {} (--master is not set)",
                settings.provider.zone_service
            ),
        }),
        DnsKind::Zones => Box::new(ZonedNames {
            settings,
            cluster: cluster.clone(),
            service: places.zones,
        }),
        DnsKind::Hosts => Box::new(HostsFile {
            settings,
            cluster: cluster.clone(),
            files,
            member: places.member,
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::settings::{DnsChoice, DnsKind};
    use crate::steps::testing::Bench;

    /// The idle reason and whether names are shared with dns-controller, for a node.
    fn chosen(master: bool, dns: DnsKind) -> (Option<String>, bool) {
        let bench = Bench::with_flags(&[], |flags| {
            flags.master = master;
            flags.dns = Some(DnsChoice::of(dns));
        });
        let target = bench.dns();
        (
            target.idle_reason().map(str::to_owned),
            target.shared_with_dns_controller(),
        )
    }

    #[test]
    fn each_node_gets_the_target_its_provider_and_role_say() {
        assert_eq!(chosen(true, DnsKind::Zones), (None, true));
        let (why, _) = chosen(false, DnsKind::Zones);
        assert!(why
            .unwrap()
            .contains("only control-plane nodes publish to Route53"));
        assert_eq!(chosen(false, DnsKind::Hosts), (None, false));
        let (why, _) = chosen(true, DnsKind::None);
        assert!(why.unwrap().contains("--dns none"));
    }
}
