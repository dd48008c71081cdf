//! kOps' gossip DNS (docs/gossip.md): a member of the cluster's gossip network on both of kOps'
//! protocols (`wire` is their bytes; `mesh` and `memberlist` the protocols over the `transport`
//! seam; `store` what they learn; `view` what it means for the hosts block). The member is a
//! value: [`member::Member`] starts it, and its [`Handle`] is what the rest of the program holds
//! (the hosts writer, the runs beside it, the metrics). This module touches no file and knows no
//! run: `serve` is where the member lives.

pub(crate) mod member;
pub(crate) mod memberlist;
pub(crate) mod mesh;
pub(crate) mod settings;
pub(crate) mod store;
pub(crate) mod transport;
pub(crate) mod view;
pub(crate) mod wire;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use tokio::sync::watch;

use store::{Figures, Store};
use view::{View, ZONE_KEY, ZONE_VALUE};

/// A running member as its users see it: the view, this node's records, the figures.
#[derive(Clone)]
pub(crate) struct Handle {
    store: Arc<Store>,
    node: String,
}

impl Handle {
    pub(crate) fn new(store: Arc<Store>, node: &str) -> Self {
        Self {
            store,
            node: node.to_owned(),
        }
    }

    /// This member's name (the instance's).
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// The view now (the primary protocol's, as kOps reads it).
    pub(crate) fn view(&self) -> View {
        self.store.view()
    }

    /// The names the view holds (live or deleted): the cloud's computed names yield to them.
    pub(crate) fn names(&self) -> BTreeSet<String> {
        self.view().names()
    }

    /// Watches every change of what the member knows.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.store.changes()
    }

    /// Peers of the primary protocol.
    pub(crate) fn primary_peers(&self) -> usize {
        self.store.peers(self.store.primary())
    }

    /// Figures for the metrics file.
    pub(crate) fn figures(&self) -> Figures {
        self.store.figures()
    }

    /// Publishes `dns/local/NS/local = gossip` (kOps' `AddZone`), so that dns-controller can
    /// publish.
    pub(crate) fn publish_zone(&self) {
        self.store.publish(
            &[(ZONE_KEY.to_owned(), Some(ZONE_VALUE.to_vec()))],
            &self.node,
        );
    }

    /// Publishes A/AAAA records of this node (`dns/local/<type>/<name>`), and deletes
    /// `removed` names.
    pub(crate) fn publish(&self, records: &[(String, Vec<IpAddr>)], removed: &[String]) {
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
        self.store.publish(&entries, &self.node);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use view::Protocol;

    #[test]
    fn the_handle_publishes_etcd_names_and_deletes_removed_ones() {
        let store = Arc::new(Store::new(vec![Protocol::Mesh, Protocol::Memberlist]));
        let handle = Handle::new(store, "i-unit");
        let name = "etcd-z.internal.unit-test.k8s.local".to_owned();
        let addresses = vec!["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
        handle.publish(&[(name.clone(), addresses)], &[]);
        assert_eq!(handle.names(), BTreeSet::from([name.clone()]));
        handle.publish(&[], std::slice::from_ref(&name));
        for protocol in [Protocol::Mesh, Protocol::Memberlist] {
            let state = handle.store.state(protocol);
            let a = &state.records[&format!("dns/local/A/{name}")];
            assert!(a.tombstone && a.data.is_empty(), "{a:?}");
            assert!(state.records[&format!("dns/local/AAAA/{name}")].tombstone);
        }
        assert_eq!(
            handle.names(),
            BTreeSet::from([name]),
            "a deleted name is still held"
        );
        assert!(handle.view().records.is_empty());
    }
}
