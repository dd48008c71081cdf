//! etcd volume logic without I/O: which volumes are this cluster's etcd volumes (and why others
//! are skipped), and the order in which `mount` claims them.

use std::collections::BTreeSet;
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::cloud::tags::{
    CLUSTER as CLUSTER_TAG, ETCD_PREFIX as ETCD_TAG_PREFIX, MASTER_ROLE as MASTER_ROLE_TAG,
};
use crate::cloud::{AttachmentState, VolumeState};
use crate::cloud::{CloudVolume, DeviceNaming, MetadataWords, VolumeAttachment};
use crate::etcd::{parse_etcd_tag, EtcdKey, EtcdMembership};
use crate::plan::blank::{CloudWitness, FORMATTED_TAG};

/// A volume of this cluster that holds at least one etcd member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EtcdVolume {
    pub(crate) id: String,
    pub(crate) zone: String,
    /// Its state: `available`, `in-use`, …
    pub(crate) state: VolumeState,
    /// Where it is attached, if anywhere.
    pub(crate) attachment: Option<VolumeAttachment>,
    /// Its memberships, sorted by cluster key.
    pub(crate) etcd: Vec<EtcdMembership>,
    /// What the cloud says about its contents (the blank proof's first witness).
    pub(crate) cloud: CloudWitness,
}

/// A volume that matched the filters but is not used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SkippedVolume {
    pub(crate) id: String,
    pub(crate) zone: String,
    pub(crate) reason: String,
}

impl fmt::Display for SkippedVolume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "skipped volume `{}` in zone `{}`: {}",
            self.id,
            self.zone.escape_debug(),
            self.reason
        )
    }
}

/// The outcome of discovery: usable etcd volumes (sorted by id) and skipped ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Discovery {
    pub(crate) volumes: Vec<EtcdVolume>,
    pub(crate) skipped: Vec<SkippedVolume>,
}

/// What the volume rules need of the provider: its root device names (for clouds whose
/// attachments do not say which is the root device) and its words for kOps' keys.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProviderFacts<'a> {
    pub(crate) devices: &'a dyn DeviceNaming,
    pub(crate) words: &'a dyn MetadataWords,
}

/// Sorts the volumes the cloud returned for `cluster` (in `zone`, or in any zone for `None`) into
/// etcd volumes and skipped ones; `provider` knows its root device names and its words.
///
/// The cloud query already filters by cluster tag, role tag and zone; they are checked again here
/// so that a lenient or misbehaving API can never hand us another cluster's volume.
pub(crate) fn classify(
    cluster: &str,
    zone: Option<&str>,
    cloud_volumes: Vec<CloudVolume>,
    provider: ProviderFacts<'_>,
) -> Discovery {
    let mut discovery = Discovery::default();
    for volume in cloud_volumes {
        match classify_one(cluster, zone, &volume, provider) {
            Ok(etcd) => discovery.volumes.push(EtcdVolume {
                cloud: CloudWitness {
                    formatted_tag: volume.tags.get(FORMATTED_TAG).cloned(),
                    formatted_key: provider.words.key(FORMATTED_TAG),
                    noun: provider.words.noun(),
                    made_from: volume.made_from.clone(),
                },
                attachment: volume.attachments.into_iter().next(),
                id: volume.id,
                zone: volume.zone,
                state: volume.state,
                etcd,
            }),
            Err(reason) => discovery.skipped.push(SkippedVolume {
                id: volume.id,
                zone: volume.zone,
                reason,
            }),
        }
    }
    refuse_duplicate_members(&mut discovery, provider.words);
    discovery.volumes.sort_by(|a, b| a.id.cmp(&b.id));
    discovery.skipped.sort_by(|a, b| a.id.cmp(&b.id));
    discovery
}

