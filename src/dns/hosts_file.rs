//! The hosts file as a place for names: the managed block of `<root>/etc/hosts`, on every node
//! of a gossip cluster (and, for etcd's names, of a cluster without DNS), planned by
//! [`crate::plan::dns::hosts_block`] and written through the node's seam. The one writer of the
//! block ([`rewrite_block`]): the one-shot runs' target and the gossip member's writer
//! ([`write_view`]) both go through it.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use async_trait::async_trait;

use super::target::{Desired, DnsTarget, Known, PublishOutcome, Releasing, RunFacts};
use crate::cloud::InstanceInfo;
use crate::error::NotReady;
use crate::gossip::view::{hosts_with_view, View};
use crate::gossip::Handle;
use crate::host::{Files, HostsWrite};
use crate::paths::{GOSSIP_NAMES_FILE, HOSTS_FILE};
use crate::plan::dns::hosts_block::{
    caught_mid_write, managed_records, plan_hosts, plan_hosts_removal, HostRecords, HostsPlan,
    ManagedNames, NO_NAMES,
};
use crate::plan::dns::records::{gossip_master_records, DesiredRecord, RecordRole};
use crate::plan::volumes::EtcdVolume;
use crate::report::{Action, Change, ChangeKind, Report};
use crate::settings::{Cluster, Settings};
use crate::wait::{retry_until, Backoff, Deadline, Retry};

/// Reads and plans of the hosts file before a writer gives up on another writer that keeps
/// changing it.
const HOSTS_ATTEMPTS: u32 = 10;

/// The managed block of `<root>/etc/hosts`, read and written through `files`; the gossip
/// member beside the run, when there is one, holds the names its view holds.
pub(crate) struct HostsFile<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) cluster: Cluster,
    pub(crate) files: &'a dyn Files,
    pub(crate) member: Option<&'a Handle>,
}

/// What a rewrite of the block made: the file's new bytes and one change per name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostsUpdate {
    pub(crate) content: Vec<u8>,
    pub(crate) changes: Vec<Change>,
}

/// Rewrites the hosts file at `path` with `plan` (the new bytes and changes from the bytes it
/// holds), in place, unless `dry_run`. Another writer that changed the file between the read
/// and the write (etcd-manager keeps its own blocks there), or is caught halfway through its
/// own write, is met by reading again and planning again, a few times, then "not ready"
/// (exit 75): never a mixed file, never a failed run.
pub(crate) async fn rewrite_block(
    files: &dyn Files,
    path: &Path,
    deadline: Deadline,
    dry_run: bool,
    plan: impl Fn(&[u8]) -> HostsUpdate,
) -> Result<HostsUpdate> {
    let target = path.display().to_string();
    let seen_torn: std::cell::RefCell<Option<Vec<u8>>> = std::cell::RefCell::new(None);
    let (target, seen_torn, plan) = (&target, &seen_torn, &plan);
    let written = retry_until(
        deadline,
        Backoff::new(Duration::from_millis(10), Duration::from_millis(100)),
        HOSTS_ATTEMPTS,
        |attempt| async move {
            let content = files.read_hosts(path)?;
            // Another writer's write caught halfway is read again, unless the same bytes were
            // read after the last pause too (then that is what the file holds).
            let mut torn = seen_torn.borrow_mut();
            if caught_mid_write(&content) && torn.as_deref() != Some(&content[..]) {
                tracing::debug!("`{target}` is being written by another writer; reading it again");
                *torn = Some(content);
                return Ok(Retry::Again(None));
            }
            let update = plan(&content);
            if dry_run || files.write_hosts(path, &content, &update.content)? != HostsWrite::Raced {
                return Ok(Retry::Done(update));
            }
            tracing::debug!(
                "`{target}` changed under another writer (attempt {attempt}); reading it again"
            );
            Ok(Retry::Again(None))
        },
    )
    .await?;
    written.map_err(|_| {
        NotReady(format!(
            "the hosts file `{target}` kept changing under another writer while protokube wrote \
             its block ({HOSTS_ATTEMPTS} attempts); run again"
        ))
        .into()
    })
}

/// Writes a gossip member's `view` into the hosts block at `path` (in place, only when its
/// lines change): every name of the view at its addresses, the deleted ones gone, every other
/// line as it was. With `dry_run`, only plans.
pub(crate) async fn write_view(
    files: &dyn Files,
    path: &Path,
    deadline: Deadline,
    view: &View,
    dry_run: bool,
) -> Result<HostsUpdate> {
    rewrite_block(files, path, deadline, dry_run, |content| {
        let new = if view.records.is_empty() && view.deleted.is_empty() {
            content.to_vec()
        } else {
            hosts_with_view(content, view)
        };
        HostsUpdate {
            changes: name_changes(content, &new),
            content: new,
        }
    })
    .await
}

