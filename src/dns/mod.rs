//! Where this node's names go, chosen once per run from the settings and the cluster
//! ([`choose`]): a DNS service's zones ([`zoned`], each service's client in its own folder), the
//! hosts file ([`hosts`]), or nowhere ([`none`]) with the reason said once.
//! The steps ask the chosen [`target::DnsTarget`]; none of them matches on the provider.

pub mod clouddns;
pub mod hosts;
#[cfg(test)]
pub mod memory;
pub mod none;
pub mod route53;
pub mod target;
pub mod zoned;

use crate::settings::{Cluster, DnsPlace, Settings};
use hosts::HostsFile;
use none::Nowhere;
use target::DnsTarget;
use zoned::api::ZoneService;
use zoned::ZonedNames;

/// The target for this run: a DNS service's zones only from control-plane nodes, the hosts file
/// on every node of a gossip cluster, nowhere for `--dns none` (or a cluster without DNS).
/// `zones` is the run's client source for the cluster's DNS service.
pub fn choose<'a>(
    settings: &'a Settings,
    cluster: &Cluster,
    zones: &'a dyn ZoneService,
) -> Box<dyn DnsTarget + 'a> {
    match cluster.dns.place() {
        DnsPlace::Nowhere => Box::new(Nowhere {
            why: cluster
                .dns_note
                .clone()
                .unwrap_or_else(|| "--dns none: nothing to publish".into()),
        }),
        DnsPlace::Zones(service) if !settings.master => Box::new(Nowhere {
            why: format!("only control-plane nodes publish to {service} (--master is not set)"),
        }),
        DnsPlace::Zones(_) => Box::new(ZonedNames {
            settings,
            cluster: cluster.clone(),
            service: zones,
        }),
        DnsPlace::HostsFile => Box::new(HostsFile {
            settings,
            cluster: cluster.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use crate::settings::DnsProvider;
    use crate::steps::testing::Bench;

    /// The idle reason and whether names are shared with dns-controller, for a node.
    fn chosen(master: bool, dns: DnsProvider) -> (Option<String>, bool) {
        let bench = Bench::with_flags(&[], |flags| {
            flags.master = master;
            flags.dns = Some(dns);
        });
        let target = bench.dns();
        (
            target.idle_reason().map(str::to_owned),
            target.shared_with_dns_controller(),
        )
    }

    #[test]
    fn each_node_gets_the_target_its_provider_and_role_say() {
        assert_eq!(chosen(true, DnsProvider::Route53), (None, true));
        let (why, _) = chosen(false, DnsProvider::Route53);
        assert!(why
            .unwrap()
            .contains("only control-plane nodes publish to Route53"));
        assert_eq!(chosen(false, DnsProvider::Hosts), (None, false));
        let (why, _) = chosen(true, DnsProvider::None);
        assert!(why.unwrap().contains("--dns none"));
    }
}
