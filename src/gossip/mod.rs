//! kOps' gossip DNS (docs/gossip.md): a member of the cluster's gossip network on both of kOps'
//! protocols (`wire` is their bytes; `mesh_member`, `memberlist_member` the protocols; `store`
//! what they learn; `view` what it means for the hosts block). Its home for long-running work
//! (`protokube gossip`, and beside the old daemon's runs) is the `home` module.

pub(crate) mod member;
pub(crate) mod memberlist_member;
pub(crate) mod mesh_connection;
pub(crate) mod mesh_member;
pub(crate) mod settings;
pub(crate) mod store;
pub(crate) mod view;
pub(crate) mod wire;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use store::{Figures, Store};

/// The member running in this process, if one is: the one-shot runs beside it (the old
/// daemon's) leave the names its view holds to it and publish etcd's names through it.
static LIVE: Mutex<Option<(Arc<Store>, String)>> = Mutex::new(None);

fn live() -> Option<(Arc<Store>, String)> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Makes `store` (of the member named `node`) the process's live member, or none.
pub(crate) fn set_live(member: Option<(Arc<Store>, String)>) {
    *LIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = member;
}

/// The names a gossip member's view holds (live or deleted): the live member's in this
/// process, else those a member in another process recorded in `recorded` (the names file's
/// bytes; anything that is not a DNS name is ignored).
pub(crate) fn names_held(recorded: Option<&[u8]>) -> BTreeSet<String> {
    if let Some((store, _)) = live() {
        return store.view().names();
    }
    recorded
        .map(|bytes| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(str::trim)
                .filter(|name| crate::names::check_dns_name(name).is_ok())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The names file's text for `names` (one per line).
pub(crate) fn names_text(names: &BTreeSet<String>) -> String {
    names.iter().map(|n| format!("{n}\n")).collect()
}

/// The live member's figures, for the metrics file.
pub(crate) fn live_figures() -> Option<Figures> {
    live().map(|(store, _)| store.figures())
}

/// Publishes A/AAAA records of this node through the live member (`dns/local/<type>/<name>`),
/// and deletes `removed` names; nothing without a member.
pub(crate) fn publish_live(records: &[(String, Vec<std::net::IpAddr>)], removed: &[String]) {
    let Some((store, node)) = live() else {
        return;
    };
    let mut entries = Vec::new();
    for (name, addresses) in records {
        for (kind, v4) in [("A", true), ("AAAA", false)] {
            let values: Vec<String> = addresses
                .iter()
                .filter(|a| a.is_ipv4() == v4)
                .map(ToString::to_string)
                .collect();
            if !values.is_empty() {
                entries.push((
                    format!("dns/local/{kind}/{name}"),
                    Some(values.join(",").into_bytes()),
                ));
            }
        }
    }
    for name in removed {
        for kind in ["A", "AAAA"] {
            entries.push((format!("dns/local/{kind}/{name}"), None));
        }
    }
    store.publish(&entries, &node);
}

#[cfg(test)]
mod tests {
    use super::*;
    use view::Protocol;

    #[test]
    fn the_live_member_publishes_etcd_names_and_deletes_removed_ones() {
        let store = Arc::new(Store::new(vec![Protocol::Mesh, Protocol::Memberlist]));
        set_live(Some((store.clone(), "i-unit".to_owned())));
        let name = "etcd-z.internal.unit-test.k8s.local".to_owned();
        let addresses = vec!["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
        publish_live(&[(name.clone(), addresses)], &[]);
        publish_live(&[], std::slice::from_ref(&name));
        set_live(None);
        for protocol in [Protocol::Mesh, Protocol::Memberlist] {
            let state = store.state(protocol);
            let a = &state.records[&format!("dns/local/A/{name}")];
            assert!(a.tombstone && a.data.is_empty(), "{a:?}");
            assert!(state.records[&format!("dns/local/AAAA/{name}")].tombstone);
        }
        assert_eq!(
            names_held(Some(b"api.internal.c.k8s.local\nbad name\n")),
            BTreeSet::from(["api.internal.c.k8s.local".to_owned()])
        );
    }
}