/// One member, one volume: when several volumes carry the same etcd member (a restored snapshot
/// copy, a tag copied by hand), the one attached somewhere is the member's and the others are
/// skipped; when none or several are attached, none can be told to be the member's and all are
/// skipped. Each skip names the other volumes with their zones (a provider whose volume ids are
/// unique only within a zone can hold two of one name), so the operator can remove or retag
/// the copy.
fn refuse_duplicate_members(discovery: &mut Discovery, words: &dyn MetadataWords) {
    let mut holders: std::collections::BTreeMap<(&str, &str), Vec<usize>> = Default::default();
    for (index, volume) in discovery.volumes.iter().enumerate() {
        for membership in &volume.etcd {
            holders
                .entry((&membership.cluster, &membership.member))
                .or_default()
                .push(index);
        }
    }
    let mut refused: std::collections::BTreeMap<usize, String> = Default::default();
    for ((cluster, member), indexes) in &holders {
        if indexes.len() < 2 {
            continue;
        }
        let attached: Vec<usize> = indexes
            .iter()
            .copied()
            .filter(|&i| discovery.volumes[i].attachment.is_some())
            .collect();
        let keep = match attached.as_slice() {
            [one] => Some(*one),
            _ => None,
        };
        for &index in indexes {
            if Some(index) == keep || refused.contains_key(&index) {
                continue;
            }
            let others: Vec<String> = indexes
                .iter()
                .filter(|&&i| i != index)
                .map(|&i| {
                    let other = &discovery.volumes[i];
                    let whose = other
                        .attachment
                        .as_ref()
                        .map(|a| format!(", attached to `{}`", a.instance_id))
                        .unwrap_or_default();
                    format!(
                        "`{}` in zone `{}`{whose}",
                        other.id,
                        other.zone.escape_debug()
                    )
                })
                .collect();
            let why = if keep.is_some() {
                "the attached one is taken as the member's"
            } else {
                "none can be told to be the member's"
            };
            let etcd_key = format!("{ETCD_TAG_PREFIX}{cluster}");
            refused.insert(
                index,
                format!(
                    "it holds etcd `{cluster}` member `{member}` as {} does ({why}); one member \
                     has one volume: delete the copy or remove its {}",
                    others.join(", "),
                    words.name(&etcd_key)
                ),
            );
        }
    }
    for (index, reason) in refused.into_iter().rev() {
        let volume = discovery.volumes.remove(index);
        discovery.skipped.push(SkippedVolume {
            id: volume.id,
            zone: volume.zone,
            reason,
        });
    }
}

fn classify_one(
    cluster: &str,
    zone: Option<&str>,
    volume: &CloudVolume,
    provider: ProviderFacts<'_>,
) -> Result<Vec<EtcdMembership>, String> {
    let words = provider.words;
    // A root device is never touched, whatever its tags say: checked before them.
    if let Some(root) = volume
        .attachments
        .iter()
        .find(|a| a.root || provider.devices.is_root_device(&a.device))
    {
        return Err(format!(
            "it is attached as root device `{}` of `{}`; protokube never touches a root device, \
             whatever its {}s say (if it is not meant to hold etcd, remove its {})",
            root.device,
            root.instance_id,
            words.noun(),
            words.name(&format!("{ETCD_TAG_PREFIX}<cluster>"))
        ));
    }
    if volume.tags.get(CLUSTER_TAG).map(String::as_str) != Some(cluster) {
        return Err(format!(
            "its {} is not `{cluster}`",
            words.name(CLUSTER_TAG)
        ));
    }
    if volume.regional {
        return Err(format!(
            "it is a volume of region `{}`, replicated across its zones: kOps makes each etcd \
             volume in one zone, and protokube claims none that is not",
            volume.zone.escape_debug()
        ));
    }
    if !volume.tags.contains_key(MASTER_ROLE_TAG) {
        return Err(format!("it has no {}", words.name(MASTER_ROLE_TAG)));
    }
    if let Some(zone) = zone.filter(|z| *z != volume.zone) {
        return Err(format!(
            "it is in zone `{}`, not `{zone}`",
            volume.zone.escape_debug()
        ));
    }
    if volume.attachments.len() > 1 {
        return Err(format!(
            "it is attached to {} instances at once (multi-attach)",
            volume.attachments.len()
        ));
    }
    let mut etcd = Vec::new();
    for (key, value) in &volume.tags {
        let Some(cluster_key) = key.strip_prefix(ETCD_TAG_PREFIX) else {
            continue;
        };
        let membership = parse_etcd_tag(cluster_key, value)
            .map_err(|err| format!("malformed {}: {err}", words.pair(key, value)))?;
        etcd.push(membership);
    }
    if etcd.is_empty() {
        return Err(format!(
            "it has no {}",
            words.name(&format!("{ETCD_TAG_PREFIX}<cluster>"))
        ));
    }
    for membership in &etcd {
        // The member's DNS name and pod name join the key and the member: each must still be
        // one DNS label.
        for joined in [
            EtcdKey(&membership.cluster).member_name(&membership.member),
            EtcdKey(&membership.cluster).pod_name(),
        ] {
            if joined.len() > 63 {
                return Err(format!(
                    "{} makes the name `{joined}` of {} characters; a DNS label has 63 at most",
                    words.name(&format!("{ETCD_TAG_PREFIX}{}", membership.cluster)),
                    joined.len()
                ));
            }
        }
    }
    etcd.sort_by(|a, b| a.cluster.cmp(&b.cluster));
    Ok(etcd)
}

