//! Whether a converged node can trust its last full check of the cloud (docs/performance.md): on a master
//! the one fresh `DescribeInstances` answer against the recorded one, the interval, and the
//! local facts the rest of the run would act on; on a gossip worker the interval (less its
//! jitter) and the hosts block on disk. Pure.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use crate::cloud::{AttachmentState, InstanceInfo};
use crate::plan::dns::hosts_block::HostRecords;
use crate::plan::state::{Verified, WorkerVerified};
use crate::plan::volumes::{classify, plan_claims, ClaimPlan, ProviderFacts};

/// What this run does with the cloud.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// The recorded check still holds: the volumes and the names are taken from it.
    Trusted,
    /// Ask the cloud for everything, for this reason.
    Full(String),
}

/// Whether a full check is due before asking anything: nothing recorded, or the interval
/// passed (an interval of 0 never trusts). `Some(reason)` when it is.
pub(crate) fn due(
    recorded: Option<&Verified>,
    now: SystemTime,
    interval: Duration,
) -> Option<String> {
    if interval.is_zero() {
        return Some("--verify-interval is 0".to_owned());
    }
    let Some(recorded) = recorded else {
        return Some("nothing verified yet".to_owned());
    };
    let limit = format!("--verify-interval {}", humantime::format_duration(interval));
    expired(recorded.at, now, interval, &limit)
}

/// Why a check made `at` no longer holds at `now`, trusted for `trusted_for` (`limit` says
/// what set that); `None` while it holds.
fn expired(at: SystemTime, now: SystemTime, trusted_for: Duration, limit: &str) -> Option<String> {
    match now.duration_since(at) {
        Ok(age) if age < trusted_for => None,
        Ok(age) => Some(format!(
            "last verified {} ago ({limit})",
            humantime::format_duration(Duration::from_secs(age.as_secs())),
        )),
        Err(_) => Some("last verified in the future (the clock went back)".to_owned()),
    }
}

/// Whether a gossip worker's recorded check holds at `now`: of this `cluster`, younger than
/// `interval` less its jitter (at most a tenth of `interval`), and the hosts file's managed block (`on_disk`) still the one it
/// wrote. `Some(reason)` when a full check is due.
pub(crate) fn worker_due(
    recorded: Option<&WorkerVerified>,
    now: SystemTime,
    interval: Duration,
    cluster: &str,
    on_disk: &HostRecords,
) -> Option<String> {
    if interval.is_zero() {
        return Some("--verify-interval is 0".to_owned());
    }
    let Some(recorded) = recorded else {
        return Some("nothing verified yet".to_owned());
    };
    if recorded.cluster != cluster {
        return Some(format!(
            "the recorded check is of cluster `{}`",
            recorded.cluster
        ));
    }
    // Drawn for the interval of its day: never more than a tenth of this run's.
    let jitter = Duration::from_secs(recorded.jitter_seconds).min(interval / 10);
    let limit = format!(
        "--verify-interval {} less {} jitter",
        humantime::format_duration(interval),
        humantime::format_duration(jitter)
    );
    if let Some(reason) = expired(recorded.at, now, interval.saturating_sub(jitter), &limit) {
        return Some(reason);
    }
    (recorded.hosts != *on_disk).then(|| {
        "the hosts file's managed block is not the one written at the last check".to_owned()
    })
}

/// The facts of this node a trusted run relies on.
#[derive(Clone, Debug)]
pub(crate) struct Local<'a> {
    pub(crate) cluster: &'a str,
    pub(crate) instance_id: &'a str,
    pub(crate) zone: &'a str,
    /// The volumes mounted at protokube's own mount points here (from the mount table, whatever
    /// the record says).
    pub(crate) mounted: &'a BTreeSet<String>,
    /// What the volume rules need of the provider (its root devices, its words).
    pub(crate) provider: ProviderFacts<'a>,
}