/// One change per name of the block that a rewrite adds, changes or removes.
fn name_changes(old: &[u8], new: &[u8]) -> Vec<Change> {
    let (before, after) = (managed_records(old), managed_records(new));
    let show = |a: Option<&Vec<IpAddr>>| {
        a.map_or_else(
            || "none".to_owned(),
            |a| {
                a.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            },
        )
    };
    before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter_map(|name| {
            let (old, new) = (before.get(name), after.get(name));
            let action = match (old, new) {
                (None, Some(_)) => Action::Create,
                (Some(_), None) => Action::Delete,
                (Some(a), Some(b)) if a != b => Action::Update,
                _ => return None,
            };
            Some(Change {
                kind: ChangeKind::Hosts,
                target: name.clone(),
                action,
                detail: format!("{} -> {}", show(old), show(new)),
            })
        })
        .collect()
}

/// The names a gossip member in another process recorded (the names file's bytes; anything
/// that is not a DNS name is ignored).
pub(crate) fn recorded_names(recorded: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(recorded)
        .lines()
        .map(str::trim)
        .filter(|name| crate::names::check_dns_name(name).is_ok())
        .map(str::to_owned)
        .collect()
}

/// The names file's text for `names` (one per line).
pub(crate) fn names_text(names: &BTreeSet<String>) -> String {
    names.iter().map(|n| format!("{n}\n")).collect()
}

impl HostsFile<'_> {
    /// The names of kOps' hosts block that are protokube's (publish and reset): without DNS
    /// (`topology.dns.type: None`) nodeup writes the API's and kops-controller's names itself,
    /// so only the etcd names are protokube's there.
    fn names<'n>(&'n self, yielded: &'n BTreeSet<String>) -> ManagedNames<'n> {
        ManagedNames {
            yielded,
            cluster: &self.cluster.name,
            internal_suffix: &self.cluster.internal_suffix,
            public_name: &self.cluster.public_name,
            api_names: !self
                .settings
                .spec
                .as_ref()
                .is_some_and(|d| d.spec.uses_none_dns()),
        }
    }

    fn path(&self) -> Result<PathBuf> {
        self.settings.root.resolve(HOSTS_FILE)
    }

    /// Reads the hosts file, plans the new one from what it holds, writes it unless a dry run
    /// ([`rewrite_block`]); the plan's changes go into `report`. Returns the new content.
    async fn rewrite(
        &self,
        plan: impl Fn(&str, &[u8]) -> HostsPlan,
        report: &mut Report,
    ) -> Result<Vec<u8>> {
        let path = self.path()?;
        let target = path.display().to_string();
        let settings = self.settings;
        let update = rewrite_block(
            self.files,
            &path,
            settings.deadline,
            settings.dry_run,
            |content| {
                let plan = plan(&target, content);
                HostsUpdate {
                    content: plan.content,
                    changes: plan.changes,
                }
            },
        )
        .await?;
        for change in update.changes {
            report.push(change);
        }
        Ok(update.content)
    }
}