/// The members of each etcd cluster: kOps ≥ 1.36 labels each etcd volume of one cloud with
/// itself only (`a/a`, kops#17630) and rewrites the labels of existing ones, so no one label
/// says an etcd cluster's members. They are the spec's `etcdMembers` for a key the spec names
/// members of (the spec is kOps' truth), else every member some volume of the key names — its
/// own and those its label lists — among `volumes` (every zone's, where the run asked for the
/// region). Pure.
pub(crate) fn cluster_members(
    spec: &std::collections::BTreeMap<String, Vec<String>>,
    volumes: &[EtcdVolume],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut found: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for membership in volumes.iter().flat_map(|v| &v.etcd) {
        let members = found.entry(membership.cluster.clone()).or_default();
        members.insert(membership.member.clone());
        members.extend(membership.members.iter().cloned());
    }
    let mut out: std::collections::BTreeMap<String, Vec<String>> = found
        .into_iter()
        .map(|(key, members)| (key, members.into_iter().collect()))
        .collect();
    for (key, named) in spec.iter().filter(|(_, named)| !named.is_empty()) {
        out.insert(key.clone(), named.clone());
    }
    out
}

/// Completes the member lists of `memberships` with the cluster's `members`
/// ([`cluster_members`]) where a list says fewer or others; a list holding the same members
/// keeps its order, and one whose own member the cluster's list lacks (a spec that names the
/// members otherwise than the labels do) is kept as the label says it. Pure.
pub(crate) fn complete_members(
    memberships: &mut [EtcdMembership],
    members: &std::collections::BTreeMap<String, Vec<String>>,
) {
    for membership in memberships {
        let Some(complete) = members
            .get(&membership.cluster)
            .filter(|list| list.contains(&membership.member))
        else {
            continue;
        };
        let set = |list: &[String]| list.iter().cloned().collect::<BTreeSet<_>>();
        if set(&membership.members) != set(complete) {
            membership.members = complete.clone();
        }
    }
}

/// Claim rank of a set of memberships: `main` first, then `events`, then the others.
fn claim_rank(etcd: &[EtcdMembership]) -> u8 {
    etcd.iter()
        .map(|m| EtcdKey(&m.cluster).claim_rank())
        .min()
        .unwrap_or(3)
}

/// Orders claim candidates as kOps does: volumes holding `main` before `events` before others;
/// the sort is stable, so equal volumes keep their order.
pub(crate) fn sort_for_claiming(volumes: &mut [EtcdVolume]) {
    volumes.sort_by_key(|v| claim_rank(&v.etcd));
}

/// How long an attachment may stay `attaching` before it is given up (as clouds' CSI drivers
/// do): then it is detached, and the run ends "not ready".
pub(crate) const STUCK_ATTACHING: Duration = Duration::from_secs(90);

