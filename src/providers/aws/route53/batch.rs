//! Route53's limits on one change batch, and the split of a zone's changes into batches within
//! them. Pure.

use crate::plan::dns::zones::{RecordAction, RecordChange};

/// Route53's limits on one change batch: resource record values (an UPSERT counts twice) and
/// characters of those values (likewise).
pub(crate) const BATCH_MAX_RECORDS: usize = 1000;
pub(crate) const BATCH_MAX_CHARS: usize = 32_000;

/// Splits the changes of a zone into batches within Route53's limits, in order, keeping the
/// changes of one name (its address records and its TXT) in the same batch.
pub(crate) fn batches(changes: &[RecordChange]) -> Vec<Vec<RecordChange>> {
    let weight = |c: &RecordChange| {
        let factor = if c.action == RecordAction::Upsert {
            2
        } else {
            1
        };
        let chars: usize = c.record.values.iter().map(String::len).sum();
        (c.record.values.len().max(1) * factor, chars * factor)
    };
    // Group by name, in order of first appearance.
    let mut groups: Vec<Vec<RecordChange>> = Vec::new();
    for change in changes {
        match groups
            .iter_mut()
            .find(|g| g[0].record.name == change.record.name)
        {
            Some(group) => group.push(change.clone()),
            None => groups.push(vec![change.clone()]),
        }
    }
    let mut out: Vec<Vec<RecordChange>> = Vec::new();
    let (mut records, mut chars) = (0, 0);
    for group in groups {
        let (r, c) = group
            .iter()
            .map(weight)
            .fold((0, 0), |a, w| (a.0 + w.0, a.1 + w.1));
        let fits = records + r <= BATCH_MAX_RECORDS && chars + c <= BATCH_MAX_CHARS;
        match out.last_mut() {
            Some(batch) if fits => batch.extend(group),
            _ => {
                out.push(group);
                (records, chars) = (0, 0);
            }
        }
        records += r;
        chars += c;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::dns::records::{DesiredRecord, RecordRole};
    use crate::plan::dns::zone_plan::{ownership_value, plan_zone, ZonePolicy};

    const C: &str = "c.example.com";

    fn desired(name: &str, addresses: &[[u8; 4]]) -> DesiredRecord {
        DesiredRecord {
            name: name.into(),
            role: RecordRole::EtcdMember,
            addresses: addresses.iter().map(|a| (*a).into()).collect(),
        }
    }

    #[test]
    fn batches_stay_within_route53_limits_and_keep_names_whole() {
        let owner = ownership_value(C);
        let records: Vec<DesiredRecord> = (0..700)
            .map(|i| {
                desired(
                    &format!("etcd-k{i}-a.internal.c.example.com"),
                    &[[10, 0, (i / 250) as u8, (i % 250) as u8]],
                )
            })
            .collect();
        let refs: Vec<&DesiredRecord> = records.iter().collect();
        let (changes, _) = plan_zone(&refs, &[], C, &ZonePolicy::default());
        assert_eq!(changes.len(), 1400);
        let split = batches(&changes);
        assert!(split.len() > 1);
        assert_eq!(split.iter().map(Vec::len).sum::<usize>(), 1400);
        for batch in &split {
            let values: usize = batch.iter().map(|c| c.record.values.len()).sum();
            let chars: usize = batch
                .iter()
                .flat_map(|c| &c.record.values)
                .map(String::len)
                .sum();
            assert!(
                values <= BATCH_MAX_RECORDS && chars <= BATCH_MAX_CHARS,
                "{values} {chars}"
            );
            // Each name's A and TXT travel together.
            for change in batch {
                assert_eq!(
                    batch
                        .iter()
                        .filter(|c| c.record.name == change.record.name)
                        .count(),
                    2
                );
            }
        }
        assert!(
            owner.len() * 700 > BATCH_MAX_CHARS,
            "the TXT values alone exceed one batch"
        );
        // Upserts count twice.
        let upserts: Vec<RecordChange> = changes
            .iter()
            .filter(|c| c.record.record_type == "A")
            .map(|c| RecordChange::upsert(c.record.clone(), c.record.clone()))
            .collect();
        assert!(batches(&upserts)
            .iter()
            .all(|b| b.len() * 2 <= BATCH_MAX_RECORDS));
        assert!(batches(&[]).is_empty());
    }
}