#[async_trait(?Send)]
impl DnsTarget for HostsFile<'_> {
    fn names_on_node(&self) -> Result<Option<HostRecords>> {
        Ok(Some(managed_records(
            &self.files.read_hosts(&self.path()?)?,
        )))
    }

    fn master_records(
        &self,
        volumes: &[EtcdVolume],
        masters: &[InstanceInfo],
    ) -> Vec<DesiredRecord> {
        // Without a DNS service, as current kOps' nodeup: the API at 127.0.0.1 here.
        let spec_public_name = self
            .settings
            .spec
            .as_ref()
            .and_then(|s| s.spec.master_public_name.as_ref())
            .map(|_| self.cluster.public_name.as_str());
        gossip_master_records(
            &self.cluster.name,
            &self.cluster.internal_suffix,
            spec_public_name,
            volumes,
            masters,
        )
    }

    async fn publish(
        &self,
        _: &RunFacts,
        desired: Desired,
        _: &Known,
        report: &mut Report,
    ) -> Result<PublishOutcome> {
        // Without DNS (topology.dns.type: None) nodeup writes the API's and kops-controller's
        // names into the block itself (the load balancer's addresses): only etcd's are ours.
        // A gossip member (in this process, or one that recorded its names) writes the names its
        // view holds; etcd's names go into gossip too (kOps' gossip DNS provider), and
        // --remove-dns-names out of it.
        let held = match self.member {
            Some(member) => member.names(),
            None => self
                .settings
                .root
                .resolve(GOSSIP_NAMES_FILE)
                .and_then(|path| self.files.read(&path, 1 << 20))
                .ok()
                .flatten()
                .map(|bytes| recorded_names(&bytes))
                .unwrap_or_default(),
        };
        let names = self.names(&held);
        let mut records = desired.records;
        let etcd: Vec<(String, Vec<std::net::IpAddr>)> = records
            .iter()
            .filter(|r| r.role == RecordRole::EtcdMember && !r.addresses.is_empty())
            .map(|r| (r.name.clone(), r.addresses.clone()))
            .collect();
        if let Some(member) = self.member {
            member.publish(&etcd, &self.settings.remove_dns_names);
        }
        records.retain(|r| names.manages(&r.name));
        let written = self
            .rewrite(
                |path, content| plan_hosts(path, content, &records, &names),
                report,
            )
            .await?;
        Ok(PublishOutcome {
            hosts_block: Some(managed_records(&written)),
            ..PublishOutcome::nothing()
        })
    }

    async fn release(&self, _: &Releasing, report: &mut Report) -> Result<()> {
        let names = self.names(&NO_NAMES);
        self.rewrite(
            |path, content| plan_hosts_removal(path, content, &names),
            report,
        )
        .await
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Action;
    use crate::steps::testing::{master, Bench};

    /// A master of a cluster whose names go to the hosts file.
    fn bench() -> Bench {
        Bench::with_flags(&[], |flags| {
            flags.dns = Some(crate::settings::DnsChoice::of(
                crate::settings::DnsKind::Hosts,
            ));
        })
    }

    fn hosts(bench: &Bench) -> String {
        String::from_utf8(bench.host.node().files[&bench.path(HOSTS_FILE)].0.clone()).unwrap()
    }

    fn desired(bench: &Bench) -> Desired {
        let dns = bench.dns();
        Desired {
            records: dns.master_records(&[], &[master("i-1", "10.0.0.1")]),
            listed_etcd_names: None,
        }
    }

    #[test]
    fn the_block_is_written_beside_the_nodes_own_lines_and_taken_out_again() {
        let bench = bench();
        bench.file(HOSTS_FILE, "127.0.0.1 localhost\n");
        let dns = bench.dns();
        let mut report = bench.report();
        let outcome = Bench::block_on(dns.publish(
            &RunFacts::default(),
            desired(&bench),
            &Known::default(),
            &mut report,
        ))
        .unwrap();
        let text = hosts(&bench);
        assert!(text.starts_with("127.0.0.1 localhost\n"), "{text}");
        assert!(
            text.contains("# Begin host entries managed by kops"),
            "{text}"
        );
        assert!(text.contains("\tapi.internal.k.example.com\n"), "{text}");
        assert!(report.changes.iter().any(|c| c.action != Action::Unchanged));
        // What the worker's check compares with next time is what was written.
        assert_eq!(dns.names_on_node().unwrap(), outcome.hosts_block);
        Bench::block_on(dns.release(&Releasing::default(), &mut report)).unwrap();
        assert_eq!(hosts(&bench), "127.0.0.1 localhost\n");
    }

    #[test]
    fn without_dns_only_the_etcd_names_are_protokubes() {
        let bench = bench();
        bench.file(HOSTS_FILE, "");
        let mut settings = bench.settings.clone();
        settings.spec = Some(
            crate::spec::ClusterDocument::parse(
                "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata: {name: \
                 k.example.com}\nspec: {networking: {topology: {dns: {type: None}}}}\n",
                "cluster.yaml",
            )
            .unwrap(),
        );
        let target = HostsFile {
            settings: &settings,
            cluster: settings.cluster.clone().unwrap(),
            files: &bench.host,
            member: None,
        };
        let mut report = bench.report();
        let records = target.master_records(&[], &[master("i-1", "10.0.0.1")]);
        assert!(records
            .iter()
            .any(|r| r.name == "api.internal.k.example.com"));
        let desired = Desired {
            records,
            listed_etcd_names: None,
        };
        Bench::block_on(target.publish(
            &RunFacts::default(),
            desired,
            &Known::default(),
            &mut report,
        ))
        .unwrap();
        // nodeup writes the API's names itself there: protokube leaves them out.
        assert!(!hosts(&bench).contains("api.internal"), "{}", hosts(&bench));
    }
}