/// What `mount` does with the discovered volumes on this instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClaimPlan {
    /// Volumes attached (or attaching) here already: kept, one per etcd cluster key.
    pub(crate) kept: Vec<EtcdVolume>,
    /// Volumes attached here that hold a cluster key a kept volume holds too, and are not
    /// mounted: detached, so the node that needs one can claim it (kops#5185).
    pub(crate) extra: Vec<EtcdVolume>,
    /// Kept volumes holding a cluster key another kept volume holds too: mounted, so not
    /// detached under whoever uses them; warned about.
    pub(crate) doubled: Vec<EtcdVolume>,
    /// Kept volumes whose attachment has been `attaching` longer than [`STUCK_ATTACHING`]:
    /// detached, the run ends "not ready".
    pub(crate) stuck: Vec<EtcdVolume>,
    /// Volumes to try to attach, in claim order. A candidate is attached only if none of its
    /// cluster keys is held by the time its turn comes (see [`ClaimPlan::still_wanted`]).
    pub(crate) candidates: Vec<EtcdVolume>,
    /// Cluster keys held through the kept volumes.
    pub(crate) held_keys: Vec<String>,
}

impl ClaimPlan {
    /// Whether `volume` should still be claimed when `held_keys` are held: at most one volume
    /// per etcd cluster key per node (kops#5185).
    pub(crate) fn still_wanted(volume: &EtcdVolume, held_keys: &[String]) -> bool {
        !volume.etcd.iter().any(|m| held_keys.contains(&m.cluster))
    }
}

/// Whether an attachment has been `attaching` for longer than [`STUCK_ATTACHING`] at `now`
/// (the node's clock): measured from its attach time, which the cloud's adapter has moved onto the
/// node's clock with the answer's own date, or for as long as this run has waited on it
/// (`waited`, from its monotonic clock), whichever is longer.
pub(crate) fn attachment_stuck(
    attachment: &VolumeAttachment,
    waited: Duration,
    now: SystemTime,
) -> bool {
    let since_begun = attachment
        .attach_time
        .map(|t| now.duration_since(t).unwrap_or_default())
        .unwrap_or_default();
    attachment.state == AttachmentState::Attaching && since_begun.max(waited) > STUCK_ATTACHING
}