/// Decides, once the masters have been asked for, whether the recorded check (not yet due, see
/// [`due`]) holds: the answer is the recorded one, this instance is among the masters (so a
/// change of its own attachments shows in the answer), and the recorded volumes leave nothing
/// to claim, release or mount here.
pub(crate) fn decide(recorded: &Verified, masters: &[InstanceInfo], local: &Local<'_>) -> Check {
    if let Some(change) = masters_change(&recorded.masters, masters) {
        return Check::Full(change);
    }
    if !masters.iter().any(|m| m.id == local.instance_id) {
        return Check::Full(format!(
            "this instance `{}` is not among the cluster's running masters",
            local.instance_id
        ));
    }
    let discovery = classify(
        local.cluster,
        None,
        recorded.volumes.clone(),
        local.provider,
    );
    let here: Vec<_> = discovery
        .volumes
        .into_iter()
        .filter(|v| v.zone == local.zone)
        .collect();
    // The record must agree with the node: a volume mounted here that it does not have attached
    // here (a record that lost it, a volume it skipped) is checked in full, never forgotten.
    for id in local.mounted {
        let recorded_here = here.iter().any(|v| {
            &v.id == id
                && v.attachment
                    .as_ref()
                    .is_some_and(|a| a.instance_id == local.instance_id)
        });
        if !recorded_here {
            return Check::Full(format!(
                "volume `{id}` is mounted here but the recorded check does not have it attached \
                 here"
            ));
        }
    }
    // Attach times play no part: a trusted answer has no attachment in progress.
    let plan = plan_claims(&here, local.instance_id, local.mounted, recorded.at);
    let pending = !plan.extra.is_empty()
        || !plan.stuck.is_empty()
        || !plan.doubled.is_empty()
        || plan
            .candidates
            .iter()
            .any(|v| ClaimPlan::still_wanted(v, &plan.held_keys));
    if pending {
        return Check::Full("volumes to claim or release in this zone".to_owned());
    }
    let attached_here = here.iter().filter(|v| {
        v.attachment
            .as_ref()
            .is_some_and(|a| a.instance_id == local.instance_id)
    });
    for volume in attached_here {
        if let Some(state) = volume
            .attachment
            .as_ref()
            .map(|a| a.state)
            .filter(|s| *s != AttachmentState::Attached)
        {
            return Check::Full(format!(
                "volume `{}` is `{}` here",
                volume.id,
                state.as_str()
            ));
        }
        if !local.mounted.contains(&volume.id) {
            return Check::Full(format!(
                "volume `{}` is attached here but not mounted",
                volume.id
            ));
        }
    }
    Check::Trusted
}

