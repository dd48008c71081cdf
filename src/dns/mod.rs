//! DNS: the records protokube publishes (computed from cloud state, `records`), the zone rules
//! (`zones`), and the two providers, Route53 (`route53`) and the hosts file (`hosts`).

pub mod hosts;
pub mod records;
pub mod route53;
pub mod zones;

use anyhow::Result;

use crate::dns::hosts::{managed_records, update_hosts, write_hosts, HostRecords};
use crate::dns::records::DesiredRecord;
use crate::fsutil::HostRoot;
use crate::report::{Action, Change, ChangeKind, Report};

/// Host path of the hosts file.
pub const HOSTS_HOST_PATH: &str = "/etc/hosts";

/// The block's new records: the desired addresses, or for a name whose addresses are unknown
/// right now the ones it has; names the cloud no longer supports are dropped. Pure.
pub fn hosts_records(desired: &[DesiredRecord], current: &HostRecords) -> HostRecords {
    desired
        .iter()
        .filter_map(|record| {
            let addresses = if record.addresses.is_empty() {
                current.get(&record.name).cloned().unwrap_or_default()
            } else {
                record.addresses.clone()
            };
            (!addresses.is_empty()).then(|| (record.name.clone(), addresses))
        })
        .collect()
}

/// Publishes to `<root>/etc/hosts`: one report entry per name.
pub fn publish_hosts(
    root: &HostRoot,
    desired: &[DesiredRecord],
    dry_run: bool,
    report: &mut Report,
) -> Result<()> {
    let path = root.path(HOSTS_HOST_PATH);
    let content = match fs_err::read_to_string(&path) {
        Ok(content) => content,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(err.into()),
    };
    let current = managed_records(&content);
    let wanted = hosts_records(desired, &current);
    let show = |a: Option<&Vec<std::net::Ipv4Addr>>| {
        a.map(|a| {
            a.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_else(|| "none".to_owned())
    };
    let names: std::collections::BTreeSet<&String> = current.keys().chain(wanted.keys()).collect();
    let mut records_changed = false;
    for name in names {
        let (old, new) = (current.get(name), wanted.get(name));
        let action = match (old, new) {
            (None, Some(_)) => Action::Create,
            (Some(_), None) => Action::Delete,
            (Some(a), Some(b)) if a == b => Action::Unchanged,
            _ => Action::Update,
        };
        records_changed |= action != Action::Unchanged;
        report.push(Change {
            kind: ChangeKind::Hosts,
            target: name.clone(),
            action,
            detail: if action == Action::Unchanged {
                show(new)
            } else {
                format!("{} -> {}", show(old), show(new))
            },
        });
    }
    let updated = update_hosts(&content, &wanted);
    // Judged on this step's own entries: in `sync` the report already holds earlier steps'.
    if updated != content && !records_changed {
        // Only the layout changed (duplicate or broken blocks repaired): still a change.
        report.push(Change {
            kind: ChangeKind::Hosts,
            target: path.display().to_string(),
            action: Action::Update,
            detail: "repaired the managed block".into(),
        });
    }
    if !dry_run {
        write_hosts(&path, &updated)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::records::RecordRole;

    #[test]
    fn a_layout_repair_is_reported_even_after_earlier_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::new(dir.path());
        let desired = [DesiredRecord {
            name: "api.internal.c".into(),
            role: RecordRole::ApiInternal,
            addresses: vec!["10.0.0.9".parse().unwrap()],
        }];
        let mut report = Report::new("sync", false);
        publish_hosts(&root, &desired, false, &mut report).unwrap();
        // The same records, but the block duplicated: only the layout needs repairing.
        let path = root.path(HOSTS_HOST_PATH);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}{text}")).unwrap();
        let mut report = Report::new("sync", false);
        report.push(Change {
            kind: ChangeKind::Mount,
            target: "/mnt/master-vol-1".into(),
            action: Action::Mount,
            detail: String::new(),
        });
        publish_hosts(&root, &desired, false, &mut report).unwrap();
        assert!(report
            .changes
            .iter()
            .any(|c| c.detail == "repaired the managed block"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn unknown_names_keep_their_addresses_and_unsupported_ones_go() {
        let desired = [
            DesiredRecord {
                name: "etcd-a.internal.c".into(),
                role: RecordRole::EtcdMember,
                addresses: vec![],
            },
            DesiredRecord {
                name: "api.internal.c".into(),
                role: RecordRole::ApiInternal,
                addresses: vec!["10.0.0.9".parse().unwrap()],
            },
        ];
        let current: HostRecords = [
            (
                "etcd-a.internal.c".to_owned(),
                vec!["10.0.0.1".parse().unwrap()],
            ),
            (
                "etcd-z.internal.c".to_owned(),
                vec!["10.0.0.7".parse().unwrap()],
            ),
        ]
        .into();
        let records = hosts_records(&desired, &current);
        assert_eq!(records["etcd-a.internal.c"], current["etcd-a.internal.c"]);
        assert_eq!(records["api.internal.c"].len(), 1);
        assert!(!records.contains_key("etcd-z.internal.c"));
    }
}