/// Splits discovered volumes into those this instance keeps, those it detaches (a second volume
/// of one etcd cluster key; an attachment stuck in `attaching`) and those it may claim.
/// `mounted` names the volumes mounted here now; `now` is the time the run judges by.
///
/// A volume attached to another instance is never a candidate (the emulator would silently move
/// an attachment; AWS answers `VolumeInUse`). Volumes that are not `available` are not
/// candidates either.
pub(crate) fn plan_claims(
    volumes: &[EtcdVolume],
    instance_id: &str,
    mounted: &BTreeSet<String>,
    now: SystemTime,
) -> ClaimPlan {
    let mut plan = ClaimPlan::default();
    let mut here = Vec::new();
    for volume in volumes {
        match &volume.attachment {
            Some(a) if a.instance_id == instance_id => {
                if a.state.is_leaving() {
                    continue;
                }
                if attachment_stuck(a, Duration::ZERO, now) && !mounted.contains(&volume.id) {
                    // Its keys stay held this run: it is attached again by a later one.
                    for membership in &volume.etcd {
                        if !plan.held_keys.contains(&membership.cluster) {
                            plan.held_keys.push(membership.cluster.clone());
                        }
                    }
                    plan.stuck.push(volume.clone());
                } else {
                    here.push(volume.clone());
                }
            }
            Some(_) => {}
            None if volume.state == VolumeState::Available => plan.candidates.push(volume.clone()),
            None => {}
        }
    }
    // Keep, per key, a mounted volume first, then one fully attached, then the lowest id.
    here.sort_by_key(|v| {
        let attached = v
            .attachment
            .as_ref()
            .is_some_and(|a| a.state == AttachmentState::Attached);
        (!mounted.contains(&v.id), !attached, v.id.clone())
    });
    let stuck_keys = plan.held_keys.clone();
    for volume in here {
        let held_by_kept = volume
            .etcd
            .iter()
            .any(|m| plan.held_keys.contains(&m.cluster) && !stuck_keys.contains(&m.cluster));
        if held_by_kept {
            if !mounted.contains(&volume.id) {
                plan.extra.push(volume);
                continue;
            }
            plan.doubled.push(volume.clone());
        }
        for membership in &volume.etcd {
            if !plan.held_keys.contains(&membership.cluster) {
                plan.held_keys.push(membership.cluster.clone());
            }
        }
        plan.kept.push(volume);
    }
    sort_for_claiming(&mut plan.kept);
    sort_for_claiming(&mut plan.candidates);
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::aws::devices::EbsDevices;

    /// Classified with EBS' root device names and kOps' tags.
    fn classify(cluster: &str, zone: Option<&str>, volumes: Vec<CloudVolume>) -> Discovery {
        let provider = ProviderFacts {
            devices: &EbsDevices,
            words: &crate::cloud::tags::KopsTags,
        };
        super::classify(cluster, zone, volumes, provider)
    }

    fn membership(cluster: &str, member: &str, members: &[&str]) -> EtcdMembership {
        EtcdMembership::new(cluster, member, members)
    }

    fn cloud_volume(id: &str, tags: &[(&str, &str)]) -> CloudVolume {
        CloudVolume {
            id: id.into(),
            zone: "us-test-1a".into(),
            state: VolumeState::Available,
            attachments: vec![],
            made_from: None,
            regional: false,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    const CLUSTER: &str = "c.example.com";

    fn base_tags<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut tags = vec![(CLUSTER_TAG, CLUSTER), (MASTER_ROLE_TAG, "1")];
        tags.extend_from_slice(extra);
        tags
    }

    #[test]
    fn members_come_from_the_spec_else_from_every_volume_of_the_key() {
        let etcd = |key: &str, value: &str| (format!("{ETCD_TAG_PREFIX}{key}"), value.to_owned());
        let with = |id: &str, tag: (String, String)| {
            let mut volume = cloud_volume(id, &base_tags(&[]));
            volume.tags.insert(tag.0, tag.1);
            volume
        };
        // kOps 1.36's labels: each volume names itself only.
        let volumes: Vec<CloudVolume> = ["a", "b", "c"]
            .iter()
            .map(|m| with(&format!("vol-{m}"), etcd("main", &format!("{m}/{m}"))))
            .collect();
        let discovery = classify(CLUSTER, None, volumes);
        let members = cluster_members(&Default::default(), &discovery.volumes);
        assert_eq!(members["main"], ["a", "b", "c"]);
        let mut own = discovery.volumes[0].etcd.clone();
        complete_members(&mut own, &members);
        assert_eq!(own[0].members, ["a", "b", "c"]);
        // The spec's etcdMembers win (a member whose volume is gone is still a member).
        let spec = [(
            "main".to_owned(),
            vec![
                "a".to_owned(),
                "b".to_owned(),
                "c".to_owned(),
                "d".to_owned(),
            ],
        )]
        .into_iter()
        .collect();
        assert_eq!(
            cluster_members(&spec, &discovery.volumes)["main"],
            ["a", "b", "c", "d"]
        );
        // A full list in another order is kept as it is.
        let discovery = classify(CLUSTER, None, vec![with("vol-a", etcd("main", "a/c,b,a"))]);
        let mut own = discovery.volumes[0].etcd.clone();
        complete_members(
            &mut own,
            &cluster_members(&Default::default(), &discovery.volumes),
        );
        assert_eq!(own[0].members, ["c", "b", "a"]);
    }

    #[test]
    fn classify_keeps_well_tagged_volumes_and_explains_every_skip() {
        let mut root = cloud_volume("vol-root", &base_tags(&[("k8s.io/etcd/main", "a/a")]));
        root.attachments.push(VolumeAttachment {
            instance_id: "i-1".into(),
            device: "/dev/xvda".into(),
            state: AttachmentState::Attached,
            attach_time: None,
            root: false,
            read_only: false,
        });
        let mut elsewhere = cloud_volume("vol-zone", &base_tags(&[("k8s.io/etcd/main", "b/a,b")]));
        elsewhere.zone = "us-test-1b".into();
        let volumes = vec![
            cloud_volume(
                "vol-2",
                &base_tags(&[
                    ("k8s.io/etcd/main", "a/a,b,c"),
                    ("k8s.io/etcd/events", "a/a,b,c"),
                ]),
            ),
            cloud_volume("vol-1", &base_tags(&[("k8s.io/etcd/events", "b/a,b,c")])),
            cloud_volume("vol-bad", &base_tags(&[("k8s.io/etcd/main", "a/b/c")])),
            cloud_volume(
                "vol-half",
                &base_tags(&[("k8s.io/etcd/main", "a/a"), ("k8s.io/etcd/events", "z/a")]),
            ),
            cloud_volume("vol-none", &base_tags(&[("Name", "x")])),
            cloud_volume(
                "vol-other",
                &[
                    (CLUSTER_TAG, "other.example.com"),
                    (MASTER_ROLE_TAG, "1"),
                    ("k8s.io/etcd/main", "a/a"),
                ],
            ),
            root,
            elsewhere,
            cloud_volume(
                "vol-long",
                &base_tags(&[(
                    &format!("k8s.io/etcd/{}", "k".repeat(40)),
                    &format!("{0}/{0}", "m".repeat(30)),
                )]),
            ),
        ];
        let discovery = classify(CLUSTER, Some("us-test-1a"), volumes);
        let ids: Vec<_> = discovery.volumes.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["vol-1", "vol-2"]);
        assert_eq!(
            discovery.volumes[1].etcd,
            [
                membership("events", "a", &["a", "b", "c"]),
                membership("main", "a", &["a", "b", "c"])
            ]
        );
        let skipped: Vec<_> = discovery
            .skipped
            .iter()
            .map(|s| (s.id.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(skipped.len(), 7, "{skipped:#?}");
        let reason = |id: &str| skipped.iter().find(|s| s.0 == id).unwrap().1;
        assert!(reason("vol-bad").contains("malformed tag `k8s.io/etcd/main` = `a/b/c`"));
        assert!(reason("vol-half").contains("k8s.io/etcd/events"));
        assert!(reason("vol-none").contains("no `k8s.io/etcd/<cluster>` tag"));
        assert!(reason("vol-other").contains("KubernetesCluster"));
        assert!(reason("vol-root").contains("root device `/dev/xvda`"));
        assert!(reason("vol-zone").contains("us-test-1b"));
        assert!(
            reason("vol-long").contains("76 characters"),
            "{}",
            reason("vol-long")
        );
    }

    #[test]
    fn one_member_has_one_volume() {
        let attached = |mut volume: CloudVolume| {
            volume.state = VolumeState::InUse;
            volume.attachments.push(VolumeAttachment {
                instance_id: "i-1".into(),
                device: "/dev/xvdu".into(),
                state: AttachmentState::Attached,
                attach_time: None,
                root: false,
                read_only: false,
            });
            volume
        };
        let member_a = base_tags(&[("k8s.io/etcd/main", "a/a,b")]);
        // The member's volume is attached; a restored copy of it is not: the copy is refused.
        let discovery = classify(
            CLUSTER,
            None,
            vec![
                attached(cloud_volume("vol-original", &member_a)),
                cloud_volume("vol-copy", &member_a),
                cloud_volume("vol-b", &base_tags(&[("k8s.io/etcd/main", "b/a,b")])),
            ],
        );
        let ids: Vec<_> = discovery.volumes.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids, ["vol-b", "vol-original"]);
        assert_eq!(discovery.skipped.len(), 1);
        let reason = &discovery.skipped[0];
        assert_eq!(reason.id, "vol-copy");
        assert!(
            reason.reason.contains("member `a`") && reason.reason.contains("`vol-original`"),
            "{reason}"
        );
        // Neither attached (a cold start): neither can be told apart, both refused, each naming
        // the other; a volume also holding another member goes with it.
        let both = base_tags(&[
            ("k8s.io/etcd/main", "a/a,b"),
            ("k8s.io/etcd/events", "a/a,b"),
        ]);
        let discovery = classify(
            CLUSTER,
            None,
            vec![
                cloud_volume("vol-1", &both),
                cloud_volume("vol-2", &member_a),
            ],
        );
        assert!(discovery.volumes.is_empty(), "{discovery:#?}");
        let skipped: Vec<_> = discovery
            .skipped
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    s.reason.contains(if s.id == "vol-1" {
                        "`vol-2`"
                    } else {
                        "`vol-1`"
                    }),
                )
            })
            .collect();
        assert_eq!(skipped, [("vol-1", true), ("vol-2", true)]);
    }

    fn etcd_volume(id: &str, clusters: &[&str]) -> EtcdVolume {
        EtcdVolume {
            id: id.into(),
            zone: "z".into(),
            state: VolumeState::Available,
            attachment: None,
            cloud: Default::default(),
            etcd: clusters
                .iter()
                .map(|c| membership(c, "a", &["a"]))
                .collect(),
        }
    }

    fn ids(volumes: &[EtcdVolume]) -> Vec<&str> {
        volumes.iter().map(|v| v.id.as_str()).collect()
    }

    #[test]
    fn claim_order_follows_kops_cases() {
        // kOps: volumes 1,2,3 without a cluster keep their order; 2 gets `events` -> 2,1,3;
        // then 3 gets `main` -> 3,2,1.
        let mut volumes = vec![
            etcd_volume("1", &[]),
            etcd_volume("2", &[]),
            etcd_volume("3", &[]),
        ];
        sort_for_claiming(&mut volumes);
        assert_eq!(ids(&volumes), ["1", "2", "3"]);
        let mut volumes = vec![
            etcd_volume("1", &[]),
            etcd_volume("2", &["events"]),
            etcd_volume("3", &[]),
        ];
        sort_for_claiming(&mut volumes);
        assert_eq!(ids(&volumes), ["2", "1", "3"]);
        let mut volumes = vec![
            etcd_volume("1", &[]),
            etcd_volume("2", &["events"]),
            etcd_volume("3", &["main"]),
        ];
        sort_for_claiming(&mut volumes);
        assert_eq!(ids(&volumes), ["3", "2", "1"]);
    }

    #[test]
    fn plan_keeps_attached_here_and_never_takes_anothers() {
        let attached = |id: &str, clusters: &[&str], instance: &str| {
            let mut v = etcd_volume(id, clusters);
            v.state = VolumeState::InUse;
            v.attachment = Some(VolumeAttachment {
                instance_id: instance.into(),
                device: "/dev/xvdu".into(),
                state: AttachmentState::Attached,
                attach_time: None,
                root: false,
                read_only: false,
            });
            v
        };
        let volumes = vec![
            etcd_volume("events-free", &["events"]),
            attached("main-mine", &["main"], "i-me"),
            attached("main-other", &["main"], "i-other"),
            etcd_volume("main-free", &["main"]),
            etcd_volume("cilium-free", &["cilium"]),
        ];
        let plan = plan_claims(&volumes, "i-me", &BTreeSet::new(), SystemTime::now());
        assert_eq!(ids(&plan.kept), ["main-mine"]);
        assert_eq!(
            ids(&plan.candidates),
            ["main-free", "events-free", "cilium-free"]
        );
        assert_eq!(plan.held_keys, ["main"]);
        assert!(!ClaimPlan::still_wanted(
            &plan.candidates[0],
            &plan.held_keys
        ));
        assert!(ClaimPlan::still_wanted(
            &plan.candidates[1],
            &plan.held_keys
        ));
    }

    #[test]
    fn claim_order_puts_other_keys_after_events() {
        let mut volumes = vec![
            etcd_volume("cilium", &["cilium"]),
            etcd_volume("both", &["events", "main"]),
            etcd_volume("events", &["events"]),
        ];
        sort_for_claiming(&mut volumes);
        assert_eq!(ids(&volumes), ["both", "events", "cilium"]);
    }

    fn attached_here(
        id: &str,
        key: &str,
        state: AttachmentState,
        since: Option<Duration>,
    ) -> EtcdVolume {
        let mut v = etcd_volume(id, &[key]);
        v.state = VolumeState::InUse;
        v.attachment = Some(VolumeAttachment {
            instance_id: "i-me".into(),
            device: "/dev/xvdu".into(),
            state,
            attach_time: since.map(|d| SystemTime::UNIX_EPOCH + Duration::from_secs(10_000) - d),
            root: false,
            read_only: false,
        });
        v
    }

    #[test]
    fn a_second_volume_of_one_key_is_detached_unless_mounted() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(10_000);
        let volumes = [
            attached_here("vol-a", "main", AttachmentState::Attached, None),
            attached_here("vol-b", "main", AttachmentState::Attached, None),
            attached_here("vol-c", "events", AttachmentState::Attached, None),
        ];
        // Neither mounted: the lowest id is kept.
        let plan = plan_claims(&volumes, "i-me", &BTreeSet::new(), now);
        assert_eq!(ids(&plan.kept), ["vol-a", "vol-c"]);
        assert_eq!(ids(&plan.extra), ["vol-b"]);
        // The mounted one is kept, whatever its id.
        let mounted = BTreeSet::from(["vol-b".to_owned()]);
        let plan = plan_claims(&volumes, "i-me", &mounted, now);
        assert_eq!(ids(&plan.kept), ["vol-b", "vol-c"]);
        assert_eq!(ids(&plan.extra), ["vol-a"]);
        // Both mounted: both kept, the second one named.
        let mounted = BTreeSet::from(["vol-a".to_owned(), "vol-b".to_owned()]);
        let plan = plan_claims(&volumes, "i-me", &mounted, now);
        assert_eq!(
            (ids(&plan.kept), ids(&plan.extra), ids(&plan.doubled)),
            (vec!["vol-a", "vol-b", "vol-c"], vec![], vec!["vol-b"])
        );
        // A fully attached one before one still attaching.
        let volumes = [
            attached_here(
                "vol-a",
                "main",
                AttachmentState::Attaching,
                Some(Duration::from_secs(5)),
            ),
            attached_here("vol-b", "main", AttachmentState::Attached, None),
        ];
        let plan = plan_claims(&volumes, "i-me", &BTreeSet::new(), now);
        assert_eq!(
            (ids(&plan.kept), ids(&plan.extra)),
            (vec!["vol-b"], vec!["vol-a"])
        );
    }

    #[test]
    fn an_attachment_stuck_attaching_is_given_up_after_90_seconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(10_000);
        let volumes = [
            attached_here(
                "vol-a",
                "main",
                AttachmentState::Attaching,
                Some(Duration::from_secs(91)),
            ),
            attached_here(
                "vol-b",
                "events",
                AttachmentState::Attaching,
                Some(Duration::from_secs(30)),
            ),
        ];
        let plan = plan_claims(&volumes, "i-me", &BTreeSet::new(), now);
        assert_eq!(ids(&plan.stuck), ["vol-a"]);
        assert_eq!(ids(&plan.kept), ["vol-b"]);
        // Measured by this run's own wait when the cloud gives no time.
        let fresh = attached_here("vol-c", "main", AttachmentState::Attaching, None);
        let attachment = fresh.attachment.as_ref().unwrap();
        assert!(!attachment_stuck(attachment, Duration::ZERO, now));
        assert!(attachment_stuck(attachment, Duration::from_secs(91), now));
        // Another instance's detaching attachment is not ours to keep or claim.
        let mut detaching = attached_here("vol-d", "main", AttachmentState::Detaching, None);
        detaching.attachment.as_mut().unwrap().instance_id = "i-old".into();
        let plan = plan_claims(&[detaching], "i-me", &BTreeSet::new(), now);
        assert!(plan.kept.is_empty() && plan.candidates.is_empty());
    }
}