/// What differs between the recorded masters and the fresh answer, in words; `None` when
/// nothing does.
pub(crate) fn masters_change(recorded: &[InstanceInfo], fresh: &[InstanceInfo]) -> Option<String> {
    let find = |list: &[InstanceInfo], id: &str| list.iter().find(|m| m.id == id).cloned();
    for master in fresh {
        match find(recorded, &master.id) {
            None => return Some(format!("master `{}` is new", master.id)),
            Some(before) if before.private_ips != master.private_ips => {
                return Some(format!("the private addresses of `{}` changed", master.id))
            }
            Some(before) if before.public_ips != master.public_ips => {
                return Some(format!("the public addresses of `{}` changed", master.id))
            }
            Some(before) if before.volumes != master.volumes => {
                return Some(format!("the volumes attached to `{}` changed", master.id))
            }
            Some(_) => {}
        }
    }
    recorded
        .iter()
        .find(|m| find(fresh, &m.id).is_none())
        .map(|gone| format!("master `{}` is gone", gone.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::VolumeState;
    use crate::cloud::{CloudVolume, InstanceVolume, VolumeAttachment};
    use std::collections::BTreeMap;

    const C: &str = "c.example.com";

    fn master(id: &str, ip: &str, volumes: &[&str]) -> InstanceInfo {
        InstanceInfo {
            id: id.into(),
            private_ips: vec![ip.parse().unwrap()],
            public_ips: vec![],
            volumes: volumes
                .iter()
                .enumerate()
                .map(|(i, v)| InstanceVolume {
                    device: format!("/dev/xvd{}", (b'u' + i as u8) as char),
                    volume_id: (*v).into(),
                    status: AttachmentState::Attached,
                })
                .collect(),
        }
    }

    fn volume(id: &str, member: &str, zone: &str, on: Option<&str>) -> CloudVolume {
        let tags: BTreeMap<String, String> = [
            ("KubernetesCluster", C),
            ("k8s.io/role/master", "1"),
            ("k8s.io/etcd/main", &format!("{member}/a,b")[..]),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        CloudVolume {
            id: id.into(),
            zone: zone.into(),
            state: if on.is_some() {
                VolumeState::InUse
            } else {
                VolumeState::Available
            },
            attachments: on
                .map(|instance| VolumeAttachment {
                    instance_id: instance.into(),
                    device: "/dev/xvdu".into(),
                    state: AttachmentState::Attached,
                    attach_time: None,
                    root: false,
                    read_only: false,
                })
                .into_iter()
                .collect(),
            tags,
            made_from: None,
            regional: false,
        }
    }

    fn recorded(masters: Vec<InstanceInfo>, volumes: Vec<CloudVolume>) -> Verified {
        Verified {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
            masters,
            volumes,
            published: vec![],
            left_alone: vec![],
        }
    }

    fn converged() -> Verified {
        recorded(
            vec![
                master("i-a", "10.0.0.1", &["vol-a"]),
                master("i-b", "10.0.0.2", &["vol-b"]),
            ],
            vec![
                volume("vol-a", "a", "za", Some("i-a")),
                volume("vol-b", "b", "zb", Some("i-b")),
            ],
        )
    }

    fn decide_with(recorded: &Verified, masters: &[InstanceInfo], mounted: &[&str]) -> Check {
        let mounted: BTreeSet<String> = mounted.iter().map(|v| (*v).to_owned()).collect();
        let local = Local {
            cluster: C,
            instance_id: "i-a",
            zone: "za",
            mounted: &mounted,
            provider: ProviderFacts {
                devices: &crate::providers::aws::devices::EbsDevices,
                words: &crate::cloud::tags::KopsTags,
            },
        };
        decide(recorded, masters, &local)
    }

    fn reason(check: Check) -> String {
        match check {
            Check::Full(reason) => reason,
            Check::Trusted => panic!("trusted"),
        }
    }

    #[test]
    fn a_full_check_is_due_without_a_record_after_the_interval_and_with_interval_zero() {
        let record = converged();
        let minute = Duration::from_mins(1);
        assert_eq!(due(Some(&record), record.at + minute, 15 * minute), None);
        let late = due(Some(&record), record.at + 16 * minute, 15 * minute).unwrap();
        assert_eq!(late, "last verified 16m ago (--verify-interval 15m)");
        assert!(due(Some(&record), record.at, Duration::ZERO).is_some());
        assert!(due(None, record.at, 15 * minute).is_some());
        let back = due(Some(&record), record.at - minute, 15 * minute).unwrap();
        assert!(back.contains("clock"), "{back}");
    }

    #[test]
    fn a_worker_trusts_its_check_for_the_interval_less_jitter_while_its_hosts_block_stands() {
        let minute = Duration::from_mins(1);
        let hosts: HostRecords = [(
            "api.internal.c.example.com".to_owned(),
            vec!["10.0.0.1".parse().unwrap()],
        )]
        .into();
        let record = WorkerVerified {
            at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
            jitter_seconds: 60,
            cluster: C.to_owned(),
            masters: converged().masters,
            hosts: hosts.clone(),
        };
        let due_at = |after: Duration, on_disk: &HostRecords| {
            worker_due(Some(&record), record.at + after, 15 * minute, C, on_disk)
        };
        assert_eq!(due_at(13 * minute, &hosts), None);
        assert_eq!(
            due_at(14 * minute, &hosts).unwrap(),
            "last verified 14m ago (--verify-interval 15m less 1m jitter)"
        );
        let edited = HostRecords::new();
        assert!(due_at(minute, &edited).unwrap().contains("hosts file"));
        assert!(worker_due(
            Some(&record),
            record.at,
            15 * minute,
            "other.example.com",
            &hosts
        )
        .unwrap()
        .contains(C));
        assert!(worker_due(Some(&record), record.at, Duration::ZERO, C, &hosts).is_some());
        assert!(worker_due(None, record.at, 15 * minute, C, &hosts).is_some());
        assert!(due_at(Duration::ZERO, &hosts).is_none());
        // A shorter interval than the one the jitter was drawn for: a tenth of it at most.
        let short = |after| worker_due(Some(&record), record.at + after, 5 * minute, C, &hosts);
        assert_eq!(short(4 * minute), None);
        assert!(short(Duration::from_secs(270)).is_some());
        let back = worker_due(Some(&record), record.at - minute, 15 * minute, C, &hosts).unwrap();
        assert!(back.contains("clock"), "{back}");
    }

    #[test]
    fn the_same_answer_with_everything_mounted_is_trusted() {
        let record = converged();
        assert_eq!(
            decide_with(&record, &record.masters, &["vol-a"]),
            Check::Trusted
        );
    }

    #[test]
    fn each_change_in_the_answer_is_named() {
        let record = converged();
        let mut moved = record.masters.clone();
        moved[1].private_ips = vec!["10.0.0.9".parse().unwrap()];
        assert_eq!(
            reason(decide_with(&record, &moved, &["vol-a"])),
            "the private addresses of `i-b` changed"
        );
        let mut public = record.masters.clone();
        public[1].public_ips = vec!["54.0.0.9".parse().unwrap()];
        assert!(reason(decide_with(&record, &public, &["vol-a"])).contains("public"));
        let gone = vec![record.masters[0].clone()];
        assert_eq!(
            reason(decide_with(&record, &gone, &["vol-a"])),
            "master `i-b` is gone"
        );
        let mut new = record.masters.clone();
        new.push(master("i-c", "10.0.0.3", &[]));
        assert_eq!(
            reason(decide_with(&record, &new, &["vol-a"])),
            "master `i-c` is new"
        );
        // A member's volume moved from i-b to a new i-c: both show it.
        let moved_volume = vec![record.masters[0].clone(), master("i-b", "10.0.0.2", &[])];
        assert_eq!(
            reason(decide_with(&record, &moved_volume, &["vol-a"])),
            "the volumes attached to `i-b` changed"
        );
    }

    #[test]
    fn local_facts_that_do_not_hold_force_a_full_check() {
        let record = converged();
        // The volume attached here is not mounted (after a reboot).
        assert_eq!(
            reason(decide_with(&record, &record.masters, &[])),
            "volume `vol-a` is attached here but not mounted"
        );
        // This instance is not a tagged master: its own attachments are not in the answer.
        let others = recorded(
            vec![master("i-b", "10.0.0.2", &["vol-b"])],
            record.volumes.clone(),
        );
        assert!(reason(decide_with(&others, &others.masters, &["vol-a"])).contains("i-a"));
        // A free member in this zone while this node holds none: a claim to make.
        let free = recorded(
            vec![master("i-a", "10.0.0.1", &[])],
            vec![volume("vol-a", "a", "za", None)],
        );
        assert_eq!(
            reason(decide_with(&free, &free.masters, &[])),
            "volumes to claim or release in this zone"
        );
        // A volume mounted here that the record lost (or never had attached here): checked in
        // full, not forgotten.
        assert_eq!(
            reason(decide_with(&record, &record.masters, &["vol-a", "vol-z"])),
            "volume `vol-z` is mounted here but the recorded check does not have it attached here"
        );
    }
}
